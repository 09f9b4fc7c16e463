"""``treediff browse``'s textual app, driven with textual's ``run_test`` pilot on fixtures/hand/browse_{a,b}.log.

The hand count is in tests/render/test_browse_model.py: the divergences by cost are e2e4/e7e5/g1f3 (+3),
d2d4 (-2), c2c4 (+1); the LMR decision of g1f3 is line 6 of browse_b.log, A's FULL one line 7 of browse_a.log.
"""
from __future__ import annotations

import asyncio

import pytest
from click.testing import CliRunner

from support.align_helpers import FIXTURES

pytest.importorskip("textual")

from treediff.cli import main  # noqa: E402
from treediff.cli.browse import build_model  # noqa: E402
from treediff.render.browse import BrowseApp  # noqa: E402

A = str(FIXTURES / "browse_a.log")
B = str(FIXTURES / "browse_b.log")


def _drive(steps, **options):
    """Run the app headless, apply ``steps(app, pilot)`` (a coroutine function), return what it returns."""
    model, title = build_model(A, B, notation=options.pop("notation", "uci"), **options)

    async def run():
        app = BrowseApp(model, title)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            return await steps(app, pilot)

    return asyncio.run(run())


def _path(app) -> str:
    return str(app.model.rows["path"].iloc[app.cursor_row])


def _details(app) -> str:
    return str(app.query_one("#details-text").render())


def test_opens_on_the_root_with_its_children_only():
    async def steps(app, pilot):
        tree = app.tree_view
        return (_path(app), [str(app.model.rows["path"].iloc[c.data]) for c in tree.root.children],
                sorted(app._loaded), _details(app))

    cursor, children, loaded, details = _drive(steps)
    assert cursor == ""
    assert children == ["e2e4", "d2d4", "c2c4"]
    assert loaded == [0]  # lazy: nothing below the root's children was built
    assert "browse_a.log:20: RESULT path=- ply=0 d=4" in details


def test_expand_a_row_adds_its_children():
    async def steps(app, pilot):
        await pilot.press("down")  # e2e4
        before = len(app.tree_view.cursor_node.children)
        await pilot.press("space")
        await pilot.pause()
        node = app.tree_view.cursor_node
        return _path(app), before, node.is_expanded, [str(app.model.rows["path"].iloc[c.data]) for c in node.children]

    path, before, expanded, children = _drive(steps)
    assert path == "e2e4"
    assert before == 0 and expanded
    assert children == ["e2e4/e7e5"]


def test_next_and_previous_divergence_by_cost():
    async def steps(app, pilot):
        seen = []
        for key in ("n", "n", "n", "n", "p", "p"):
            await pilot.press(key)
            await pilot.pause()
            seen.append(_path(app))
        return seen

    # The fourth n has nowhere to go (three divergences): the cursor stays on c2c4.
    assert _drive(steps) == ["e2e4/e7e5/g1f3", "d2d4", "c2c4", "c2c4", "d2d4", "e2e4/e7e5/g1f3"]


def test_next_divergence_shows_the_rows_log_lines():
    async def steps(app, pilot):
        await pilot.press("n")
        await pilot.pause()
        return _path(app), _details(app), app.tree_view.cursor_node.parent.is_expanded

    path, details, parent_open = _drive(steps)
    assert path == "e2e4/e7e5/g1f3" and parent_open
    assert "divergence #1 of 3" in details
    assert "browse_a.log:7: MOVE path=e2e4/e7e5/g1f3 ply=3 mn=1 d=2 nd=1 act=FULL" in details
    assert "browse_a.log:14: RESULT path=e2e4/e7e5/g1f3" in details
    assert "browse_b.log:6: MOVE path=e2e4/e7e5/g1f3 ply=3 mn=1 d=2 nd=0 act=LMR red=1" in details


