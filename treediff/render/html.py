"""One self-contained HTML page for ``report``, ``compare`` and ``diff`` (``--format html -o FILE``).

The page works offline: the CSS and JS (``treediff/render/html_assets/``, read
at render time) are inlined, the charts are hand-written inline SVG, and
nothing refers to another file or URL.  It holds

* the tables (the sections the other formats print, numbers at the human
  formats' precision, :func:`~treediff.render.formatting.format_cell`);
* charts of the same frames (:class:`PlotData`; one shared x-scale and act
  order across the engine panels, engine colours fixed by input order);
* the divergences, each linking to its row in the tree (``#t<tree>-r<row>``);
* the aligned tree(s): an expandable side-by-side view built lazily in the
  browser.  The rows are embedded as column-oriented JSON
  (``<script type="application/json">``); only the rows of expanded
  subtrees are ever turned into DOM rows, so a 50k-row alignment opens at
  once.

Everything derived from a log (ids, FENs, moves, engine names) is escaped:
:func:`esc` for HTML text and attributes, :func:`script_json` for the
embedded JSON (``<``, ``>``, ``&`` and U+2028/9 written as ``\\uXXXX``, so no
string can close the ``<script>`` element).  The JS inserts log text with
``textContent`` only.

Rendering computes nothing new: it formats the frames and the alignment's
rows that the text renderers receive.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from treediff.align.api import Alignment
from treediff.align.core import STATUS_VALUES
from treediff.render.diffview import (
    MARKERS,
    Notation,
    Summaries,
    arrow_cells,
    header_lines,
    last_moves,
    named_paths,
)
from treediff.render.formatting import format_cell, to_python

#: The asset files inlined into every page, in order.
ASSETS = ("page.css", "page.js")
#: Engine colours by input order (A first); colour-blind-safe (Okabe-Ito).
ENGINE_COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
#: Status codes of the embedded rows (``status`` is an index into this tuple).
STATUS_CODES = tuple(STATUS_VALUES)


def asset(name: str) -> str:
    """The text of ``treediff/render/html_assets/<name>`` (package data)."""
    return resources.files("treediff.render").joinpath("html_assets", name).read_text(encoding="utf-8")


def esc(value: object) -> str:
    """``value`` as HTML text, safe in element content and in quoted attributes."""
    return html.escape(str(value), quote=True)


def script_json(value: object) -> str:
    """``value`` as JSON that can sit inside ``<script type="application/json">`` whatever its strings hold.

    ``<``, ``>`` and ``&`` become ``\\u003c`` etc. (so ``</script>`` and
    ``<!--`` cannot occur), and so do U+2028/U+2029; ``JSON.parse`` reads the
    escapes back as the same characters.
    """
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


# --- tables -------------------------------------------------------------------------------------------------


def _numeric(frame: pd.DataFrame) -> list[bool]:
    return [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
            for c in frame.columns]


def frame_html(frame: pd.DataFrame, link: Callable[[dict], str | None] | None = None,
               link_column: str = "path", caption: str | None = None) -> str:
    """``frame`` as an HTML table; numbers right-aligned at the human formats' precision.

    ``link(row)`` (the row as a dict of Python values) may return an
    ``href``: the ``link_column`` cell of that row is then a link.
    """
    header = [str(c) for c in frame.columns]
    numeric = _numeric(frame)
    out = ["<table class=\"data\">"]
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    out.append("<thead><tr>" + "".join(
        f"<th class=\"{'num' if n else 'txt'}\">{esc(h)}</th>" for h, n in zip(header, numeric)) + "</tr></thead>")
    out.append("<tbody>")
    for row in frame.itertuples(index=False, name=None):
        cells = []
        values = {h: to_python(v) for h, v in zip(header, row)}
        href = link(values) if link is not None else None
        for h, v, n in zip(header, row, numeric):
            text = esc(format_cell(h, v))
            if href is not None and h == link_column:
                text = f"<a class=\"divlink\" href=\"{esc(href)}\">{text}</a>"
            cells.append(f"<td class=\"{'num' if n else 'txt'}\">{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def section_html(section, link: Callable[[dict], str | None] | None = None) -> str:
    """One report section: its title, table (the long layout CSV and JSON have) and notes."""
    frame = section.frame
    parts = [f"<section class=\"table\" id=\"sec-{esc(section.name)}\">",
             f"<h2>{esc(section.title)}</h2>"]
    parts.append(frame_html(frame, link) if len(frame.columns) else "<p class=\"empty\">(empty)</p>")
    parts += [f"<p class=\"note\">{esc(n)}</p>" for n in getattr(section, "notes", ())]
    parts.append("</section>")
    return "\n".join(parts)


# --- charts (hand-written SVG) ------------------------------------------------------------------------------


@dataclass
class PlotData:
    """The frames the charts draw (any may be None): what ``report --plot`` draws, per engine.

    ``acts``: ``engine``, ``act``, ``pct_of_moves`` (% of MOVE decisions);
    ``ebf_iter``: ``engine``, ``iter`` (plies), ``ebf_iter``;
    ``lmr_phase``: ``engine``, ``phase``, ``admission_pct`` (% of MOVE decisions).
    ``engines``: the engines in input order (fixes the colours).
    """

    acts: pd.DataFrame | None = None
    ebf_iter: pd.DataFrame | None = None
    lmr_phase: pd.DataFrame | None = None
    engines: list[str] = field(default_factory=list)


def _colour(engines: Sequence[str], engine: str) -> str:
    i = list(engines).index(engine) if engine in engines else len(engines)
    return ENGINE_COLOURS[i % len(ENGINE_COLOURS)]


def _nice_max(value: float) -> float:
    if not np.isfinite(value) or value <= 0:
        return 1.0
    magnitude = 10 ** np.floor(np.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return float(step * magnitude)
    return float(10 * magnitude)


def _ticks(top: float, n: int = 4) -> list[float]:
    return [top * k / n for k in range(n + 1)]


def _tick_text(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e4 else f"{value:,.0f}"


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (f"<figure class=\"chart\"><svg role=\"img\" aria-label=\"{esc(title)}\" width=\"{width}\" "
            f"height=\"{height}\" viewBox=\"0 0 {width} {height}\">" + "".join(body)
            + f"</svg><figcaption>{esc(title)}</figcaption></figure>")


def _text(x: float, y: float, text: object, anchor: str = "start", cls: str = "") -> str:
    extra = f" class=\"{cls}\"" if cls else ""
    return f"<text x=\"{x:.1f}\" y=\"{y:.1f}\" text-anchor=\"{anchor}\"{extra}>{esc(text)}</text>"


def hbar_panels(frame: pd.DataFrame, group: str, label: str, value: str, title: str, unit: str,
                engines: Sequence[str]) -> str:
    """Horizontal bars, one panel per ``group`` value, on one shared x-scale and one shared label order."""
    data = frame.dropna(subset=[value])
    groups = [g for g in engines if g in set(data[group].astype(str))] or list(
        dict.fromkeys(data[group].astype(str)))
    order = (data.assign(_g=data[group].astype(str)).groupby(data[label].astype(str), sort=False)[value].max()
             .sort_values(ascending=False).index.tolist())
    top = _nice_max(float(data[value].max()) if len(data) else 0.0)
    bar, gap, left, plot_w, pad = 14, 4, 110, 220, 24
    panel_h = len(order) * (bar + gap) + 40
    width = max(len(groups), 1) * (left + plot_w + pad) + 10
    body: list[str] = []
    for p, g in enumerate(groups):
        x0 = 10 + p * (left + plot_w + pad) + left
        part = data[data[group].astype(str) == g]
        values = dict(zip(part[label].astype(str), part[value].astype(float)))
        body.append(_text(x0 + plot_w / 2, 14, g, "middle", "panel"))
        for t in _ticks(top):
            x = x0 + plot_w * t / top
            body.append(f"<line class=\"grid\" x1=\"{x:.1f}\" y1=\"22\" x2=\"{x:.1f}\" y2=\"{panel_h - 16}\"/>")
            body.append(_text(x, panel_h - 4, _tick_text(t), "middle", "tick"))
        for i, name in enumerate(order):
            y = 24 + i * (bar + gap)
            body.append(_text(x0 - 4, y + bar - 3, name, "end", "label"))
            v = values.get(name)
            if v is None:
                continue
            w = plot_w * v / top
            body.append(f"<rect x=\"{x0:.1f}\" y=\"{y}\" width=\"{w:.1f}\" height=\"{bar}\" "
                        f"fill=\"{_colour(engines, g)}\"><title>{esc(f'{g} {name}: {v:,.2f} {unit}')}</title></rect>")
    return _svg(int(width), int(panel_h), body, f"{title} ({unit}; one scale for every panel)")


def line_chart(frame: pd.DataFrame, group: str, x: str, y: str, title: str, xlabel: str, ylabel: str,
               engines: Sequence[str]) -> str:
    """Lines of ``y`` against integer ``x``, one per ``group`` value (legend below)."""
    data = frame.dropna(subset=[y])
    width, height, left, bottom, top_pad, plot_w = 440, 260, 50, 40, 12, 370
    plot_h = height - bottom - top_pad
    xs = sorted(set(int(v) for v in data[x])) if len(data) else [0, 1]
    x_lo, x_hi = xs[0], max(xs[-1], xs[0] + 1)
    y_hi = _nice_max(float(data[y].max()) if len(data) else 1.0)

    def px(v: float) -> float:
        return left + plot_w * (v - x_lo) / (x_hi - x_lo)

    def py(v: float) -> float:
        return top_pad + plot_h * (1 - v / y_hi)

    body: list[str] = []
    for t in _ticks(y_hi):
        body.append(f"<line class=\"grid\" x1=\"{left}\" y1=\"{py(t):.1f}\" x2=\"{left + plot_w}\" y2=\"{py(t):.1f}\"/>")
        body.append(_text(left - 4, py(t) + 4, _tick_text(t), "end", "tick"))
    for v in xs:
        body.append(_text(px(v), top_pad + plot_h + 14, v, "middle", "tick"))
    body.append(_text(left + plot_w / 2, height - 6, xlabel, "middle", "axis"))
    body.append(f"<text class=\"axis\" transform=\"translate(12 {top_pad + plot_h / 2:.1f}) rotate(-90)\" "
                f"text-anchor=\"middle\">{esc(ylabel)}</text>")
    if not len(data):
        body.append(_text(left + plot_w / 2, top_pad + plot_h / 2, "no data", "middle", "label"))
    names = [g for g in engines if g in set(data[group].astype(str))] + [
        g for g in dict.fromkeys(data[group].astype(str)) if g not in engines]
    for k, g in enumerate(names):
        part = data[data[group].astype(str) == g].sort_values(x)
        colour = _colour(engines, g)
        points = " ".join(f"{px(float(a)):.1f},{py(float(b)):.1f}" for a, b in zip(part[x], part[y]))
        body.append(f"<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{points}\"/>")
        for a, b in zip(part[x], part[y]):
            body.append(f"<circle cx=\"{px(float(a)):.1f}\" cy=\"{py(float(b)):.1f}\" r=\"3\" fill=\"{colour}\">"
                        f"<title>{esc(f'{g} {xlabel} {a}: {float(b):.3f}')}</title></circle>")
        body.append(f"<rect x=\"{left + 8 + 120 * k}\" y=\"{top_pad + 2}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>")
        body.append(_text(left + 22 + 120 * k, top_pad + 11, g, "start", "label"))
    return _svg(width, height, body, title)


def grouped_bars(frame: pd.DataFrame, category: str, group: str | None, value: str, title: str, unit: str,
                 engines: Sequence[str], signed: bool = False) -> str:
    """Vertical bars of ``value`` per ``category``, one bar per ``group`` value (None: one series).

    ``signed``: values may be negative (a zero line in the middle).
    """
    data = frame.dropna(subset=[value])
    cats = list(dict.fromkeys(data[category].astype(str)))
    names = ([g for g in engines if g in set(data[group].astype(str))]
             + [g for g in dict.fromkeys(data[group].astype(str)) if g not in engines]) if group else [""]
    span = float(data[value].abs().max()) if len(data) else 0.0
    top = _nice_max(span)
    lo = -top if signed and len(data) and float(data[value].min()) < 0 else 0.0
    slot = max(12 * len(names) + 10, 34)
    left, bottom, top_pad = 60, 44, 12
    width = max(left + slot * max(len(cats), 1) + 20, 300)
    height = 240
    plot_h = height - bottom - top_pad

    def py(v: float) -> float:
        return top_pad + plot_h * (top - v) / (top - lo)

    body: list[str] = []
    for t in ([lo + (top - lo) * k / 4 for k in range(5)]):
        body.append(f"<line class=\"grid\" x1=\"{left}\" y1=\"{py(t):.1f}\" x2=\"{width - 10}\" y2=\"{py(t):.1f}\"/>")
        body.append(_text(left - 4, py(t) + 4, _tick_text(t), "end", "tick"))
    bar = (slot - 10) / max(len(names), 1)
    for c, cat in enumerate(cats):
        x0 = left + c * slot + 5
        body.append(_text(x0 + (slot - 10) / 2, top_pad + plot_h + 14, cat, "middle", "tick"))
        for k, g in enumerate(names):
            part = data[(data[category].astype(str) == cat) & ((data[group].astype(str) == g) if group else True)]
            if not len(part):
                continue
            v = float(part[value].iloc[0])
            y1, y2 = sorted((py(v), py(0.0)))
            colour = _colour(engines, g) if group else ("#b2182b" if v > 0 else "#2166ac")
            label = f"{g + ' ' if g else ''}{cat}: {v:,.2f} {unit}"
            body.append(f"<rect x=\"{x0 + k * bar:.1f}\" y=\"{y1:.1f}\" width=\"{max(bar - 1, 1):.1f}\" "
                        f"height=\"{max(y2 - y1, 0.5):.1f}\" fill=\"{colour}\"><title>{esc(label)}</title></rect>")
    for k, g in enumerate(n for n in names if n):
        body.append(f"<rect x=\"{left + 120 * k}\" y=\"{height - 14}\" width=\"10\" height=\"10\" "
                    f"fill=\"{_colour(engines, g)}\"/>")
        body.append(_text(left + 14 + 120 * k, height - 5, g, "start", "label"))
    return _svg(int(width), height, body, f"{title} ({unit})")


def charts_html(plots: PlotData | None) -> str:
    """The charts of ``plots`` (acts, EBF by iteration, LMR by phase) as one section; "" when there are none."""
    if plots is None:
        return ""
    engines = list(plots.engines)
    parts: list[str] = []
    if plots.acts is not None and len(plots.acts):
        parts.append(hbar_panels(plots.acts, "engine", "act", "pct_of_moves", "MOVE decisions per act",
                                 "% of MOVE decisions", engines))
    if plots.ebf_iter is not None and len(plots.ebf_iter):
        parts.append(line_chart(plots.ebf_iter, "engine", "iter", "ebf_iter", "EBF by iteration, sqrt(N(d)/N(d-2))",
                                "iteration d (plies)", "EBF", engines))
    if plots.lmr_phase is not None and len(plots.lmr_phase):
        frame = plots.lmr_phase.assign(phase=plots.lmr_phase["phase"].astype(object).fillna("(none)"))
        parts.append(grouped_bars(frame, "phase", "engine", "admission_pct", "LMR admission by phase",
                                  "% of MOVE decisions", engines))
    if not parts:
        return ""
    return "<section class=\"charts\" id=\"sec-charts\"><h2>Charts</h2>" + "".join(parts) + "</section>"


# --- the aligned tree ---------------------------------------------------------------------------------------


def _gap_to_null(values: pa.Array, gap: np.ndarray) -> list:
    """``values`` as a list, None where ``gap`` (Arrow does the per-value work)."""
    return pc.if_else(pa.array(gap), pa.nulls(len(values), values.type), values).to_pylist()


def _ints(series: pd.Series) -> pa.Array:
    """Whole numbers as an Arrow int64 array, missing as null."""
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    missing = np.isnan(values)
    return pa.array(np.where(missing, 0, values).astype(np.int64), mask=missing)


def tree_data(alignment: Alignment, rows: pd.DataFrame,
              notations: tuple[Notation | None, Notation | None] = (None, None)) -> dict:
    """The rows of one aligned tree as column-oriented lists for the page's JS (see ``page.js``).

    ``rows``: the rows a view selected, in tree order (index: the alignment's
    row numbers).  ``parent``: the parent's position among ``rows`` (-1 for
    a top row: the root, or a row whose parent was not selected, whose move
    is then its full path); ``status``: an index into ``statuses``;
    ``div``: the row or a selected row below it is not ``same`` (the
    only-divergent filter keeps these); per side ``a_*`` / ``b_*``: the
    move in the side's own notation (null when it is the UCI move), acts,
    depth cell (plies), reduction (plies), subtree nodes (RESULT records),
    source line; null where the side lacks the path.
    """
    n = len(rows)
    index = rows.index.to_numpy()
    local = np.full(int(alignment.rows.index.max()) + 1 if len(alignment.rows) else 1, -1, dtype=np.int64)
    local[index] = np.arange(n)
    parent_orig = rows["parent"].to_numpy(dtype=np.int64)
    parent = np.where(parent_orig >= 0, local[np.maximum(parent_orig, 0)], -1)
    status_text = rows["status"].astype(str).to_numpy()
    status = pd.Categorical(status_text, categories=STATUS_CODES).codes.astype(np.int64)
    plies = rows["ply"].to_numpy(dtype=np.int64)
    # div: a non-same row marks itself and its selected ancestors, deepest plies first (one numpy pass a ply).
    div = status_text != "same"
    for ply in range(int(plies.max(initial=0)), 0, -1):
        at = np.flatnonzero((plies == ply) & div & (parent >= 0))
        div[parent[at]] = True
    paths = pa.array(rows["path"].astype(str).to_numpy(dtype=object), pa.string())
    top = parent < 0
    uci_moves = pc.if_else(pa.array(top), paths, last_moves(paths))
    uci = uci_moves.to_pylist()
    data: dict = {"n": n, "statuses": list(STATUS_CODES), "markers": [MARKERS[s] for s in STATUS_CODES],
                  "parent": parent.tolist(), "ply": plies.tolist(), "status": status.tolist(),
                  "div": div.astype(np.int8).tolist(), "uci": uci}
    if "visit_label" in rows.columns:
        label = rows["visit_label"].astype(str).to_numpy(dtype=object)
        data["visit"] = [None if v == "main" else v for v in label]
    for side, notation in zip("ab", notations):
        gap = status_text == ("only-B" if side == "a" else "only-A")
        cells = arrow_cells(rows, side, notation=None)
        if notation is not None and not (notation.style == "uci" and notation.null == "0000"):
            named = named_paths(paths, notation)
            own = pc.if_else(pa.array(top), named, last_moves(named))
            data[f"{side}_own"] = _gap_to_null(own, gap | pc.equal(own, uci_moves).to_numpy(zero_copy_only=False))
        else:
            data[f"{side}_own"] = None
        data[f"{side}_acts"] = _gap_to_null(cells["acts"], gap)
        kind = pa.Array.from_pandas(rows[f"kind_{side}"].astype(object))
        data[f"{side}_kind"] = _gap_to_null(kind.cast(pa.string()) if len(kind) else pa.array([], pa.string()), gap)
        data[f"{side}_depth"] = _gap_to_null(cells["depth"], gap)
        data[f"{side}_red"] = _gap_to_null(cells["red"], gap)
        data[f"{side}_nodes"] = _gap_to_null(_ints(rows[f"nodes_{side}"]), gap)
        line_col = f"line_{side}"
        lines = _ints(rows[line_col]) if line_col in rows.columns else pa.nulls(n, pa.int64())
        data[f"{side}_line"] = _gap_to_null(lines, gap)
    data["a_label"] = notations[0].label if notations[0] is not None else "UCI"
    data["b_label"] = notations[1].label if notations[1] is not None else "UCI"
    return data


@dataclass
class TreeView:
    """One aligned tree of the page: a heading, the header lines and the rows (:func:`tree_data`)."""

    title: str
    lines: list[str]
    data: dict
    paths: dict[str, int] = field(default_factory=dict)  #: UCI path -> row position (the path's first row)

    def anchor(self, key: int, path: str) -> str | None:
        """``#t<key>-r<row>`` for ``path``'s row, None when the tree does not show it."""
        at = self.paths.get(path)
        return None if at is None else f"#t{key}-r{at}"


