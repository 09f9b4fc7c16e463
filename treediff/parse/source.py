"""``open_source(path)``: any input (a log, a ``treediff parse`` Parquet pair, a dataset) as one Source.

The store layer defines :class:`~treediff.store.source.Source` and the kinds
that are already tables; a log needs the parser, so opening one lives here,
one layer up.  Every consumer (report, compare, diff, info) opens its inputs
through :func:`open_source` / :func:`open_sources` and never asks which kind
an input is.
"""
from __future__ import annotations

import atexit
import errno
import os
import weakref
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from treediff.model.errors import InputError
from treediff.store.dataset import finish_searches
from treediff.store.magic import is_parquet_file
from treediff.store.files import display_path
from treediff.store.source import BATCH_RECORDS, CombinedSource, DatasetSource, Source, parquet_source

__all__ = ["IndexedLogSource", "Source", "is_plain_log", "open_each", "open_one_search", "open_source", "open_sources",
           "parse_logs_into", "spilled_source"]


def _missing(path: str | os.PathLike) -> InputError:
    """Why ``path`` cannot be opened: a symlink loop or a dangling symlink says so, not just "no such file"."""
    shown = display_path(path)
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return InputError(f"{shown}: too many levels of symbolic links (a symlink loop?); give the real file")
        if os.path.islink(path):
            return InputError(f"{shown}: a symbolic link to {display_path(os.readlink(os.fspath(path)))}, which does not exist")
        if isinstance(exc, PermissionError):
            return InputError(f"{shown}: permission denied")
    return InputError(f"{shown}: no such file or directory")


def _open_one(path: str | os.PathLike, **parse_options) -> Source:
    p = Path(path)
    if str(path) != "-" and p.is_dir():
        return DatasetSource.open(p)
    if str(path) != "-" and not p.exists():
        raise _missing(path)
    if str(path) != "-" and is_parquet_file(p):
        return parquet_source(p)
    return _spilled_log(path, **parse_options)


def _spilled_log(path: str | os.PathLike, **parse_options) -> Source:
    """A log stream-parsed once into a scratch directory (Arrow IPC parts, :mod:`treediff.store.spill`), read
    back in batches as a Parquet pair is (:class:`~treediff.store.source.GroupedSource`: each part read once,
    a batch cut inside a part where no search spans; a parser's parts hold searches in increasing order).
    A wrapper that read each batch as a ``select`` of consecutive searches (``SearchChunks``, from when the
    spill was Parquet and could only be cut between row groups) read every boundary part twice and filtered
    each read: compare 20M + 20M spent 77.7 CPU-s with it, 70.4 without (docs/PERFORMANCE.md).

    One path for every size (issue 17): the streaming parse holds a chunk and the open search, not the
    log, and consumers read the spill in batches (report tables) or a position at a time (the aligner).
    The spill is IPC, not Parquet: only this process reads it, several times (compare: four passes),
    and IPC is written and read at memory speed (docs/PERFORMANCE.md).
    The directory is removed when the last source over it is garbage-collected, and at exit whatever
    happened (an error, Ctrl-C, SIGTERM: the CLI turns those into exceptions, so atexit runs).
    """
    # (the parse report runs in a forked child, :func:`parse_logs_into`: one parse, here or there)
    return _spilled(lambda directory: parse_logs_into([path], [directory], **parse_options)[0])


def _spilled(parse: Callable[[Path], list[str]]) -> Source:
    """``parse(directory)`` writes a spill (:mod:`treediff.store.spill`) into a new scratch directory and
    returns its warnings: the spill as a Source (with the warnings), the directory removed with the last
    source over it (or at once, if the parse fails)."""
    scratch = scratch_dir("log")
    try:
        warnings = parse(scratch)
    except BaseException:
        remove_scratch(scratch)
        raise
    return spilled_source(scratch, list(warnings))


def spilled_source(scratch: Path, warnings: list[str]) -> Source:
    """The spill a parse wrote into the scratch directory ``scratch`` (:func:`scratch_dir`) as a Source
    with the parse's ``warnings``; the directory is removed with the last source over it (at once, if it
    cannot be read)."""
    from treediff.store.spill import spill_source

    try:
        source = spill_source(scratch)
    except BaseException:
        remove_scratch(scratch)
        raise
    source.warnings = list(warnings)
    # The read closure is shared by every select() of the source: the files live as long as it does.
    weakref.finalize(source._read, remove_scratch, scratch)
    return source