@pytest.mark.parametrize("typed", ["e2e4/e7e5/g1f3/d7d6", "e4/e5/Nf3/d6"])
def test_jump_to_a_path(typed):
    async def steps(app, pilot):
        await pilot.press("g")
        await pilot.press(*typed)
        await pilot.press("enter")
        await pilot.pause()
        return _path(app), app.query_one("#jump").has_class("shown"), app.focused is app.tree_view

    path, box_open, tree_focused = _drive(steps)
    assert path == "e2e4/e7e5/g1f3/d7d6"
    assert not box_open and tree_focused


def test_notation_key_writes_every_built_label_again():
    async def steps(app, pilot):
        await pilot.press("n")  # builds e2e4's and e2e4/e7e5's children too
        await pilot.press("t")
        await pilot.pause()
        labels = {str(app.model.rows["path"].iloc[row]): str(node.label) for row, node in app.nodes.items()}
        return labels, _details(app), [n.message for n in app._notifications]

    labels, details, messages = _drive(steps)
    assert labels["e2e4"].startswith("  e4 ") and labels["d2d4"].startswith("| d4 ")
    assert labels["e2e4/e7e5/g1f3"].startswith("| Nf3 ")
    assert "A: e4/e5/Nf3, FULL" in details
    assert "notation: san" in messages


def test_jump_to_a_missing_path_keeps_the_cursor():
    async def steps(app, pilot):
        await pilot.press("n")
        await pilot.press("slash")
        await pilot.press(*"h2h4")
        await pilot.press("enter")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        await pilot.press("escape")
        return _path(app), messages

    path, messages = _drive(steps)
    assert path == "e2e4/e7e5/g1f3"
    assert any("h2h4: neither side has this path" in m for m in messages)


def test_under_starts_at_the_path():
    async def steps(app, pilot):
        start = _path(app)
        await pilot.press("n")
        await pilot.pause()
        return start, _path(app), _details(app)

    start, after, details = _drive(steps, under="d2d4")
    assert start == "d2d4" and after == "d2d4"
    assert "divergence #1 of 1" in details


def test_footer_lists_the_keys():
    from textual.widgets._footer import FooterKey

    async def steps(app, pilot):
        return {key.key: key.description for key in app.query(FooterKey)}

    keys = _drive(steps)
    for key, what in (("n", "next divergence"), ("p", "prev divergence"), ("g", "go to path"), ("u", "parent"),
                      ("t", "notation"), ("space", "expand/collapse"), ("q", "quit")):
        assert keys.get(key) == what, keys


def test_command_errors_are_one_line(monkeypatch):
    result = CliRunner().invoke(main, ["browse", A, B, "--under", "h2h4"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == "treediff: error: --under h2h4: neither side has this path"


def test_command_without_textual_says_how_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "textual", None)  # import textual now raises ImportError
    result = CliRunner().invoke(main, ["browse", A, B])
    assert result.exit_code == 2
    assert "needs the textual package" in result.output and "treediff[browse]" in result.output


def test_command_runs_the_app(monkeypatch):
    ran = {}

    def fake_run(self, *args, **kwargs):
        ran["rows"] = len(self.model)
        ran["title"] = self.title_text

    monkeypatch.setattr(BrowseApp, "run", fake_run)
    result = CliRunner().invoke(main, ["browse", A, B, "--notation", "san"])
    assert result.exit_code == 0, result.output
    assert ran["rows"] == 10
    assert "nodes A 8, B 6 (Δ +2)" in ran["title"] and "3 divergences" in ran["title"]


def test_command_asks_for_a_position_when_the_inputs_share_several(monkeypatch):
    traces = FIXTURES.parent / "traces"
    a, b = str(traces / "typhoon_batch3.log"), str(traces / "stockfish_batch3.log")
    result = CliRunner().invoke(main, ["browse", a, b])
    assert result.exit_code == 2
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("treediff: error:") and "--position" in last
    ran = {}
    monkeypatch.setattr(BrowseApp, "run", lambda self, *args, **kwargs: ran.setdefault("title", self.title_text))
    result = CliRunner().invoke(main, ["browse", a, b, "--position", "kiwipete"])
    assert result.exit_code == 0, result.output
    assert "position kiwipete" in ran["title"]