def tree_view(alignment: Alignment, rows: pd.DataFrame | None = None,
              notations: tuple[Notation | None, Notation | None] = (None, None), title: str | None = None,
              position: str | None = None) -> TreeView:
    """A :class:`TreeView` of ``rows`` (default: every row of the alignment).

    ``position``: the name divergence rows use for this tree's position (default: the alignment's).
    """
    rows = alignment.rows if rows is None else rows
    paths = rows["path"].astype(str).to_numpy(dtype=object)
    keep = ~pd.Series(paths).duplicated().to_numpy()  # a path's first row (visits="all": its main row)
    first = dict(zip(paths[keep].tolist(), np.flatnonzero(keep).tolist()))
    data = tree_data(alignment, rows, notations)
    data["position"] = str(alignment.position if position is None else position)
    return TreeView(title or f"Aligned tree, position {alignment.position}", header_lines(alignment, rows), data,
                    first)


def tree_html(view: TreeView, key: int) -> str:
    """The tree's controls, an empty table the JS fills, and the embedded rows."""
    tid = f"t{key}"
    d = view.data
    return "\n".join([
        f"<section class=\"tree\" id=\"{tid}\" data-tree=\"{key}\">",
        f"<h2>{esc(view.title)}</h2>",
        *(f"<p class=\"sub\">{esc(line)}</p>" for line in view.lines),
        "<div class=\"controls\">",
        f"<span>Moves: <label><input type=\"radio\" name=\"{tid}-notation\" value=\"own\" checked> each side's own "
        f"(A {esc(d['a_label'])}, B {esc(d['b_label'])})</label> "
        f"<label><input type=\"radio\" name=\"{tid}-notation\" value=\"uci\"> UCI</label></span>",
        f"<label><input type=\"checkbox\" class=\"only-div\"> only divergent rows (and the rows leading to them)</label>",
        "<button type=\"button\" class=\"expand-div\" title=\"expand every row with a divergence at or below it "
        "(up to about 2,000 rows)\">expand divergent</button>",
        "<button type=\"button\" class=\"collapse-all\">collapse all</button>",
        "<form class=\"jump\"><label>go to path <input type=\"text\" size=\"24\" "
        "placeholder=\"e2e4/e7e5 (UCI or own)\"></label> <button type=\"submit\">go</button> <output></output></form>",
        "<span class=\"legend\"><span class=\"st-same\">same</span> <span class=\"st-differs\">differs</span> "
        "<span class=\"st-only-A\">only A</span> <span class=\"st-only-B\">only B</span></span>",
        "</div>",
        "<table class=\"tree\"><thead><tr>"
        "<th>A move</th><th>act</th><th>depth</th><th class=\"num\">red</th><th class=\"num\">nodes</th>"
        "<th class=\"num\">line</th><th class=\"mk\"></th><th class=\"num\">delta</th>"
        "<th>B move</th><th>act</th><th>depth</th><th class=\"num\">red</th><th class=\"num\">nodes</th>"
        "<th class=\"num\">line</th></tr></thead><tbody></tbody></table>",
        "<p class=\"note\">act: the acts in order; depth: node depth→new depth (→re-search depth), plies; "
        "red: reduction, plies; nodes: RESULT records in the subtree; line: source line of the decision; "
        "delta: nodes A − B. Click a move (or ▸) to expand it.</p>",
        f"<script type=\"application/json\" id=\"{tid}-data\">{script_json(d)}</script>",
        "</section>",
    ])


