"""No lost input, no half-written output (issue 15, deliverable 4).

Outputs that are inputs or not regular files are refused before any work
(exit 2, the input untouched); a full disk, a size limit or a read-only
directory is a clear error naming the file, with no temporary file left; a
second writer of a dataset is refused while the first runs; ``--resume``
removes the temporary files a killed writer left.
"""
from __future__ import annotations

import os
import resource
import shutil
import signal
import stat

import pytest

from reliability.hostile import FAKE, ROOT, START, can_unshare_mounts, epd, fake, in_private_mount, pids_in, wait_until

LOG = ROOT / "fixtures" / "hand" / "align_basic_a.log"
TRACES = sorted((ROOT / "fixtures" / "traces").glob("*.log"))


def _tmp_files(directory) -> list:
    return list(directory.rglob(".*.tmp"))


def _big_log(tmp_path):
    """About 1.3 MB of TREEDUMP (every fixture trace): its records file is about 100 kB."""
    path = tmp_path / "big.log"
    with open(path, "wb") as out:
        for trace in TRACES:
            out.write(trace.read_bytes())
    return path


# -- outputs that are inputs -----------------------------------------------------------------------------------

def test_parse_output_is_its_input(cli, tmp_path):
    log = tmp_path / "in.log"
    shutil.copyfile(LOG, log)
    before = log.read_bytes()
    c = cli("parse", log, "-o", log)
    assert c.wait(60) == 2 and "is also an input" in c.output, c.output
    assert log.read_bytes() == before


def test_parse_searches_sibling_is_its_input(cli, tmp_path):
    first = cli("parse", LOG, "-o", tmp_path / "x.parquet")
    assert first.wait(60) == 0, first.output
    sibling = tmp_path / "x.searches.parquet"
    before = sibling.read_bytes()
    c = cli("parse", sibling, "-o", tmp_path / "x.parquet")
    assert c.wait(60) == 2 and "is also an input" in c.output, c.output
    assert sibling.read_bytes() == before


def test_run_output_is_the_engine(cli, tmp_path):
    script = tmp_path / "engine.py"
    shutil.copyfile(FAKE, script)
    before = script.read_bytes()
    marker = tmp_path / "started.txt"
    c = cli("run", "--engine", f"uci={fake('--record', marker)}".replace(str(FAKE), str(script)), "--fen", START,
            "--depth", 1, "-o", script)
    assert c.wait(60) == 2 and "is also an input" in c.output, c.output
    assert script.read_bytes() == before and not marker.exists()
    same = cli("run", "--engine", f"uci={fake()}", "--fen", START, "--depth", 1, "-o", tmp_path / "a.log",
               "--transcript", tmp_path / "a.log")
    assert same.wait(60) == 2 and "same file as -o" in same.output, same.output


# -- outputs that are not regular files -------------------------------------------------------------------------

def _special(tmp_path, kind):
    path = tmp_path / f"special-{kind}"
    if kind == "symlink":
        target = tmp_path / "target.txt"
        target.write_text("keep me\n")
        path.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
    return path


def _still(path, kind) -> bool:
    mode = os.lstat(path).st_mode
    return {"symlink": stat.S_ISLNK, "fifo": stat.S_ISFIFO, "device": stat.S_ISCHR}[kind](mode)


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
@pytest.mark.parametrize("command", ["parse", "run", "report"])
def test_output_that_is_not_a_regular_file_is_refused(cli, tmp_path, kind, command):
    target = _special(tmp_path, kind)
    if command == "parse":
        c = cli("parse", LOG, "-o", target)
    elif command == "run":
        c = cli("run", "--engine", f"uci={fake()}", "--fen", START, "--depth", 1, "-o", target)
    else:
        c = cli("report", LOG, "--table", "nodes", "-o", target)
    assert c.wait(60) == 2 and "not a regular file" in c.output, c.output
    assert _still(target, kind)
    if kind == "symlink":
        assert (tmp_path / "target.txt").read_text() == "keep me\n"


# -- a second writer ------------------------------------------------------------------------------------------

def test_second_writer_of_a_dataset_is_refused(cli, tmp_path, work):
    pids = tmp_path / "pids"
    pids.mkdir()
    positions = epd(tmp_path / "p.epd", 6)
    ds = tmp_path / "ds"
    args = ["batch", positions, "--engine", f"ok@stockfish-treedump={fake()}",
            "--engine", f"hang@uci={fake('--mode', 'hang', '--pid-dir', pids)}", "--depth", 1, "-o", ds, "-j", 2,
            "--tmpdir", work]
    first = cli(*args, "--timeout", 60)
    assert wait_until(lambda: pids_in(pids), 30), first.output
    second = cli(*args, "--timeout", 60, "--resume")
    assert second.wait(60) == 2, second.output
    assert "another treediff batch is writing this dataset" in second.output and f"pid {first.pid}" in second.output
    first.signal(signal.SIGINT, group=True)
    assert first.wait(30) == 130, first.output
    resumed = cli(*args, "--timeout", 1, "--resume")
    assert resumed.wait(120) == 1, resumed.output  # the hang engine's searches time out
    for engine in ("ok", "hang"):
        done = {p.stem for p in (ds / "searches" / f"engine={engine}").glob("*.parquet")}
        failed = {p.stem for p in (ds / "failures" / f"engine={engine}").glob("*.parquet")}
        assert not done & failed, "a task with both a searches and a failures row"
        assert len(done | failed) == 6


# -- failed writes --------------------------------------------------------------------------------------------

def _file_size_limit(limit: int):
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # past it a write fails with EFBIG

    return preexec


