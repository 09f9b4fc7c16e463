"""Reading inputs and writing outputs.

* :func:`open_log` opens a plain, gzip or zstd log (or ``-`` for stdin) as bytes.
* :func:`atomic_output` (:class:`AtomicOutput`) is the one atomic writer:
  a temporary file beside the destination, fsynced and renamed over it, mode
  as the umask says.  :func:`write_bytes_atomic`, :func:`write_text_atomic`,
  :class:`AtomicParquetWriter` and :func:`write_table_atomic` are built on it.
  It refuses a destination that is not a regular file (a symlink, FIFO,
  device or directory: the rename would replace it), and turns a write that
  fails (disk full, read-only, permission) into :class:`OutputError` naming
  the file, after removing its temporary file.
* :func:`check_output` refuses, up front, an output that is one of the
  command's inputs (the same inode) or not a regular file.
* :func:`display_path` prints any file name, undecodable bytes included.
"""
from __future__ import annotations

import atexit
import errno
import gzip
import io
import os
import secrets
import stat
import sys
import zlib
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Iterable, Iterator, cast

import pyarrow as pa
import pyarrow.parquet as pq

from treediff.model.errors import InputError, TreediffError

from treediff.store.magic import GZIP_MAGIC as _GZIP_MAGIC
from treediff.store.magic import ZSTD_MAGIC as _ZSTD_MAGIC