# --- divergences --------------------------------------------------------------------------------------------


def _signed(n: object) -> str:
    try:
        v = int(n)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return ""
    return f"{v:+,}" if v else "0"


def divergence_list_html(frame: pd.DataFrame, anchor: Callable[[dict], str | None], title: str) -> str:
    """The divergences as an ordered list of their sentences, each linking to its tree row when shown."""
    items = []
    for row in frame.to_dict("records"):
        href = anchor(row) if row.get("path") != "(rest)" else None
        text = f"[{_signed(row.get('delta'))}] {row.get('sentence', '')}"
        if row.get("position"):
            text = f"{row['position']}: {text}"
        body = f"<a class=\"divlink\" href=\"{esc(href)}\">{esc(text)}</a>" if href else esc(text)
        items.append(f"<li>{body}</li>")
    body = "<ol>" + "".join(items) + "</ol>" if items else "<p class=\"empty\">(no differing row)</p>"
    return f"<section class=\"divergences\" id=\"sec-divergence-list\"><h2>{esc(title)}</h2>{body}</section>"


# --- pages --------------------------------------------------------------------------------------------------


def page(title: str, parts: Sequence[str], subtitle: Sequence[str] = ()) -> str:
    """A whole HTML document: ``parts`` (HTML) in order, the assets inlined."""
    css, js = (asset(name) for name in ASSETS)
    from treediff import __version__

    return "\n".join([
        "<!DOCTYPE html>",
        "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<meta name=\"generator\" content=\"treediff {esc(__version__)}\">",
        f"<title>{esc(title)}</title>",
        f"<style>{css}</style></head><body>",
        f"<header><h1>{esc(title)}</h1>" + "".join(f"<p class=\"sub\">{esc(s)}</p>" for s in subtitle)
        + "<nav id=\"toc\"></nav></header>",
        "<main>", *parts, "</main>",
        f"<script>{js}</script>",
        "</body></html>",
    ]) + "\n"


