"""Helpers for the HTML page tests: building pages, reading their embedded rows back, a headless chromium."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HAND = ROOT / "fixtures" / "hand"
#: The hand fixture whose aligned rows tests/render/test_html.py counts by hand.
A, B = HAND / "align_basic_a.log", HAND / "align_basic_b.log"
TACTICAL_A = ROOT / "fixtures" / "traces" / "typhoon_tactical-f6f7.log"
TACTICAL_B = ROOT / "fixtures" / "traces" / "stockfish_tactical-f6f7.log"
#: A search id that tries to end the script element and run code.
HOSTILE_ID = "</script><script>alert(1)</script><img/src=x/onerror=alert(2)>&amp;"


def hostile_logs(directory: Path) -> tuple[Path, Path]:
    """align_basic with :data:`HOSTILE_ID` as the search id, written into ``directory``."""
    out = []
    for src in (A, B):
        target = directory / src.name
        target.write_text(src.read_text(encoding="utf-8").replace("id=start", f"id={HOSTILE_ID}"), encoding="utf-8")
        out.append(target)
    return out[0], out[1]


_DATA = re.compile(r'<script type="application/json" id="(t\d+)-data">(.*?)</script>', re.S)


def diff_page(path_a: str | Path, path_b: str | Path, notation: str = "own") -> str:
    """``treediff diff A B --format html``'s page, made with the library calls the command makes."""
    from treediff.align import LOAD_COLUMNS, align, kind_confusion
    from treediff.align.summaries import divergence_summary
    from treediff.parse.source import open_source
    from treediff.render import diffview
    from treediff.render.html import diff_html

    columns = tuple(dict.fromkeys((*LOAD_COLUMNS, "line")))
    ra = open_source(str(path_a)).records(columns)
    rb = open_source(str(path_b)).records(columns)
    alignment = align(ra, rb)
    fen = str(ra["fen"].iloc[0]) if "fen" in ra.columns and ra["fen"].notna().any() else None
    notations = (diffview.side_notation(notation, alignment.a.engine, fen),
                 diffview.side_notation(notation, alignment.b.engine, fen))
    found = divergence_summary(alignment, n=10)
    summaries = diffview.Summaries(confusion=kind_confusion(alignment), divergences=found.rows, total=found.total,
                                   by_kind=found.by_kind, by_ply=found.by_ply)
    return diff_html(alignment, alignment.rows, summaries, notations)


def embedded(page: str) -> dict[str, dict]:
    """The embedded tree data of a page, by tree id (``t0``, ...), parsed as the browser parses it."""
    return {key: json.loads(body) for key, body in _DATA.findall(page)}


def full_paths(data: dict) -> list[str]:
    """Each embedded row's UCI path, rebuilt from its move and parent (independently of the page's JS)."""
    out: list[str] = []
    for move, parent in zip(data["uci"], data["parent"]):
        if parent < 0:
            out.append(move)
        else:
            head = out[parent]
            out.append(f"{head}/{move}" if head else move)
    return out


def chromium_paths() -> tuple[str, str] | None:
    """(chromium, chromedriver) when both are installed (Debian: apt-get install chromium chromium-driver)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def start_chromium(width: int = 1400, height: int = 900):
    """A headless chromium driven by selenium, keeping the browser console log."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    paths = chromium_paths()
    assert paths is not None
    browser, driver = paths
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver))
