/* The reading limit of a TREEDUMP parser: split every line of each file into its tag and key=value tokens.
 *
 * What any parser of the format must at least do, and nothing more: one pass over the bytes (mmap), each line
 * cut at spaces, each token cut at its first '='.  It keeps no table; it prints the lines, tokens and the sum of
 * key and value lengths (so the work is not optimized away).  benchmarks/bench_e2e.py and bench_parse.py build
 * it with the machine's C compiler (cc -O2) and print every parse figure as a ratio to it.
 *
 *     cc -O2 -o /tmp/min_tokenizer benchmarks/limits/min_tokenizer.c && /tmp/min_tokenizer a.log b.log
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    unsigned long long lines = 0, tokens = 0, key_bytes = 0, value_bytes = 0;
    for (int f = 1; f < argc; f++) {
        int fd = open(argv[f], O_RDONLY);
        if (fd < 0) { perror(argv[f]); return 2; }
        struct stat st;
        if (fstat(fd, &st) != 0) { perror(argv[f]); return 2; }
        if (st.st_size == 0) { close(fd); continue; }
        const char *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED) { perror(argv[f]); return 2; }
        madvise((void *)data, (size_t)st.st_size, MADV_SEQUENTIAL);
        const char *p = data, *end = data + st.st_size;
        while (p < end) {
            const char *eol = memchr(p, '\n', (size_t)(end - p));
            if (eol == NULL) eol = end;
            lines++;
            /* the tag, then the tokens */
            const char *q = p;
            while (q < eol && *q != ' ') q++;
            while (q < eol) {
                while (q < eol && *q == ' ') q++;
                const char *start = q, *eq = NULL;
                while (q < eol && *q != ' ') { if (eq == NULL && *q == '=') eq = q; q++; }
                if (q > start) {
                    tokens++;
                    if (eq != NULL) { key_bytes += (unsigned long long)(eq - start);
                                      value_bytes += (unsigned long long)(q - eq - 1); }
                }
            }
            p = eol + 1;
        }
        munmap((void *)data, (size_t)st.st_size);
        close(fd);
    }
    printf("%llu lines, %llu tokens, %llu key bytes, %llu value bytes\n", lines, tokens, key_bytes, value_bytes);
    return 0;
}