def _notes_html(notes: Sequence[str]) -> str:
    if not notes:
        return ""
    return "<section class=\"notes\" id=\"sec-notes\"><h2>Notes</h2>" + "".join(
        f"<p class=\"note\">{esc(n)}</p>" for n in notes) + "</section>"


def report_html(sections: Sequence, notes: Sequence[str] = (), plots: PlotData | None = None,
                title: str = "treediff report", subtitle: Sequence[str] = ()) -> str:
    """``treediff report``'s page: the tables, the charts and the notes."""
    parts = [section_html(s) for s in sections]
    parts.append(charts_html(plots))
    parts.append(_notes_html(notes))
    return page(title, [p for p in parts if p], subtitle)


#: compare sections shown as a linked list rather than only as a table.
_DIVERGENCE_SECTION = "divergences"


def compare_html(sections: Sequence, notes: Sequence[str] = (), plots: PlotData | None = None,
                 trees: Sequence[TreeView] = (), title: str = "treediff compare",
                 subtitle: Sequence[str] = ()) -> str:
    """``treediff compare``'s page: the tables, the charts, the divergences linked to the trees, the trees.

    ``trees``: one per aligned position, in the order of their titles; a
    divergence row links to the tree whose alignment has its ``position``.
    """
    by_position = {str(t.data.get("position", "")): (k, t) for k, t in enumerate(trees)}

    def anchor(row: dict) -> str | None:
        hit = by_position.get(str(row.get("position", "")))
        if hit is None or row.get("path") is None:
            return None
        k, t = hit
        return t.anchor(k, str(row["path"]))

    parts = []
    for s in sections:
        if s.name == _DIVERGENCE_SECTION:
            parts.append(divergence_list_html(s.frame, anchor, "Divergences, each a link to its row in the "
                                                                "aligned trees below"))
        parts.append(section_html(s, anchor if s.name == _DIVERGENCE_SECTION else None))
    parts.append(charts_html(plots))
    parts += [tree_html(t, k) for k, t in enumerate(trees)]
    parts.append(_notes_html(notes))
    return page(title, [p for p in parts if p], subtitle)


