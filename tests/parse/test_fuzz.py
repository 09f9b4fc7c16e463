"""Property: whatever a mutated real log holds, the parser returns or raises InputError, nothing else."""
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treediff.model.errors import InputError
from treediff.parse.pipeline import parse_logs

HAND = Path(__file__).resolve().parents[2] / "fixtures" / "hand"
SOURCES = sorted(p.read_bytes() for p in HAND.glob("minimal_*.log"))

mutation = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.integers(1, 40)),
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.binary(min_size=1, max_size=30)),
    st.tuples(st.just("truncate"), st.integers(0, 10_000), st.just(b"")),
    st.tuples(st.just("dupline"), st.integers(0, 10_000), st.just(b"")),
    st.tuples(st.just("token"), st.integers(0, 10_000), st.sampled_from(
        [b" act=", b" path=", b"=", b" ctx=ponder", b" d=-", b"\t", b"\r", b"TREEDUMP engine=crafty fen=8/8 w\n",
         b"ITER d=x\n", b"END nodes=\n", b"RESULT\n", b"MOVE path=Qz9 act=FULL\n", b" unit=0", b"\x00\xff"])),
)


def mutate(data: bytes, ops) -> bytes:
    for op, pos, arg in ops:
        pos = pos % (len(data) + 1)
        if op == "delete":
            data = data[:pos] + data[pos + arg:]
        elif op in ("insert", "token"):
            data = data[:pos] + arg + data[pos:]
        elif op == "truncate":
            data = data[:pos]
        elif op == "dupline":
            lines = data.split(b"\n")
            i = pos % len(lines)
            lines.insert(i, lines[i])
            data = b"\n".join(lines)
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.sampled_from(SOURCES), ops=st.lists(mutation, min_size=1, max_size=6),
       strict=st.booleans(), all_contexts=st.booleans())
def test_parser_never_raises_uncaught(tmp_path, source, ops, strict, all_contexts):
    log = tmp_path / "m.log"
    log.write_bytes(mutate(source, ops))
    try:
        result = parse_logs([log], strict=strict, all_contexts=all_contexts)
    except InputError:
        return
    # Whatever survived is internally consistent.
    searches = result.searches.to_pylist()
    assert sum(s["records"] for s in searches) == result.records.num_rows
    assert set(result.records.column("tag").to_pylist()) <= {"MOVE", "RESULT"}