def is_plain_log(path: str | os.PathLike) -> bool:
    """Whether opening ``path`` parses it (:func:`open_source`): a file, not stdin, a directory (a dataset)
    or a Parquet file."""
    p = Path(path)
    return str(path) != "-" and p.is_file() and not is_parquet_file(p)


def parse_logs_into(paths: Sequence[str | os.PathLike], directories: Sequence[Path],
                    progress: Callable[[int], None] | None = None, **parse_options) -> list[list[str]]:
    """Parse each log of ``paths`` into its scratch directory of ``directories`` (emptied first), as
    :func:`open_source` would (:func:`treediff.parse.pipeline.parse_to_spill`); each parse's warnings.
    Open the spills with :func:`spilled_source`.  (``report`` runs this in a forked child, so that polars
    never starts its threads in the process that forks the tables' fold: :func:`open_sources`' ``spilled``.)"""
    import shutil

    from treediff.parse.pipeline import parse_to_spill

    warnings = []
    for path, directory in zip(paths, directories):
        for entry in os.listdir(directory):  # (a parse stopped half-way, redone: start from nothing)
            target = os.path.join(directory, entry)
            shutil.rmtree(target) if os.path.isdir(target) else os.unlink(target)
        result = parse_to_spill([str(path)], directory, progress=progress, **parse_options)
        warnings.append(list(result.warnings))
    return warnings


def parse_whole_logs_into(paths: Sequence[str | os.PathLike], directories: Sequence[Path],
                          progress: Callable[[int], None] | None = None, **parse_options) -> list[list[str] | None]:
    """:func:`parse_logs_into` of the logs :func:`open_one_search` parses whole (a log of one search, one its
    byte scan cannot index); None for a log it reads search by search (an :class:`IndexedLogSource`: its
    index is made again by the caller, ~1 ms a MB).  ``progress`` counts every byte of such a log too, as
    its scan reads them.  (``diff`` of small logs runs this in a forked child.)"""
    found: list[list[str] | None] = []
    for path, directory in zip(paths, directories):
        options, index = _one_search_index(path, **parse_options)
        if index is not None:
            if progress is not None:
                progress(index.size)
            found.append(None)
            continue
        found.extend(parse_logs_into([path], [directory], progress=progress, **options))
    return found


def _one_search_index(path: str | os.PathLike, engine: str = "auto", positions=None, keep_complete: bool = False,
                      progress: Callable[[int], None] | None = None):
    """The parse options (an EPD file read once, as a PositionBook) and, where :func:`open_one_search` reads
    ``path`` search by search, its byte index; None where it parses the input whole (a Parquet pair, a
    dataset, stdin, a compressed log, a log of one search, ``TREEDIFF_DIFF_FULL_PARSE=1``, ...)."""
    from treediff.parse.index import full_parse_forced, index_log
    from treediff.parse.pipeline import _options

    options = {"engine": engine, "keep_complete": keep_complete, "positions": positions}
    p = Path(path)
    if full_parse_forced() or str(path) == "-" or not p.is_file() or is_parquet_file(p):
        return options, None
    parse_options = _options(engine, positions, False, False, keep_complete)  # (reads the EPD file once)
    options["positions"] = parse_options.positions
    return options, index_log(path, parse_options, progress)


def open_one_search(path: str | os.PathLike, engine: str = "auto", positions=None, keep_complete: bool = False,
                    progress: Callable[[int], None] | None = None) -> Source:
    """An input of which one search will be read (``treediff diff``, ``browse``), as a Source.

    A plain log of several searches is an :class:`IndexedLogSource`: its searches found by a byte scan
    (:mod:`treediff.parse.index`), nothing parsed until :meth:`IndexedLogSource.parsed`, which parses only
    the lines of the search selected.  Any other input (a Parquet pair, a dataset, a compressed log, a log
    of one search, ``TREEDIFF_DIFF_FULL_PARSE=1``, ...) is :func:`open_source`'s, parsed whole.
    ``engine``, ``positions`` (an EPD file) and ``keep_complete`` are the parse's options.
    """
    options, index = _one_search_index(path, engine, positions, keep_complete, progress)
    if index is None:
        return open_source(path, progress=progress, **options)
    if progress is not None:
        progress(index.size)  # (the scan read every byte)
    return IndexedLogSource(index, np.arange(len(index.spans)), options)