def _frame_section(name: str, title: str, frame: pd.DataFrame, index: bool = False) -> str:
    shown = frame.reset_index() if index else frame
    return (f"<section class=\"table\" id=\"sec-{esc(name)}\"><h2>{esc(title)}</h2>"
            + (frame_html(shown) if len(shown.columns) else "<p class=\"empty\">(none)</p>") + "</section>")


def diff_html(alignment: Alignment, rows: pd.DataFrame, summaries: Summaries,
              notations: tuple[Notation | None, Notation | None] = (None, None),
              title: str | None = None) -> str:
    """``treediff diff``'s page: the tree, the divergences (linked to their rows), kinds and breakdowns."""
    view = tree_view(alignment, rows, notations)

    def anchor(row: dict) -> str | None:
        return view.anchor(0, str(row.get("path")))

    total = summaries.total
    where = "the whole tree" if summaries.scope is None else f"{summaries.scope or '(root)'}'s subtree"
    if summaries.scope is not None and summaries.drill:
        where += f", {summaries.scope or '(root)'} itself left out"
    parts = [
        divergence_list_html(summaries.divergences, anchor,
                             f"Divergences in {where} (every node counted once, at its topmost differing row; "
                             f"delta = nodes A − B)"),
        _frame_section("divergence_total", "Divergence total (frontier rows + shared residual = delta)",
                       pd.DataFrame([{k: to_python(v) for k, v in total.items()}])),
        _frame_section("kind_confusion", "Kinds on shared paths (A's kind down, B's across)",
                       summaries.confusion, index=True),
        _frame_section("divergence_by_kind", "Delta by frontier kind (nodes)", summaries.by_kind),
        _frame_section("divergence_by_ply", "Delta by frontier ply (nodes)", summaries.by_ply),
    ]
    by_ply = summaries.by_ply
    if len(by_ply) and {"ply", "delta"} <= set(by_ply.columns) and by_ply["delta"].abs().sum() > 0:
        frame = by_ply.assign(ply=by_ply["ply"].astype(object).map(lambda v: "-" if to_python(v) is None else str(v)))
        parts.append("<section class=\"charts\" id=\"sec-charts\"><h2>Charts</h2>"
                     + grouped_bars(frame, "ply", None, "delta", "Delta by frontier ply", "nodes, A − B", [],
                                    signed=True) + "</section>")
    parts.insert(1, tree_html(view, 0))
    if summaries.scope_sentence:
        parts.insert(1, f"<p class=\"note\">At the row itself: {esc(summaries.scope_sentence)}</p>")
    parts.append(_notes_html(list(alignment.notes) + list(summaries.notes)))
    a, b = alignment.a, alignment.b
    heading = title or f"treediff diff: {a.engine or 'A'} vs {b.engine or 'B'}, position {alignment.position}"
    return page(heading, [p for p in parts if p])
