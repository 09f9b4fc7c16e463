"""The HTML page in a real headless browser: Debian's chromium driven by selenium (chromium-driver).

Skipped with a reason when chromium, chromedriver or selenium is missing; .ci/run installs them.
Expectations for align_basic are the hand count in test_html.py's docstring: the root expanded shows
its six ply-1 rows (0000, e2e4, d2d4, g1f3, b1c3, c2c4); e2e4 has two children (e7e5, a7a6); only
b1c3 of the ply-1 rows has nothing divergent at or below it.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from support.html_helpers import (A, B, HAND, HOSTILE_ID, TACTICAL_A, TACTICAL_B, chromium_paths, diff_page,
                                  hostile_logs, start_chromium)

selenium = pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[test]')")
if chromium_paths() is None:
    pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
                allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def browser():
    driver = start_chromium()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("pages")
    made = {}
    for name, (a, b) in {"basic": (A, B), "promo": (HAND / "align_promo_crafty.log",
                                                    HAND / "align_promo_stockfish.log"),
                         "tactical": (TACTICAL_A, TACTICAL_B)}.items():
        path = out / f"{name}.html"
        path.write_text(diff_page(a, b), encoding="utf-8")
        made[name] = path
    return made


def _open(browser, path: Path, hash_: str = ""):
    browser.get(path.as_uri() + hash_)
    deadline = time.monotonic() + 10
    while browser.execute_script("return document.documentElement.getAttribute('data-rendered')") != "1":
        assert time.monotonic() < deadline, "the page never rendered"
        time.sleep(0.05)


def _errors(browser) -> list:
    return [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def _rows(browser) -> list:
    return browser.find_elements(By.CSS_SELECTOR, "section#t0 table.tree tbody tr")


def _moves(browser, side: int = 0) -> list[str]:
    """The shown move of each visible row on side A (0) or B (1); "" in a gap."""
    out = []
    for tr in _rows(browser):
        cells = tr.find_elements(By.CSS_SELECTOR, "td.mv, td.gap")
        first = cells[0] if side == 0 else cells[6 if cells[0].get_attribute("class") == "gap" else 1]
        names = first.find_elements(By.CSS_SELECTOR, "span.name")
        out.append(names[0].text if names else "")
    return out


def _row_of(browser, move: str):
    for tr in _rows(browser):
        if move in [s.text for s in tr.find_elements(By.CSS_SELECTOR, "span.name")]:
            return tr
    raise AssertionError(f"no visible row shows {move}")


def _uncovered(browser, row) -> bool:
    """The row is on screen and nothing (the sticky column headings) lies over it."""
    return browser.execute_script(
        "var r = arguments[0].getBoundingClientRect();"
        "if (r.top < 0 || r.bottom > innerHeight) return false;"
        "var hit = document.elementFromPoint(r.left + 40, (r.top + r.bottom) / 2);"
        "return !!hit && hit.closest('tr') === arguments[0];", row)


def test_expand_and_collapse_a_row(browser, pages):
    _open(browser, pages["basic"])
    shown = {m for side in (0, 1) for m in _moves(browser, side)} - {""}
    assert shown == {"(root)", "0000", "e2e4", "d2d4", "g1f3", "b1c3", "c2c4"}
    assert len(_rows(browser)) == 7
    _row_of(browser, "e2e4").find_element(By.CSS_SELECTOR, "button.tg").click()
    assert len(_rows(browser)) == 9
    moves = _moves(browser)
    at = moves.index("e2e4")
    assert moves[at + 1: at + 3] == ["e7e5", "a7a6"]  # the children, right below their parent
    _row_of(browser, "e2e4").find_element(By.CSS_SELECTOR, "button.tg").click()
    assert len(_rows(browser)) == 7 and "a7a6" not in _moves(browser)
    assert _errors(browser) == []


def test_divergence_link_opens_its_row(browser, pages):
    _open(browser, pages["basic"])
    link = next(a for a in browser.find_elements(By.CSS_SELECTOR, "section.divergences a.divlink")
                if "`e2e4/a7a6`" in a.text)
    assert "a7a6" not in _moves(browser)  # its parent is collapsed
    link.click()
    target = browser.find_element(By.CSS_SELECTOR, "tr.target")
    assert target.is_displayed()
    assert browser.execute_script("return location.hash") == link.get_attribute("href")[-len(
        browser.execute_script("return location.hash")):]
    names = [s.text for s in target.find_elements(By.CSS_SELECTOR, "span.name")]
    assert names == ["a7a6", "a7a6"]
    acts = [td.text for td in target.find_elements(By.CSS_SELECTOR, "td.acts")]
    assert acts == ["FP-QUIET", "FULL"]  # A pruned it, B searched it (align_basic_a/b.log line 13)
    assert _uncovered(browser, target)
    assert _errors(browser) == []


@pytest.mark.parametrize("name", ["basic", "tactical"])
def test_opening_the_page_at_a_row_link(browser, pages, name):
    page = pages[name].read_text(encoding="utf-8")
    hrefs = [part.split('"')[0] for part in page.split('href="')[1:] if part.startswith("#t0-r")]
    href = hrefs[min(2, len(hrefs) - 1)]
    _open(browser, pages[name], href)
    target = browser.find_element(By.CSS_SELECTOR, "tr.target")
    assert "#" + target.get_attribute("id") == href and _uncovered(browser, target)
    assert _errors(browser) == []


def test_notation_toggle(browser, pages):
    _open(browser, pages["promo"])
    # Crafty writes SAN (e8=Q, null move "null"), Stockfish UCI (e7e8q, 0000): align_promo_*.log
    assert "e8=Q" in _moves(browser, 0) and "e7e8q" in _moves(browser, 1)
    assert "null" in _moves(browser, 0) and "0000" in _moves(browser, 1)
    browser.find_element(By.CSS_SELECTOR, "section#t0 input[value=uci]").click()
    assert "e7e8q" in _moves(browser, 0) and "e8=Q" not in _moves(browser, 0)
    assert "0000" in _moves(browser, 0)
    browser.find_element(By.CSS_SELECTOR, "section#t0 input[value=own]").click()
    assert "e8=Q" in _moves(browser, 0)
    assert _errors(browser) == []


def test_only_divergent_filter(browser, pages):
    _open(browser, pages["basic"])
    browser.find_element(By.CSS_SELECTOR, "section#t0 input.only-div").click()
    assert set(_moves(browser)) - {""} == {"(root)", "0000", "e2e4", "d2d4", "g1f3"}
    assert "c2c4" in _moves(browser, 1) and "b1c3" not in _moves(browser, 0) + _moves(browser, 1)
    _row_of(browser, "e2e4").find_element(By.CSS_SELECTOR, "button.tg").click()
    moves = _moves(browser)
    assert "a7a6" in moves and "e7e5" not in moves  # e2e4/e7e5 and below are the same on both sides
    browser.find_element(By.CSS_SELECTOR, "section#t0 input.only-div").click()
    assert "e7e5" in _moves(browser)  # the expanded row keeps its children when the filter is lifted
    assert _errors(browser) == []


def test_hostile_id_is_shown_as_text(browser, pages, tmp_path):
    a, b = hostile_logs(tmp_path)
    path = tmp_path / "hostile.html"
    path.write_text(diff_page(a, b), encoding="utf-8")
    _open(browser, path)  # an alert would make every later selenium call fail
    assert HOSTILE_ID in browser.find_element(By.CSS_SELECTOR, "header h1").text
    assert browser.find_elements(By.CSS_SELECTOR, "img") == []
    assert len(browser.find_elements(By.CSS_SELECTOR, "script")) == 2
    assert _errors(browser) == []


def test_tactical_pair_page(browser, pages):
    _open(browser, pages["tactical"])
    assert len(_rows(browser)) > 1
    for link in browser.find_elements(By.CSS_SELECTOR, "section.divergences a.divlink")[:3]:
        link.click()
        assert _uncovered(browser, browser.find_element(By.CSS_SELECTOR, "tr.target"))
    assert _errors(browser) == []


def test_expand_divergent(browser, pages):
    _open(browser, pages["basic"])
    browser.find_element(By.CSS_SELECTOR, "section#t0 button.expand-div").click()
    # every divergent row is expanded: all 17 rows show but e2e4/e7e5/g1f3 (e2e4/e7e5 is the same on both
    # sides, so it stays collapsed)
    assert len(_rows(browser)) == 16
    assert "g1f3" not in _moves(browser)[_moves(browser).index("e7e5"):_moves(browser).index("a7a6")]
    toc = [a.get_attribute("href").rsplit("#", 1)[1] for a in browser.find_elements(By.CSS_SELECTOR, "nav#toc a")]
    assert "t0" in toc and "sec-divergence-list" in toc
    assert _errors(browser) == []


def test_compare_page_links_open_rows_in_each_positions_tree(browser, tmp_path):
    from click.testing import CliRunner

    from treediff.cli import main

    traces = HAND.parent / "traces"
    out = tmp_path / "compare.html"
    result = CliRunner().invoke(main, ["compare", str(traces / "typhoon_batch3.log"), str(traces / "stockfish_batch3.log"),
                                       "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    _open(browser, out)
    links = browser.find_elements(By.CSS_SELECTOR, "section.divergences a.divlink")
    seen = set()
    for link in links:
        position = link.text.split(":")[0]
        link.click()
        target = browser.find_element(By.CSS_SELECTOR, "tr.target")
        section = target.find_element(By.XPATH, "ancestor::section[@class='tree']")
        assert f"position {position}:" in section.find_element(By.TAG_NAME, "h2").text
        assert target.is_displayed()
        seen.add(position)
    trees = {h.text.split("position ")[1].split(":")[0]
             for h in browser.find_elements(By.CSS_SELECTOR, "section.tree > h2")}
    assert seen == trees and len(seen) >= 2
    assert _errors(browser) == []


def _go(browser, typed: str) -> None:
    box = browser.find_element(By.CSS_SELECTOR, "section#t0 form.jump input")
    box.clear()
    box.send_keys(typed)
    browser.find_element(By.CSS_SELECTOR, "section#t0 form.jump button").click()


def test_go_to_a_typed_path(browser, pages):
    _open(browser, pages["basic"])
    _go(browser, "e2e4/a7a6")
    target = browser.find_element(By.CSS_SELECTOR, "tr.target")
    assert [td.text for td in target.find_elements(By.CSS_SELECTOR, "td.acts")] == ["FP-QUIET", "FULL"]
    assert _uncovered(browser, target)
    _go(browser, "e2e4/e2e5")
    assert browser.find_element(By.CSS_SELECTOR, "section#t0 form.jump output").text == "no row e2e4/e2e5"
    _open(browser, pages["promo"])
    _go(browser, "e8=Q/Kb2")  # Crafty's SAN (align_promo_crafty.log line 6) is e7e8q/a2b2 in UCI
    target = browser.find_element(By.CSS_SELECTOR, "tr.target")
    assert [s.text for s in target.find_elements(By.CSS_SELECTOR, "span.name")] == ["Kb2", "a2b2"]
    _go(browser, "e7e8q/a2a1")
    target = browser.find_element(By.CSS_SELECTOR, "tr.target")
    assert [s.text for s in target.find_elements(By.CSS_SELECTOR, "span.name")] == ["Ka1", "a2a1"]
    assert _errors(browser) == []