class IndexedLogSource(Source):
    """A plain log's searches as a byte scan found them (:func:`treediff.parse.index.index_log`); no line parsed.

    :meth:`select` narrows the searches (nothing read); :meth:`parsed` reads the selected ones: one search
    by parsing its lines alone (:func:`treediff.parse.index.parse_span`), numbered as in a full parse;
    several, or a search whose lines read alone could differ, by a full parse of the log (then selected).
    Reading records (:meth:`batches`) parses first.
    """

    def __init__(self, index, rows, options: dict, searches=None):
        self.index = index
        self._rows = np.asarray(rows, dtype=np.int64)
        self._options = options
        self.warnings: list[str] = []
        self._parsed: Source | None = None  # (parsed once)
        if searches is None:
            # The searches table's columns as a parse's pair reads back (Arrow, then finish_searches).
            import pyarrow as pa

            table = pa.table({name: pa.array([index.rows[name][r] for r in self._rows.tolist()],
                                             pa.int32() if name == "search" else pa.string())
                              for name in ("engine", "search", "position", "fen", "phase")})
            searches = finish_searches([table.to_pandas()])
        self._searches = searches.reset_index(drop=True)

    @property
    def searches(self):
        return self._searches

    def select(self, keep) -> Source:
        if len(keep) != len(self._searches):
            raise ValueError(f"select needs one flag per searches row ({len(keep)} for {len(self._searches)})")
        rows = np.flatnonzero(np.asarray(keep, dtype=bool))
        return IndexedLogSource(self.index, self._rows[rows], self._options, self._searches.iloc[rows])

    def with_searches(self, searches) -> Source:
        return self.parsed().with_searches(searches)

    def batches(self, columns=None, target: int = BATCH_RECORDS):
        yield from self.parsed().batches(columns, target)

    def arrow_batches(self, columns=None, target: int = BATCH_RECORDS):
        yield from self.parsed().arrow_batches(columns, target)

    def span_bytes(self) -> int:
        """Bytes :meth:`parsed` reads for one search (the log's size for several)."""
        if len(self._rows) != 1:
            return self.index.size
        span = self.index.spans[int(self._rows[0])]
        return (span.stop if span.stop >= 0 else self.index.size) - span.start

    def parsed(self, progress: Callable[[int], None] | None = None) -> Source:
        """The selected searches parsed (only their lines for one search; else the whole log, then selected);
        parsed once, the same Source on later calls."""
        if self._parsed is None:
            self._parsed = self._parse(progress)
        return self._parsed

    def _parse(self, progress: Callable[[int], None] | None) -> Source:
        from treediff.parse.index import SpanMismatch, parse_span

        if len(self._rows) == 1:
            span = self.index.spans[int(self._rows[0])]
            try:
                inner = _spilled(lambda out: parse_span(self.index, span, out, progress).warnings)
            except SpanMismatch:
                pass
            else:
                searches = inner.searches.copy()
                searches["search"] = np.full(len(searches), span.search, dtype=np.int32)
                return CombinedSource([(inner, np.array([0], dtype=np.int64), span.search)], finish_searches([searches]))
        whole = open_source(self.index.path, progress=progress, **self._options)
        numbers = whole.searches["search"].to_numpy(dtype=np.int64)
        return whole.select(np.isin(numbers, self._searches["search"].to_numpy(dtype=np.int64)))


#: Scratch directories not yet removed (removed at exit whatever happened).
_SCRATCH: set[str] = set()


def scratch_dir(what: str) -> Path:
    """A new private directory (mode 0o700) ``treediff-WHAT-XXXXXXXXXXXX`` under the temporary directory
    (``TMPDIR``) for spilled tables.

    Its name is registered before the directory is made (``tempfile.mkdtemp`` then a registration would leave
    a moment where a signal's exception, raised as ``mkdir`` returns, orphans it): whatever interrupts this,
    the exit removes what it made.
    """
    import secrets
    import tempfile

    root = tempfile.gettempdir()
    for _ in range(100):
        path = os.path.join(root, f"treediff-{what}-{secrets.token_hex(6)}")
        _SCRATCH.add(path)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            _SCRATCH.discard(path)
            continue
        except OSError:
            _SCRATCH.discard(path)
            raise
        except BaseException:
            # A signal's exception: the directory may exist, made by this call (a new random name).
            remove_scratch(path)
            raise
        return Path(path)
    raise FileExistsError(f"{root}: could not make a scratch directory treediff-{what}-*")


