"""Start-up cost: `treediff parse` and the SAN worker import only what they use.

`treediff parse` is run on every search by the batch runner and on small logs
by hand, where imports dominate; pandas alone costs about 0.15 s.  The SAN
worker process starts in the middle of a parse and should need python-chess only.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "crafty_batch3.log"

_PARSE_THEN_LIST_MODULES = """
import sys
from treediff.cli import main
sys.argv = ["treediff", "parse", sys.argv[1], "-o", sys.argv[2]]
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
print(" ".join(sorted(m for m in sys.modules if "." not in m)))
"""


def test_parse_does_not_import_pandas_or_the_other_commands(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", _PARSE_THEN_LIST_MODULES, str(FIXTURE), str(tmp_path / "o.parquet")],
        capture_output=True, text=True, timeout=120, check=True,
    )
    modules = set(out.stdout.splitlines()[-1].split())  # (the last line; parse prints a summary first)
    assert (tmp_path / "o.parquet").exists()
    assert "pandas" not in modules
    loaded = subprocess.run(
        [sys.executable, "-c", _PARSE_THEN_LIST_MODULES.replace('if "." not in m', 'if m.startswith("treediff.cli.")'),
         str(FIXTURE), str(tmp_path / "p.parquet")],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.splitlines()[-1].split()
    assert loaded == ["treediff.cli.common", "treediff.cli.parse"]


def test_san_worker_module_needs_only_python_chess():
    code = ("import sys, treediff.parse.san_worker, treediff.parse.moves; "
            "print(' '.join(m for m in ('polars', 'pyarrow', 'pandas', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == []


# ------------------------------------------------------------------ issue 17 item 4: a fast start
_HEAVY = ("pandas", "polars", "pyarrow", "numpy", "matplotlib", "rich", "chess", "scipy", "textual")

#: Runs ``treediff ARGS`` (the script's arguments) in the interpreter, stdout discarded, exit status checked.
_RUN_QUIETLY = """
import contextlib, io, sys
from treediff.cli import main
sys.argv = ["treediff", *sys.argv[1:]]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc.code
"""

_RUN_THEN_LIST_HEAVY = _RUN_QUIETLY + """
heavy = {m.split(".")[0] for m in sys.modules} & set(%r)
print(" ".join(sorted(heavy)))
""" % (_HEAVY,)


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["report", "--help"], ["compare", "--help"],
                                  ["parse", "--help"], ["info", "--help"], ["run", "--help"], ["batch", "--help"],
                                  ["docs"], ["docs", "reports"]],
                         ids=lambda a: " ".join(a))
def test_help_and_docs_import_no_data_library(argv):
    """`treediff --help` lists the commands from their source; a command's --help imports only click."""
    out = subprocess.run([sys.executable, "-c", _RUN_THEN_LIST_HEAVY, *argv], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.split() == []


_PEAK_RSS_AFTER_HELP = """
import sys
from treediff.cli import main
try:
    main()
finally:  # the peak of this process's own memory (VmHWM starts afresh at exec, unlike ru_maxrss)
    print([line for line in open("/proc/self/status") if line.startswith("VmHWM")][0], file=sys.stderr)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_help_peak_rss_is_small():
    """`treediff --help` <= 80 MB peak RSS (it was 140 MB when it imported every command's module)."""
    out = subprocess.run([sys.executable, "-c", _PEAK_RSS_AFTER_HELP, "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    kib = int(out.stderr.split("VmHWM:")[1].split()[0])
    assert kib / 1024 <= 80, kib


def test_command_list_read_from_source_is_clicks_own():
    """The listing built without importing the modules is byte for byte what click prints after importing them."""
    import click

    from treediff.cli import main

    ctx = click.Context(main, info_name="treediff")
    for width in (60, 80, 120):
        ours, theirs = click.HelpFormatter(width=width), click.HelpFormatter(width=width)
        main.format_commands(ctx, ours)
        click.Group.format_commands(main, ctx, theirs)  # imports every command module
        assert ours.getvalue() == theirs.getvalue()
        assert "Commands:" in ours.getvalue()


def test_every_command_help_has_an_example():
    import click

    from treediff.cli import main

    ctx = click.Context(main, info_name="treediff")
    names = main.list_commands(ctx)
    assert {"parse", "info", "report", "compare", "diff", "docs"} <= set(names)
    for name in names:
        command = main.get_command(ctx, name)
        text = command.get_help(click.Context(command, info_name=name, parent=ctx))
        assert "Examples:" in text and f"treediff {name}" in text.split("Examples:", 1)[1], name


def test_version_names_the_tokenizer_in_use():
    from treediff.parse.tokenizer import ctok_available

    out = subprocess.run([sys.executable, "-c", "import sys; from treediff.cli import main; main()", "--version"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.startswith("treediff ")
    assert ("compiled _ctok" in out) == ctok_available()
    regex = subprocess.run([sys.executable, "-c", "import sys; from treediff.cli import main; main()", "--version"],
                           capture_output=True, text=True, timeout=60, check=True,
                           env={**os.environ, "TREEDIFF_TOKENIZER": "regex"}).stdout
    assert "polars regex" in regex


@pytest.mark.parametrize("env", [{}, {"TREEDIFF_SAN": "python"}, {"TREEDIFF_MOVE_CHECK": "python"}],
                         ids=["default", "TREEDIFF_SAN", "TREEDIFF_MOVE_CHECK"])
def test_version_names_the_san_resolver_the_parser_uses(env):
    """--version's SAN answer (read without polars or python-chess) is the parser's own choice, in a child with
    the same environment: compiled exactly when treediff.parse.paths.compiled_san_available() says so."""
    run_env = {k: v for k, v in os.environ.items() if k not in ("TREEDIFF_SAN", "TREEDIFF_MOVE_CHECK")}
    run_env.update(env)
    out = subprocess.run([sys.executable, "-c", "from treediff.cli import main; main()", "--version"],
                         capture_output=True, text=True, timeout=60, check=True, env=run_env).stdout
    parser = subprocess.run([sys.executable, "-c", "from treediff.parse.paths import compiled_san_available as c; "
                             "print(c())"], capture_output=True, text=True, timeout=60, check=True,
                            env=run_env).stdout.strip()
    said = out.split("SAN resolved by: ", 1)[1]
    assert said.startswith("compiled _cmoves") == (parser == "True"), (out, parser)
    if env:
        assert said.startswith(f"python-chess ({next(iter(env))}=python)"), out


@pytest.mark.parametrize("env", [{}, {"TREEDIFF_NO_CALIGN": "1"}], ids=["default", "TREEDIFF_NO_CALIGN"])
def test_version_names_the_aligner_compare_uses(env):
    """--version's aligner answer (read without numpy or pandas) is treediff.align.core.compiled_available()'s."""
    run_env = {k: v for k, v in os.environ.items() if k != "TREEDIFF_NO_CALIGN"}
    run_env.update(env)
    out = subprocess.run([sys.executable, "-c", "from treediff.cli import main; main()", "--version"],
                         capture_output=True, text=True, timeout=60, check=True, env=run_env).stdout
    used = subprocess.run([sys.executable, "-c", "from treediff.align.core import compiled_available as c; print(c())"],
                          capture_output=True, text=True, timeout=60, check=True, env=run_env).stdout.strip()
    said = out.split("aligner: ", 1)[1]
    assert said.startswith("compiled _calign") == (used == "True"), (out, used)
    if env:
        assert said.startswith("numpy (TREEDIFF_NO_CALIGN"), out


def test_docs_ship_with_the_package_and_print(tmp_path):
    from click.testing import CliRunner

    from treediff.cli import main

    listed = CliRunner().invoke(main, ["docs"])
    assert listed.exit_code == 0
    docs = Path(__file__).resolve().parents[1] / "docs"
    assert {line.split()[0] for line in listed.stdout.splitlines()} == {p.stem.lower() for p in docs.glob("*.md")}
    shown = CliRunner().invoke(main, ["docs", "REPORTS"])
    assert shown.exit_code == 0 and shown.stdout == (docs / "REPORTS.md").read_text()
    missing = CliRunner().invoke(main, ["docs", "nonesuch"])
    assert missing.exit_code == 2 and "no document 'nonesuch'" in missing.stderr


def test_info_on_a_log_or_parquet_file_imports_no_pandas(tmp_path):
    """`treediff info small.log` reads the searches table as Arrow; same rows as from its Parquet file."""
    from click.testing import CliRunner

    from treediff.cli import main

    log = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "typhoon_start.log"
    out = subprocess.run([sys.executable, "-c", _RUN_THEN_LIST_HEAVY, "info", str(log)], capture_output=True,
                         text=True, timeout=120, check=True)
    assert "pandas" not in out.stdout.split()
    lines = log.read_text().splitlines()
    from_log = CliRunner().invoke(main, ["info", str(log)])
    assert from_log.exit_code == 0, from_log.output
    header, row = from_log.stdout.splitlines()
    values = dict(zip(header.split("\t"), row.split("\t")))
    assert int(values["records"]) == sum(line.startswith(("MOVE ", "RESULT ")) for line in lines)
    assert int(values["RESULT nodes"]) == sum(line.startswith("RESULT ") for line in lines)
    assert values["END nodes"] == lines[-1].split("nodes=")[1].split()[0]
    assert CliRunner().invoke(main, ["parse", str(log), "-o", str(tmp_path / "t.parquet")]).exit_code == 0
    from_parquet = CliRunner().invoke(main, ["info", str(tmp_path / "t.parquet")])
    assert from_parquet.stdout == from_log.stdout
    out = subprocess.run([sys.executable, "-c", _RUN_THEN_LIST_HEAVY, "info", str(tmp_path / "t.parquet")],
                         capture_output=True, text=True, timeout=120, check=True)
    assert "pandas" not in out.stdout.split()  # pq.read_table would import it through pyarrow.dataset


def test_quick_source_reading_agrees_with_parsing_whole_modules(monkeypatch):
    import treediff.cli as cli
    from treediff.cli import common

    quick = common.command_summaries(cli._commands_pkg.__path__[0], cli._COMMAND_MODULES)
    monkeypatch.setattr(common, "_quick_summaries", lambda source: None)
    whole = common.command_summaries(cli._commands_pkg.__path__[0], cli._COMMAND_MODULES)
    assert quick == whole and len(quick) >= 8


_SMALL_A = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "stockfish_start.log"
_SMALL_B = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "crafty_start.log"


@pytest.mark.parametrize("argv", [["report", str(_SMALL_A)], ["report", str(_SMALL_A), "--format", "json"],
                                  ["report", str(_SMALL_A), "--table", "nodes,acts,scope", "--format", "csv"],
                                  ["compare", str(_SMALL_A), str(_SMALL_B)]],
                         ids=lambda a: " ".join(Path(x).name for x in a))
def test_report_and_compare_import_no_charting_or_terminal_ui(argv):
    """report and compare without --plot or a terminal import no matplotlib, rich, textual or scipy (charts,
    the browser and rich tables cost ~0.3 s of imports; issue 17 item 4); they do need the data libraries."""
    out = subprocess.run([sys.executable, "-c", _RUN_THEN_LIST_HEAVY, *argv], capture_output=True, text=True,
                         timeout=300, check=True)
    heavy = set(out.stdout.split())
    assert {"numpy", "pyarrow"} <= heavy  # the child did run the command
    assert not heavy & {"matplotlib", "rich", "textual", "scipy"}, heavy


@pytest.mark.parametrize("argv", [["report", str(_SMALL_A)], ["report", str(_SMALL_A), "--memory-limit", "64MB"]],
                         ids=["default limit", "--memory-limit"])
def test_report_imports_no_aligner(argv):
    """report reads --memory-limit (its batch size) from treediff.store.budget: the aligner's modules
    (treediff.align: its numpy/pyarrow.compute tree code and the visit trees, ~0.1-0.2 s) stay unimported."""
    code = _RUN_THEN_LIST_HEAVY.replace('print(" ".join(sorted(heavy)))',
                                        'print(" ".join(sorted(m for m in sys.modules if m.startswith("treediff.align") '
                                        'or m in ("treediff.report.tables", "treediff.store.budget"))))')
    out = set(subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300,
                             check=True).stdout.split())
    assert {"treediff.report.tables", "treediff.store.budget"} <= out  # the child did run report, with a budget
    assert not {m for m in out if m.startswith("treediff.align")}, out


@pytest.mark.parametrize("argv", [["report", "SMALL_A"], ["report", "SMALL_A", "--table", "all", "--by", "engine,iter,ply,nt"],
                                  ["report", "PARQUET", "--table", "all"], ["compare", "SMALL_A", "SMALL_B"],
                                  ["compare", "PARQUET", "PARQUET"]],
                         ids=["report log", "report log all", "report parquet", "compare logs", "compare parquet"])
def test_report_and_compare_leave_polars_to_the_parse(argv, tmp_path):
    """The tables, the aligner and compare's figures use no polars: a log is parsed in a forked child, which
    imports it (and the parser), while this process imports pandas and the tables; a Parquet file needs no
    parse.  So this process never imports polars (~0.09 s; issue 17 item 4: a small log's report 0.44 -> 0.36 s,
    docs/PERFORMANCE.md, fourteenth session)."""
    parquet = tmp_path / "a.parquet"
    if "PARQUET" in argv:
        subprocess.run([sys.executable, "-c", _RUN_QUIETLY, "parse", str(_SMALL_A), "-o", str(parquet)], check=True,
                       capture_output=True, timeout=120)
    argv = [{"SMALL_A": str(_SMALL_A), "SMALL_B": str(_SMALL_B), "PARQUET": str(parquet)}.get(a, a) for a in argv]
    env = dict(os.environ, TREEDIFF_FORK="1")
    out = subprocess.run([sys.executable, "-c", _RUN_THEN_LIST_HEAVY, *argv], capture_output=True, text=True,
                         timeout=300, check=True, env=env)
    heavy = set(out.stdout.split())
    assert {"pandas", "pyarrow", "numpy"} <= heavy, heavy  # (the command did run its tables here)
    assert "polars" not in heavy, heavy


# ------------------------------------------------------------------ issue 17 item 4: info and parse on UCI logs
_TYPHOON = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "typhoon_start.log"


@pytest.mark.parametrize("command", ["info", "parse"])
def test_info_and_parse_of_a_uci_log_import_no_pandas_and_no_python_chess(command, tmp_path):
    """A UCI log whose header names its phase reads no FEN and replays no SAN: python-chess (~30 ms) and pandas
    are not imported; the compiled checker validates the moves (without it, python-chess does so under --strict
    only).  Nor the dataset layer (treediff.store.dataset): `info` tells Parquet from a log by its magic bytes."""
    argv = [command, str(_TYPHOON)] + (["-o", str(tmp_path / "o.parquet")] if command == "parse" else [])
    code = _RUN_THEN_LIST_HEAVY.replace('print(" ".join(sorted(heavy)))',
                                        'print(" ".join(sorted(heavy)), "treediff.store.dataset" in sys.modules)')
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120,
                         check=True).stdout.split()
    assert {"polars", "pyarrow"} <= set(out)  # the child did run the command
    assert not {"pandas", "chess", "matplotlib", "rich"} & set(out), out
    assert out[-1] == "False"  # treediff.store.dataset not imported


@pytest.mark.parametrize("san", ["compiled", "python"])
def test_parse_of_a_san_log_loads_python_chess_only_where_it_resolves(san, tmp_path):
    """A SAN (crafty) log's paths and END best= moves are resolved by the compiled SanResolver: no python-chess
    (~30 ms) is imported; with TREEDIFF_SAN=python they are replayed on python-chess boards, which it loads."""
    crafty = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "crafty_start.log"
    env = {k: v for k, v in os.environ.items() if k not in ("TREEDIFF_SAN", "TREEDIFF_MOVE_CHECK")}
    if san == "python":
        env["TREEDIFF_SAN"] = "python"
    out = subprocess.run([sys.executable, "-c", _RUN_THEN_LIST_HEAVY, "parse", str(crafty), "-o",
                          str(tmp_path / "c.parquet")], capture_output=True, text=True, timeout=120, check=True,
                         env=env).stdout.split()
    assert "polars" in out and "pandas" not in out  # the child did parse
    from treediff.parse.paths import compiled_san_available

    expect_chess = san == "python" or not compiled_san_available()
    assert ("chess" in out) == expect_chess, out


def test_parser_modules_import_no_python_chess():
    """treediff.model.positions, treediff.parse.paths and the parser's state import python-chess on first use."""
    code = ("import sys, treediff.model.positions, treediff.model.notation, treediff.parse.paths, "
            "treediff.parse.state, treediff.parse.core; print('chess' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False"]


def test_info_tells_parquet_by_the_same_magic_as_the_dataset_layer(tmp_path):
    """info's Parquet test (store.magic: no treediff.store.dataset import) on Parquet and on what is not."""
    from treediff.store.magic import is_parquet_file

    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "t.parquet")
    (tmp_path / "short").write_bytes(b"PA")
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "dir").mkdir()
    cases = [tmp_path / "t.parquet", _TYPHOON, tmp_path / "short", tmp_path / "empty", tmp_path / "dir",
             tmp_path / "missing"]
    assert [is_parquet_file(p) for p in cases] == [True] + [False] * 5


@pytest.mark.parametrize("words", ["treediff ", "treediff report --ta", "treediff compare a.log b.log --to",
                                   "treediff diff a.log b.log --memory-limit 1GB --un", "treediff info --sc",
                                   "treediff parse x.log --eng"],
                         ids=lambda w: w.strip().replace(" ", "_"))
def test_shell_completion_imports_no_data_library(words):
    """A TAB (click's shell completion) parses the command line resiliently without running the command: no
    data library is imported (the --memory-limit callback loaded the aligner and pandas: ~1 s a TAB)."""
    env = {**os.environ, "_TREEDIFF_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split(" ")) - 1)}
    code = ("import sys\nfrom treediff.cli import main\ntry:\n    main(prog_name='treediff')\nexcept SystemExit:\n"
            "    pass\nprint('HEAVY', *sorted({m.split('.')[0] for m in sys.modules} & set(%r)))" % (_HEAVY,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         env=env).stdout
    completions, heavy = out.split("HEAVY")
    assert heavy.split() == []
    word = words.split(" ")[-1]
    assert completions.strip() and all(line.split(",", 1)[1].startswith(word) for line in completions.split())


def test_plain_rendering_tells_numbers_from_the_dtypes_as_from_each_column():
    """render/text.py's _numeric reads frame.dtypes (no Series built per column): the same answer as the per-column
    test it replaced, for every dtype the tables use and more, and with duplicate column names."""
    import pandas as pd

    from treediff.render.text import _numeric

    frame = pd.DataFrame({
        "int": [1, 2], "float": [1.5, None], "str": ["x", "y"], "bool": [True, False],
        "Int64": pd.array([1, None], dtype="Int64"), "cat": pd.Categorical(["u", "v"]),
        "arrow_str": pd.array(["p", None], dtype="string[pyarrow]"), "boolean": pd.array([True, None], dtype="boolean"),
        "time": pd.to_datetime(["2020-01-01", "2020-01-02"]), "Float64": pd.array([1.0, None], dtype="Float64"),
        "complex": [1 + 2j, 3j], "none": [None, None], "int8": pd.Series([1, 2], dtype="int8"),
        "uint64": pd.Series([1, 2], dtype="uint64"), "arrow_int": pd.array([1, None], dtype="int64[pyarrow]")})
    expected = [True, True, False, False, True, False, False, False, False, True, True, False, True, True, True]
    assert _numeric(frame) == expected
    duplicated = frame[["int", "str"]].set_axis(["a", "a"], axis=1)
    assert _numeric(duplicated) == [pd.api.types.is_numeric_dtype(duplicated["a"])] * 2


_BLAS_THREADS_WHEN_NUMPY_LOADS = """
import os, sys
from importlib.abc import MetaPathFinder
seen = []
class Watch(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and not seen:
            seen.append(os.environ.get("OPENBLAS_NUM_THREADS"))
        return None
sys.meta_path.insert(0, Watch())
""" + _RUN_QUIETLY + """
print(seen)
"""


@pytest.mark.parametrize("user_value", [None, "2"])
def test_numpy_loads_with_one_blas_thread_unless_the_user_chose(user_value):
    """numpy's OpenBLAS threads spin for nothing (treediff makes no BLAS calls): the command line asks for one
    before numpy is imported, and keeps a count the user set."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "TREEDIFF_SET_OPENBLAS_NUM_THREADS")}
    if user_value is not None:
        env["OPENBLAS_NUM_THREADS"] = user_value
    out = subprocess.run([sys.executable, "-c", _BLAS_THREADS_WHEN_NUMPY_LOADS, "info", str(FIXTURE)],
                         capture_output=True, text=True, timeout=120, check=True, env=env)
    assert out.stdout.strip() == repr([user_value or "1"])


# --- the commands' heavy imports run with the cyclic garbage collector paused (cli.common.importing) ---------


@pytest.fixture
def gc_state():
    import gc

    enabled = gc.isenabled()
    gc.unfreeze()  # (as a fresh process: nothing frozen yet)
    yield gc
    gc.unfreeze()  # (what a test froze goes back to the collector's generations)
    (gc.enable if enabled else gc.disable)()


def test_importing_pauses_the_collector_then_freezes_what_was_made(gc_state):
    from treediff.cli.common import importing

    gc = gc_state
    gc.enable()
    before = gc.get_freeze_count()
    with importing():
        assert not gc.isenabled()
        made = [[i] for i in range(5000)]  # container objects, as a module's functions and dicts are
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(made)
    frozen = gc.get_freeze_count()
    with importing():  # (a second block freezes nothing more: see importing's docstring)
        more = [[i] for i in range(5000)]
    # Not the 5,000 lists made in it.  (Not "unchanged": a frozen object another thread frees meanwhile leaves
    # the frozen generation, so the count may drop by a few: seen once in .ci/lowest, 342,183 -> 342,181.)
    assert gc.get_freeze_count() < frozen + len(more) and len(more) == 5000


def test_importing_nested_or_failing_leaves_the_collector_as_it_found_it(gc_state):
    from treediff.cli.common import importing

    gc = gc_state
    gc.enable()
    with importing():
        with importing():
            pass
        assert not gc.isenabled()  # (the outer block still imports)
    assert gc.isenabled()
    with pytest.raises(ImportError):
        with importing():
            import treediff_no_such_module  # noqa: F401
    assert gc.isenabled()
    gc.disable()  # a collector someone else paused stays paused
    with importing():
        pass
    assert not gc.isenabled()


_GC_AT_EXIT = """
import atexit, gc, sys
atexit.register(lambda: sys.stderr.write(f"GC {gc.isenabled()} {gc.get_freeze_count()}\\n"))
from treediff.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("command", ["report", "compare", "diff", "parse", "info"])
def test_the_commands_on_logs_import_with_the_collector_paused(command, tmp_path):
    traces = FIXTURE.parent
    args = {"report": ["report", traces / "typhoon_start.log"],
            "compare": ["compare", traces / "typhoon_start.log", traces / "crafty_start.log"],
            "diff": ["diff", traces / "typhoon_start.log", traces / "stockfish_start.log"],
            "parse": ["parse", traces / "typhoon_start.log", "-o", tmp_path / "o.parquet"],
            "info": ["info", traces / "typhoon_start.log"]}[command]
    done = subprocess.run([sys.executable, "-c", _GC_AT_EXIT, *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert done.returncode == 0, done.stderr
    enabled, frozen = [line.split()[1:] for line in done.stderr.splitlines() if line.startswith("GC ")][-1]
    assert enabled == "True"  # (collecting again after the imports)
    # The objects of polars' and pyarrow's modules (and pandas', but for parse and info), frozen by the block.
    assert int(frozen) > 50_000


def test_version_names_how_dictionary_columns_are_converted():
    """--version's answer (the compiled module's file read alone) is treediff.store.categorical's."""
    out = subprocess.run([sys.executable, "-c", "from treediff.cli import main; main()", "--version"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    used = subprocess.run([sys.executable, "-c", "from treediff.store.categorical import compiled_available as c; "
                           "print(c())"], capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    said = out.split("dictionary columns converted by: ", 1)[1]
    assert said.startswith("compiled _cstore") == (used == "True"), (out, used)