def test_parse_past_a_file_size_limit(cli, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    c = cli("parse", _big_log(tmp_path), "-o", out / "x.parquet", preexec=_file_size_limit(50_000))
    assert c.wait(60) == 2, c.output
    assert "cannot write" in c.output and "x.parquet" in c.output and "file too large" in c.output
    assert not _tmp_files(out) and not list(out.iterdir())


def test_batch_past_a_file_size_limit(cli, tmp_path, work):
    ds = tmp_path / "ds"
    c = cli("batch", epd(tmp_path / "p.epd", 2), "--engine", f"ok@stockfish-treedump={fake()}", "--depth", 2,
            "-o", ds, "-j", 1, "--tmpdir", work, preexec=_file_size_limit(4000))
    assert c.wait(60) == 2, c.output
    # 4 kB is less than the manifest (batch.json, ~15 kB with every column's unit), written first: the
    # error names it, and nothing was started, so there is nothing to --resume (test_disk_full[batch]
    # runs out of space mid-batch, where the hint is due).
    assert "cannot write" in c.output and "file too large" in c.output and "batch.json" in c.output, c.output
    assert "--resume" not in c.output
    assert not _tmp_files(ds) and not list(work.iterdir())
    assert not [p for p in ds.rglob("*.parquet")]


needs_mounts = pytest.mark.skipif(not can_unshare_mounts(), reason="needs root and unshare (private mounts)")


@needs_mounts
@pytest.mark.parametrize("command", ["parse", "batch"])
def test_disk_full(cli, tmp_path, work, command):
    """A real ENOSPC: the output directory is a small tmpfs in a private mount namespace."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    listing = tmp_path / "left.txt"
    # batch: room for the manifest (batch.json, ~15 kB with the columns' units) and one Parquet file
    # (~15 kB each with the field metadata), not for the first position's rows: ENOSPC mid-batch.
    wrap = in_private_mount(f"mount -t tmpfs -o size={64 if command == 'parse' else 40}k tmpfs {mnt}",
                            f"find {mnt} -name '.*.tmp' > {listing}")
    if command == "parse":
        c = cli("parse", _big_log(tmp_path), "-o", mnt / "x.parquet", wrap=wrap)
    else:
        c = cli("batch", epd(tmp_path / "p.epd", 2), "--engine", f"ok@stockfish-treedump={fake()}", "--depth", 2,
                "-o", mnt / "ds", "-j", 1, "--tmpdir", work, wrap=wrap)
    assert c.wait(60) == 2, c.output
    assert "cannot write" in c.output and "no space left" in c.output, c.output
    if command == "batch":
        assert "--resume" in c.output
    assert listing.read_text() == "", f"temporary files left: {listing.read_text()}"


def _read_only(directory):
    """A wrapper making ``directory`` read-only for the command (a read-only bind mount as root, else chmod)."""
    if can_unshare_mounts():
        return in_private_mount(f"mount --bind {directory} {directory} && mount -o remount,ro,bind {directory}")
    if os.geteuid() == 0:
        pytest.skip("root ignores permissions and cannot make a private read-only mount here")
    directory.chmod(0o555)
    return ()


@pytest.mark.parametrize("command", ["parse", "batch", "report", "report --plot"])
def test_read_only_output_directory(cli, tmp_path, work, command):
    ro = tmp_path / "ro"
    ro.mkdir()
    wrap = _read_only(ro)
    try:
        if command == "parse":
            c = cli("parse", LOG, "-o", ro / "x.parquet", wrap=wrap)
        elif command == "batch":
            c = cli("batch", epd(tmp_path / "p.epd", 1), "--engine", f"uci={fake()}", "--depth", 1, "-o", ro / "ds",
                    "--tmpdir", work, wrap=wrap)
        elif command == "report":
            c = cli("report", LOG, "--table", "nodes", "-o", ro / "r.txt", wrap=wrap)
        else:
            c = cli("report", LOG, "--table", "nodes", "--plot", ro / "plots", wrap=wrap)
        assert c.wait(60) == 2, c.output
        assert "cannot write" in c.output and ("read-only" in c.output or "permission denied" in c.output), c.output
    finally:
        ro.chmod(0o755)
    assert not list(ro.iterdir())


def test_plot_into_a_missing_directory(cli, tmp_path):
    c = cli("report", LOG, "--table", "nodes", "--plot", tmp_path / "new" / "plots")
    assert c.wait(120) == 0, c.output
    written = sorted(p.name for p in (tmp_path / "new" / "plots").iterdir())
    # The report's charts (the analytics tables add theirs), all PNG, in the directory made for them.
    assert {"acts.png", "ebf_iter.png", "lmr_phase.png"} <= set(written)
    assert all(name.endswith(".png") for name in written)
    blocked = tmp_path / "file"
    blocked.write_text("x")
    c = cli("report", LOG, "--table", "nodes", "--plot", blocked / "plots")
    assert c.wait(120) == 2 and "cannot write" in c.output and "not a directory" in c.output, c.output


def test_resume_removes_temporary_files_left_by_a_killed_writer(cli, tmp_path, work):
    ds = tmp_path / "ds"
    args = ["batch", epd(tmp_path / "p.epd", 2), "--engine", f"ok@stockfish-treedump={fake()}", "--depth", 1,
            "-o", ds, "--tmpdir", work]
    assert cli(*args).wait(60) == 0
    left = [ds / "searches" / "engine=ok" / ".000001.parquet.0badf00d.tmp", ds / ".batch.json.0badf00d.tmp",
            ds / "logs" / "engine=ok" / ".000000.log.0badf00d.tmp"]
    for path in left:
        path.write_bytes(b"half a file")
    c = cli(*args, "--resume")
    assert c.wait(60) == 0, c.output
    assert not _tmp_files(ds)