class OutputError(TreediffError, OSError):
    """An output cannot be written (where, and what to do, in the message); nothing partial is left.

    Also an ``OSError``, so code that handles failed writes as such still does.
    """


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` as text that can always be printed: undecodable bytes of the name shown as ``\\xNN``."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")


def _utf8_name_or_error(path: str | os.PathLike[str], what: str) -> None:
    try:
        os.fspath(path).encode("utf-8") if isinstance(os.fspath(path), str) else os.fsdecode(path).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{display_path(path)}: the file name is not valid UTF-8, and treediff records {what} "
                         "names as text: rename the file (or read it from stdin: - < FILE)") from None


def _open_error(path: str | os.PathLike[str], exc: OSError) -> InputError:
    shown = display_path(path)
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{shown}: no such file")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{shown}: is a directory, not a log")
    if isinstance(exc, PermissionError):
        return InputError(f"{shown}: permission denied")
    if exc.errno == errno.ELOOP:
        return InputError(f"{shown}: too many levels of symbolic links (a symlink loop?); give the real file")
    return InputError(f"{shown}: cannot open: {exc.strerror or exc}")


class _CheckedStream:
    """A decompressing stream whose corrupt-data errors become ``OSError`` naming the compressed byte offset.

    Readers already turn ``OSError`` into a clear :class:`InputError`; zlib's and
    zstd's own exceptions are not ``OSError`` and surfaced as internal errors.
    """

    def __init__(self, stream: Any, raw: Any, kind: str, walker: Any = None) -> None:
        self._stream, self._raw, self._kind = stream, raw, kind
        # zstd: the frame walker that tells a cut-short file from a whole one (treediff.store.compressed).
        self._walker = walker
        self._pending_error: Exception | None = None

    def _fail(self, exc: Exception) -> OSError:
        try:
            offset = f" (within the first {self._raw.tell():,} bytes of the file)"
        except (OSError, ValueError, AttributeError):
            offset = ""
        return OSError(f"corrupt {self._kind} data{offset}: {exc}")

    def read(self, n: int = -1) -> bytes:
        if self._pending_error is not None:
            raise self._pending_error
        if self._kind == "gzip" and n > 0:
            return self._read_gzip(n)
        try:
            data = cast(bytes, self._stream.read(n))
            if not data and n != 0 and self._walker is not None:
                truncated = self._walker.truncation()
                if truncated is not None:
                    raise truncated
            return data
        except OSError:
            raise
        except (zlib.error, ValueError) as exc:
            raise self._fail(exc) from None
        except Exception as exc:  # noqa: BLE001 - zstandard.ZstdError and kin
            if type(exc).__name__ == "ZstdError":
                raise self._fail(exc) from None
            raise

    def _read_gzip(self, n: int) -> bytes:
        """Up to ``n`` bytes, in pieces, so the data decoded before a cut-short end is returned first; the
        truncation (:class:`~treediff.store.compressed.TruncatedInput`) is raised by the next read."""
        from treediff.store.compressed import gzip_truncation

        pieces: list[bytes] = []
        size = 0
        while size < n:
            try:
                piece = cast(bytes, self._stream.read1(min(n - size, 1 << 20)))
            except EOFError:
                try:
                    offset = self._raw.tell()
                except (OSError, ValueError, AttributeError):
                    offset = 0
                error = gzip_truncation(offset)
                if not pieces:
                    raise error from None
                self._pending_error = error
                break
            except (zlib.error, ValueError) as exc:
                failure = self._fail(exc)
                if not pieces:
                    raise failure from None
                self._pending_error = failure
                break
            if not piece:
                break
            pieces.append(piece)
            size += len(piece)
        return b"".join(pieces)

    def read1(self, n: int = -1) -> bytes:
        return self.read(n)

    def readline(self, limit: int = -1) -> bytes:
        try:
            return cast(bytes, self._stream.readline(limit))
        except (zlib.error, ValueError) as exc:
            raise self._fail(exc) from None

    def __iter__(self) -> Iterator[bytes]:
        while True:
            line = self.readline()
            if not line:
                return
            yield line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._raw.close()

    def __enter__(self) -> "_CheckedStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Seconds a read of a pipe, FIFO, socket or terminal waits for data before the interpreter runs again.
_WAKE_S = 0.2


class _WakingReader(io.RawIOBase):
    """The raw reads of a stream that can block indefinitely (a pipe, FIFO, socket or terminal), each waiting
    in ``select`` that returns every :data:`_WAKE_S` seconds.

    Why: SIGTERM, SIGHUP and Ctrl-C raise in the main thread (:mod:`treediff.run.signals`), but the kernel hands
    a process signal to any thread whose mask lets it through (the parse's sink threads, a native pool's).  The
    main thread, blocked reading a pipe its writer keeps open, then gets no EINTR and never runs the handler:
    ``treediff parse -`` hung (tests/reliability/test_signals_orphans.py sends the signal to such a thread).
    Each wake returns to the interpreter, which runs a pending handler.  The bytes read are the same."""

    def __init__(self, stream: io.BufferedReader) -> None:
        super().__init__()
        self._stream = stream  # (nothing read from it yet: its buffer is empty)
        self._fd = stream.fileno()

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def readinto(self, buffer: Any) -> int:
        import select

        while not select.select([self._fd], [], [], _WAKE_S)[0]:
            pass
        return os.readv(self._fd, [buffer])

    def close(self) -> None:
        if not self.closed:
            try:
                self._stream.close()
            finally:
                super().close()


def _can_block(stream: BinaryIO) -> bool:
    """Whether a read of ``stream`` (an OS file) can wait indefinitely: anything but a regular file."""
    try:
        return not stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return False


def open_log(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a log for binary reading; gzip and zstd are detected by their magic bytes.

    ``-`` is standard input.  Raises :class:`InputError` for a file that
    cannot be opened (missing, a directory, a symlink loop...) or whose name
    is not valid UTF-8; corrupt compressed data raises ``OSError`` naming the
    byte offset when read, and a file cut short raises
    :class:`~treediff.store.compressed.TruncatedInput` (an :class:`InputError`) at its end, after every byte
    that could be decoded.
    """
    if str(path) == "-":
        raw: BinaryIO = sys.stdin.buffer
    else:
        _utf8_name_or_error(path, "input")
        try:
            raw = open(path, "rb")  # noqa: SIM115 - returned to the caller
        except OSError as exc:
            raise _open_error(path, exc) from None
    # Only a replaced sys.stdin gets here: typeshed types its buffer as BinaryIO, which lacks the readinto()
    # BufferedReader asks of its raw stream; the binary streams found there at run time (BytesIO, ...) have it.
    if isinstance(raw, io.BufferedReader) and _can_block(raw):
        raw = io.BufferedReader(_WakingReader(raw))  # (a pipe or terminal: woken while it waits, see the class)
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(cast(io.RawIOBase, raw))
    try:
        head = buffered.peek(4)[:4]
    except OSError as exc:
        buffered.close()
        raise _open_error(path, exc) from None
    if head.startswith(_GZIP_MAGIC):
        # GzipFile is a BufferedIOBase, not nominally a typing.BinaryIO, though it has BinaryIO's methods.
        return cast(BinaryIO, _CheckedStream(gzip.GzipFile(fileobj=buffered), buffered, "gzip"))
    if head.startswith(_ZSTD_MAGIC):
        import zstandard

        from treediff.store.compressed import WalkedSource, ZstdFrameWalker

        walker = ZstdFrameWalker()
        source = cast(BinaryIO, WalkedSource(buffered, walker))  # reads like the stream it wraps
        reader = zstandard.ZstdDecompressor().stream_reader(source, read_across_frames=True)
        return cast(BinaryIO, _CheckedStream(reader, buffered, "zstd", walker))
    return buffered


def input_size(path: str | os.PathLike[str]) -> int | None:
    """Size in bytes of a file on disk (compressed size for .gz/.zst); None for stdin."""
    if str(path) == "-":
        return None
    try:
        return os.path.getsize(path)
    except OSError:
        return None


class _CommitOnSuccess:
    """A ``with`` block that commits its output when the block succeeds and aborts it otherwise;
    a failed write (disk full, read-only, ...) becomes an :class:`OutputError` naming ``path``."""

    path: Path

    def commit(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
            if exc is not None and is_write_failure(exc):
                raise write_error(self.path, exc) from None


class AtomicOutput(_CommitOnSuccess):
    """A temporary file beside ``path`` that replaces ``path`` only on :meth:`commit`.

    The one atomic writer: every output file of treediff goes through it.

    * The temporary file is created in the destination's directory (so the
      rename is atomic) with mode ``0o666`` filtered by the process umask, as
      a plain ``open()`` would make it (not ``tempfile.mkstemp``'s ``0o600``).
    * :meth:`commit` fsyncs the file, renames it over ``path`` and fsyncs the
      directory, so after a crash the destination holds the old or the new
      content, never a part.
    * :meth:`abort` (and any exception inside ``with``, Ctrl-C and the
      SIGTERM/SIGHUP the CLI turns into one included) removes the temporary
      file; the destination is left as it was.
    * A destination that exists and is not a regular file (symlink, FIFO,
      device, directory) is refused with :class:`OutputError`: the rename would
      replace it.  Directories it creates are fsynced into their parents.
    * A write that fails for want of space, permission or a writable file
      system raises :class:`OutputError` naming the destination.

    As a context manager it yields the temporary path; whatever writes it
    (``open``, pyarrow, matplotlib, shutil) writes to that path by name::

        with atomic_output(out) as tmp:
            shutil.copyfile(src, tmp)
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        refuse_special_output(self.path)
        try:
            _make_parents(self.path.parent)
            self.tmp = _create_temp_beside(self.path)
        except OSError as exc:
            # Making the directory or the temporary file: always a problem of where the output goes.
            raise write_error(self.path, exc) from None
        self._done = False

    def commit(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            _fsync_path(self.tmp)
            os.replace(self.tmp, self.path)
        except BaseException as exc:
            self.tmp.unlink(missing_ok=True)
            _LIVE_TEMPS.discard(str(self.tmp))
            if is_write_failure(exc):
                raise write_error(self.path, exc) from None
            raise
        _LIVE_TEMPS.discard(str(self.tmp))
        _fsync_dir(self.path.parent)

    def abort(self) -> None:
        self._done = True
        self.tmp.unlink(missing_ok=True)
        _LIVE_TEMPS.discard(str(self.tmp))

    def __enter__(self) -> Path:
        return self.tmp


def atomic_output(path: str | os.PathLike[str]) -> AtomicOutput:
    """``with atomic_output(path) as tmp:`` write ``tmp``; it becomes ``path`` if the block succeeds.

    See :class:`AtomicOutput`.
    """
    return AtomicOutput(path)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :class:`AtomicOutput`)."""
    with atomic_output(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically, UTF-8, newlines untranslated (see :class:`AtomicOutput`)."""
    with atomic_output(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


#: errnos that mean "this output cannot be written here", each with what to do.
_WRITE_ERRNOS = {
    errno.ENOSPC: "no space left on the device: free some space or write elsewhere",
    errno.EDQUOT: "disk quota exceeded: free some space or write elsewhere",
    errno.EROFS: "the file system is read-only: write elsewhere",
    errno.EACCES: "permission denied: write to a directory you may write to",
    errno.EPERM: "operation not permitted: write to a directory you may write to",
    errno.EFBIG: "file too large (a file-size limit): write less, or lift the limit",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.ELOOP: "too many levels of symbolic links in the path",
    errno.ENAMETOOLONG: "the file name is too long",
    errno.EIO: "input/output error on the device",
}


def is_write_failure(exc: BaseException | None) -> bool:
    """Whether ``exc`` says an output could not be written (space, permission, read-only...)."""
    if isinstance(exc, OutputError):
        return False
    if isinstance(exc, OSError) and exc.errno in _WRITE_ERRNOS:
        return True
    # pyarrow raises OSError without errno, its message carrying the C library's text.
    if isinstance(exc, OSError) and exc.errno is None:
        text = str(exc)
        return any(os.strerror(code) in text for code in _WRITE_ERRNOS)
    return False


def write_error(path: str | os.PathLike[str], exc: BaseException) -> OutputError:
    """A clear :class:`OutputError` for a failed write of ``path``."""
    code = exc.errno if isinstance(exc, OSError) else None
    if code is None and isinstance(exc, OSError):
        code = next((c for c in _WRITE_ERRNOS if os.strerror(c) in str(exc)), None)
    hint = _WRITE_ERRNOS.get(code) if code is not None else None
    reason = hint or (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
    return OutputError(f"cannot write {display_path(path)}: {reason} (nothing partial was left)")


def refuse_special_output(path: str | os.PathLike[str]) -> None:
    """Raise :class:`OutputError` when ``path`` exists and is not a regular file (the rename would replace it)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise write_error(path, exc) from None
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return
    kind = ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a directory" if stat.S_ISDIR(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    raise OutputError(f"{display_path(path)}: is {kind}, not a regular file; treediff writes its outputs by "
                      "renaming a new file over the name, which would replace it: give another file name")


def check_output(path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Refuse, before any work, an output that is not a regular file or is one of ``inputs`` (the same inode).

    ``-`` (stdin) and inputs that do not exist are ignored.  Raises :class:`InputError`.
    """
    try:
        refuse_special_output(path)
    except OutputError as exc:
        raise InputError(str(exc)) from None
    try:
        out = os.stat(path)
    except OSError:
        return
    for item in inputs:
        if str(item) == "-":
            continue
        try:
            st = os.stat(item)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            raise InputError(f"{display_path(path)}: is also an input ({display_path(item)}); writing it would "
                             "destroy that input: choose another output file")


def _make_parents(directory: Path) -> None:
    """``mkdir -p``, fsyncing each new directory into its parent so the new entries survive a crash."""
    missing: list[Path] = []
    here = directory
    while not here.is_dir():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            if not d.is_dir():
                raise
            continue
        _fsync_dir(d.parent)


#: Temporary files of outputs not yet committed or aborted: removed at exit whatever happened (a signal can
#: land between the file's creation and the ``try`` that would remove it).
_LIVE_TEMPS: set[str] = set()


def remove_live_temporaries() -> int:
    """Remove every temporary file of an output that was neither committed nor aborted; their number.

    Runs at interpreter exit (atexit); a process that leaves with ``os._exit``
    calls it first.
    """
    return sum(_discard_temporary(name) for name in list(_LIVE_TEMPS))


atexit.register(remove_live_temporaries)


def _discard_temporary(name: str) -> bool:
    """Forget the temporary file ``name`` and remove it; whether it was there to remove."""
    _LIVE_TEMPS.discard(name)
    try:
        os.unlink(name)
    except OSError:
        return False
    return True


def _create_temp_beside(path: Path) -> Path:
    """A new, empty file ``.NAME.XXXXXXXX.tmp`` in ``path``'s directory; the kernel applies the umask.

    A name that is not valid UTF-8 is written through a temporary name of its
    hexadecimal bytes (pyarrow and matplotlib take names as UTF-8 text).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    name = path.name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        name = os.fsencode(name).hex()
    for _ in range(100):
        tmp = path.with_name(f".{name}.{secrets.token_hex(4)}.tmp")
        _LIVE_TEMPS.add(str(tmp))  # before it exists: no moment where it exists unregistered
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            _LIVE_TEMPS.discard(str(tmp))
            continue
        except OSError:
            _LIVE_TEMPS.discard(str(tmp))
            raise
        except BaseException:
            # A signal's exception (the CLI's SIGTERM/SIGHUP, Ctrl-C) is raised when the call returns: the
            # file may exist, made by this call (the name is new and random), with nobody else to remove it.
            _discard_temporary(str(tmp))
            raise
        os.close(fd)
        return tmp
    raise FileExistsError(f"{path.parent}: could not create a temporary file for {path.name}")


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable; a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AtomicParquetWriter(_CommitOnSuccess):
    """A ``pyarrow.parquet.ParquetWriter`` whose file appears only when it is closed cleanly.

    Used as a context manager: on an exception (or Ctrl-C) the temporary file
    is removed and the destination is left as it was.  Built on :class:`AtomicOutput`.
    """

    def __init__(self, path: str | os.PathLike[str], schema: pa.Schema, **kwargs: Any) -> None:
        self._output = AtomicOutput(path)
        self.path = self._output.path
        kwargs.setdefault("compression", "zstd")
        try:
            self._writer = pq.ParquetWriter(str(self._output.tmp), schema, **kwargs)
        except BaseException as exc:
            self._output.abort()
            if is_write_failure(exc):
                raise write_error(self.path, exc) from None
            raise
        self.rows = 0

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        self._writer.write_table(table)
        self.rows += table.num_rows

    def add_metadata(self, metadata: dict[str, str]) -> None:
        """Key-value metadata known only once the rows are written (e.g. the dialects a parse found): it goes
        into the file's footer (``pyarrow.parquet.read_metadata(path).metadata``), beside the schema's own."""
        self._writer.add_key_value_metadata(metadata)

    def commit(self) -> None:
        try:
            self._writer.close()
        except BaseException as exc:
            self._output.abort()
            if is_write_failure(exc):
                raise write_error(self.path, exc) from None
            raise
        self._output.commit()

    def abort(self) -> None:
        try:
            self._writer.close()
        except Exception:  # noqa: BLE001 - closing a writer whose disk is full fails again: the file goes anyway
            pass
        finally:
            self._output.abort()

    def __enter__(self) -> "AtomicParquetWriter":
        return self


def write_table_atomic(table: pa.Table, path: str | os.PathLike[str]) -> None:
    """Write one Parquet file atomically."""
    with AtomicParquetWriter(path, table.schema) as writer:
        writer.write(table)