def remove_scratch(path: str | os.PathLike) -> None:
    """Remove a scratch directory and everything in it (no error if it is gone already)."""
    import shutil

    _SCRATCH.discard(str(path))
    shutil.rmtree(path, ignore_errors=True)


def remove_all_scratch() -> None:
    """Remove every scratch directory this process made and has not removed (at exit, whatever happened)."""
    for path in list(_SCRATCH):
        remove_scratch(path)


def forget_scratch() -> None:
    """In a forked child (:mod:`treediff.run.forked`): the scratch directories made so far are the parent's,
    which removes them; the child removes only those it makes itself."""
    _SCRATCH.clear()


atexit.register(remove_all_scratch)


def open_source(path: str | os.PathLike, **parse_options) -> Source:
    """One input as a :class:`Source`, ``search`` numbered 0, 1, ... in searches-table order of ids.

    ``parse_options`` go to :func:`treediff.parse.core.parse_to_parquet` when the input is a log
    (``engine``, ``positions``, ``strict``, ...); Parquet files and datasets ignore them.
    """
    return open_sources([path], **parse_options)


def open_sources(paths: Iterable[str | os.PathLike], spilled: dict[int, Source] | None = None,
                 **parse_options) -> Source:
    """Several inputs as one :class:`Source`; ``search`` renumbered to stay unique across them.  ``spilled``:
    the inputs (by their place in ``paths``) already parsed (:func:`parse_logs_into`, :func:`spilled_source`)."""
    spilled = spilled or {}
    return CombinedSource.of([spilled[i] if i in spilled else _open_one(p, **parse_options)
                              for i, p in enumerate(paths)])


#: Inputs parsed at the same time by :func:`open_each`: two use both cores of a small machine (a parse is
#: about 1.5 cores busy alone); more would only add a parse's memory (~0.25 GB) each.
PARALLEL_PARSES = 2


class _OpenAborted(Exception):
    """Raised in a parse :func:`open_each` runs once its consumer has gone (an error, Ctrl-C): it stops at its next chunk."""


def open_each(paths: Iterable[str | os.PathLike], progresses: Sequence[Callable[[int], None] | None] | None = None,
              opener: Callable[..., Source] | None = None, **parse_options) -> Iterator[Source]:
    """Each input as its own :func:`open_source` Source, yielded in input order, the logs parsed at the same time.

    ``progresses``: each input's ``progress`` callback (bytes read), in input order.  ``opener``: what opens
    one input (``opener(path, progress=..., **parse_options)``; default :func:`open_source`; ``diff`` gives
    :func:`open_one_search`).
    A parse spends most of its time in compiled code and polars, without the GIL, so two logs on two
    threads take less wall time than one after the other (``compare A B``: docs/PERFORMANCE.md).  Inputs
    are yielded in order as they are ready; the first one that fails raises its error when its turn
    comes, after every input before it was yielded (so their warnings can still be shown).  When the
    consumer stops early (that error, another one, Ctrl-C), the parses still running stop at their next
    chunk (their scratch files are removed) instead of running to the end.
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    paths = list(paths)
    ticks = list(progresses) if progresses is not None else [parse_options.pop("progress", None)] * len(paths)
    parse_options.pop("progress", None)
    open_one: Callable[..., Source] = opener or open_source
    if len(paths) < 2:
        yield from (open_one(p, progress=t, **parse_options) for p, t in zip(paths, ticks))
        return
    stop = threading.Event()

    def guarded(tick: Callable[[int], None] | None) -> Callable[[int], None]:
        def progress(n: int) -> None:  # called by the parse at each block it reads
            if stop.is_set():
                raise _OpenAborted()
            if tick is not None:
                tick(n)
        return progress

    with ThreadPoolExecutor(max_workers=min(len(paths), PARALLEL_PARSES), thread_name_prefix="treediff-open") as pool:
        futures = [pool.submit(open_one, p, progress=guarded(t), **parse_options) for p, t in zip(paths, ticks)]
        try:
            for future in futures:
                yield future.result()
        finally:
            stop.set()  # (after the last input is yielded every parse is over: then this changes nothing)
            for future in futures:
                future.cancel()  # (the ones not started yet)
