/* One string hash for treediff's C extensions (included by treediff/align/_calign.c and
 * treediff/report/_ctries.c; each extension keeps its own static copy). */
#ifndef TREEDIFF_CHASH_H
#define TREEDIFF_CHASH_H

#include <stdint.h>
#include <string.h>

/* murmur3's 64-bit finalizer: every input bit reaches every output bit. */
static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* A hash of ``len`` bytes at ``p``: 8-byte words mixed in turn, the tail as one little-endian word. */
static inline uint64_t hash_bytes(const unsigned char *p, int64_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)len;
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = mix64(h ^ w);
    }
    if (i < len) {  /* (a byte loop: a variable-length memcpy is a libc call) */
        uint64_t w = 0;
        for (int64_t j = len - 1; j >= i; j--)
            w = (w << 8) | p[j];
        h = mix64(h ^ w ^ 0x5bd1e995ULL);
    }
    return h;
}

#endif
