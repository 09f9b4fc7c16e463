"""Charts for ``report --plot DIR`` and ``compare --plot DIR`` (matplotlib, Agg backend: no display needed).

``report --plot``:

* ``acts.png``: % of MOVE decisions per act, one panel per group (engine, and the search-level ``--by`` keys),
  every panel with the same act order and the same x-scale, bars coloured by the act's kind;
* ``ebf_iter.png``: EBF by iteration, one line per group (engine x the search-level ``--by`` keys: colour by
  engine, line style by the rest).  A traced group (``node_source`` = ``result``) draws the report's
  ``ebf_iter`` = sqrt(N(d)/N(d-2)); an engine-sourced group (``node_source`` = ``engine``: the engine's
  ``info nodes``, no trace) draws sqrt(C(d)/C(d-2)) of the engine's *cumulative* counts
  (:func:`treediff.report.plotdata.engine_ebf_cumulative`), dashed and labelled "engine nodes, cumulative":
  differencing cumulative counts gives values below 1 whenever an iteration is cheaper than the one two
  before it; the cumulative ratio never does.  A group mixing both draws the report's line without its
  points below 1, labelled "traced + engine nodes";
* ``lmr_phase.png``: LMR admission (% of MOVE decisions) per engine and phase.

``compare --plot``: ``node_ratio.png`` (A/B per position, bars from 1; log scale past a 10x spread),
``acts.png`` (each side's acts in the rows of compare's kind-aligned acts table: PRUNE next to PRUNE, same
x-scale, coloured by kind), ``lmr_phase.png`` (LMR admission per side and phase).

Colours: one per :class:`~treediff.model.taxonomy.Kind` (:data:`KIND_COLOURS`) and one per engine (or
compare side) by input order (:func:`engine_colours`): the first input always gets the first colour, in every
chart and every run.  ``*_figure`` functions build a figure (tests read its artists); ``plot_*`` save it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from treediff.model.taxonomy import Kind
from treediff.store.files import atomic_output, write_error

#: Engine (or compare side) colours by input order (Okabe-Ito, colour-blind safe); cycled past eight.  The
#: same order as the HTML page's charts (render/html.py ENGINE_COLOURS), so an engine has one colour in both.
ENGINE_PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
#: One colour per kind of decision (matplotlib's tab10), the same in every chart.
KIND_COLOURS: dict[str, str] = {
    Kind.SEARCH.value: "#1f77b4", Kind.REDUCE.value: "#ff7f0e", Kind.RESEARCH.value: "#9467bd",
    Kind.EXTEND.value: "#2ca02c", Kind.PRUNE.value: "#d62728", Kind.NULL_PROBE.value: "#8c564b",
    Kind.NODE_CUT.value: "#e377c2", Kind.OTHER.value: "#7f7f7f",
}
#: Colour of a decision without a kind.
NO_KIND_COLOUR = "#c7c7c7"
#: Line styles for the groups of one engine (``--by phase``: opening, middlegame, endgame, ...).
LINE_STYLES = ("-", "--", ":", "-.")
_KIND_ORDER = {k.value: i for i, k in enumerate(Kind)}


def engine_colours(labels: Sequence[str]) -> dict[str, str]:
    """Colour of each engine or side label, by its position in ``labels`` (input order; repeats ignored)."""
    unique = list(dict.fromkeys(str(label) for label in labels))
    return {label: ENGINE_PALETTE[i % len(ENGINE_PALETTE)] for i, label in enumerate(unique)}


def kind_colour(kind) -> str:
    return KIND_COLOURS.get(str(kind), NO_KIND_COLOUR) if kind is not None and kind == kind else NO_KIND_COLOUR


def _pyplot():
    import matplotlib
    from cycler import cycler

    matplotlib.use("Agg", force=True)
    # Lines and bars drawn without a colour (the analytics charts draw one per engine, in input order) take
    # the engine palette in that order: the same colours engine_colours gives.
    matplotlib.rcParams["axes.prop_cycle"] = cycler(color=list(ENGINE_PALETTE))
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    """Save atomically (a temporary file beside the target, then a rename); the format is the suffix's."""
    fmt = path.suffix.lstrip(".") or "png"
    with atomic_output(path) as tmp:
        fig.savefig(tmp, format=fmt, dpi=110, bbox_inches="tight")
    return path


def _saved(fig, path: Path) -> Path:
    plt = _pyplot()
    try:
        return _save(fig, path)
    finally:
        plt.close(fig)


def _text(value) -> str:
    return "(none)" if value is None or value != value else str(value)


def _group_labels(frame: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    cols = [k for k in keys if k in frame.columns]
    return [" · ".join(_text(v) for v in row) for row in frame[cols].itertuples(index=False, name=None)]


def _engines(frame: pd.DataFrame) -> list[str]:
    return [str(e) for e in dict.fromkeys(frame["engine"].astype("object"))] if "engine" in frame else []


def _no_data(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)


def _kind_legend(fig, kinds: Sequence) -> None:
    from matplotlib.patches import Patch

    shown = list(dict.fromkeys(_text(k) for k in kinds))
    handles = [Patch(color=kind_colour(None if k == "(none)" else k), label=k) for k in shown]
    if handles:
        # Outside the panels, right of them (savefig's tight bounding box keeps it).
        fig.legend(handles=handles, title="kind", loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")


# ---------------------------------------------------------------- report: acts

def act_order(acts: pd.DataFrame) -> list[tuple[str, str]]:
    """The (act, kind) rows every panel shows, top to bottom: by kind (:class:`Kind` order), then by the
    largest share any group gives the act, then by name."""
    if acts.empty:
        return []
    rows = acts.assign(_act=acts["act"].map(_text), _kind=acts["kind"].map(_text))
    best = rows.groupby(["_act", "_kind"], sort=False)["pct_of_moves"].max().reset_index()
    best["_k"] = best["_kind"].map(lambda k: _KIND_ORDER.get(k, len(_KIND_ORDER)))
    best = best.sort_values(["_k", "pct_of_moves", "_act"], ascending=[True, False, True], kind="stable")
    return list(zip(best["_act"], best["_kind"]))


def acts_figure(acts: pd.DataFrame, keys: Sequence[str] = ("engine",), colours: dict[str, str] | None = None):
    """Horizontal bars: % of MOVE decisions per act, one panel per group of ``keys``, shared act order and
    x-scale, each bar the colour of its kind (``colours`` is unused here: panels are titled by group)."""
    plt = _pyplot()
    keys = [k for k in keys if k in acts.columns] or ["engine"]
    groups = acts[keys].drop_duplicates().reset_index(drop=True) if len(acts) else acts[keys].iloc[:0]
    titles = _group_labels(groups, keys)
    order = act_order(acts)
    n = max(len(titles), 1)
    ncols = min(n, 4)
    nrows = (n + ncols - 1) // ncols
    height = max(3.0, 0.28 * len(order) + 1.2)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, height * nrows), squeeze=False,
                             sharex=True, sharey=True)
    top = float(acts["pct_of_moves"].max()) if len(acts) else 0.0
    limit = max(top * 1.08, 1.0)
    y = np.arange(len(order))
    labelled = {row: i for i, row in enumerate(order)}
    for i, ax in enumerate(axes.ravel()):
        if i >= len(titles):
            ax.set_visible(False)
            continue
        match = np.ones(len(acts), dtype=bool)
        for k in keys:
            match &= (acts[k].map(_text) == groups[k].map(_text).iat[i]).to_numpy()
        part = acts[match]
        values = np.zeros(len(order))
        for act, kind, pct in zip(part["act"].map(_text), part["kind"].map(_text), part["pct_of_moves"]):
            values[labelled[(act, kind)]] = float(pct)
        ax.barh(y, values, color=[kind_colour(None if k == "(none)" else k) for _, k in order])
        ax.set_title(titles[i])
        ax.set_xlabel("% of MOVE decisions")
    for ax in axes.ravel():
        ax.set_xlim(0, limit)
    axes[0][0].set_yticks(y, [a for a, _ in order])
    axes[0][0].invert_yaxis()  # the first kind at the top
    if not titles:
        _no_data(axes[0][0], "no MOVE decisions")
    _kind_legend(fig, [k for _, k in order])
    fig.suptitle("MOVE decisions per act")
    return fig


def plot_acts(acts: pd.DataFrame, path: Path, keys: Sequence[str] = ("engine",),
              colours: dict[str, str] | None = None) -> Path:
    """:func:`acts_figure` saved to ``path``."""
    return _saved(acts_figure(acts, keys, colours), path)


# ---------------------------------------------------------------- report: EBF by iteration

def ebf_figure(ebf_iter: pd.DataFrame, ebf: pd.DataFrame | None = None, cumulative: pd.DataFrame | None = None,
               keys: Sequence[str] = ("engine",), colours: dict[str, str] | None = None):
    """EBF against iteration, one line per group of ``keys`` (module docstring: which estimator per group).

    ``ebf_iter`` and ``ebf`` are the report's sections grouped by ``keys``; ``cumulative`` the
    :func:`~treediff.report.plotdata.engine_ebf_cumulative` frame of the same keys.
    """
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    keys = [k for k in keys if k in ebf_iter.columns] or ["engine"]
    colours = colours or engine_colours(_engines(ebf if ebf is not None and len(ebf) else ebf_iter))
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    groups = (ebf[keys] if ebf is not None and len(ebf) else ebf_iter[keys].drop_duplicates()).reset_index(drop=True)
    sources = (ebf["node_source"].astype("object").fillna("result").astype(str).tolist()
               if ebf is not None and "node_source" in ebf and len(ebf) else ["result"] * len(groups))
    labels = _group_labels(groups, keys)
    styles: dict[str, int] = {}
    drawn = 0
    for i, label in enumerate(labels):
        engine = str(groups["engine"].iat[i])
        style = styles.get(engine, 0)
        styles[engine] = style + 1
        kinds = set(sources[i].split(","))
        if kinds == {"engine"} and cumulative is not None:
            data, column, suffix, line = cumulative, "ebf_cumulative", " (engine nodes, cumulative)", "--"
        else:
            data, column, suffix, line = ebf_iter, "ebf_iter", "", LINE_STYLES[style % len(LINE_STYLES)]
            if "engine" in kinds:
                suffix = " (traced + engine nodes)"
        match = np.ones(len(data), dtype=bool)
        for k in keys:
            match &= (data[k].map(_text) == _text(groups[k].iat[i])).to_numpy() if k in data else False
        part = data[match].dropna(subset=[column]) if column in data else data.iloc[:0]
        if "engine" in kinds and column == "ebf_iter":
            part = part[part[column] >= 1.0]  # differenced engine counts: points below 1 are not shown
        if part.empty:
            continue
        ax.plot(part["iter"].astype(float), part[column].astype(float), marker="o", linestyle=line,
                color=colours.get(engine, ENGINE_PALETTE[0]), label=label + suffix)
        drawn += 1
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration d (plies)")
    ax.set_ylabel("sqrt(N(d) / N(d-2))")
    ax.set_title("EBF by iteration")
    if drawn:
        ax.legend(fontsize="small")
    else:
        _no_data(ax, "no search has iterations d and d-2")
    return fig


def plot_ebf_iter(ebf_iter: pd.DataFrame, path: Path, ebf: pd.DataFrame | None = None,
                  cumulative: pd.DataFrame | None = None, keys: Sequence[str] = ("engine",),
                  colours: dict[str, str] | None = None) -> Path:
    """:func:`ebf_figure` saved to ``path``."""
    return _saved(ebf_figure(ebf_iter, ebf, cumulative, keys, colours), path)


# ---------------------------------------------------------------- LMR by phase

def lmr_phase_figure(lmr: pd.DataFrame, colours: dict[str, str] | None = None, side: str = "engine",
                     value: str = "admission_pct"):
    """Grouped bars: LMR admission % per phase, one bar per engine (``side``: the label column)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    phases = list(dict.fromkeys(lmr["phase"].map(_text))) if len(lmr) else []
    sides = [str(s) for s in dict.fromkeys(lmr[side].astype("object"))] if len(lmr) else []
    colours = colours or engine_colours(sides)
    width = 0.8 / max(len(sides), 1)
    x = np.arange(len(phases))
    for i, name in enumerate(sides):
        part = lmr[lmr[side].astype("object").astype(str) == name]
        values = dict(zip(part["phase"].map(_text), part[value].astype(float)))
        ax.bar(x + i * width, [values.get(p, np.nan) for p in phases], width, label=name,
               color=colours.get(name, ENGINE_PALETTE[i % len(ENGINE_PALETTE)]))
    ax.set_xticks(x + width * (max(len(sides), 1) - 1) / 2, phases)
    ax.set_ylabel("LMR % of MOVE decisions")
    ax.set_title("LMR admission by phase")
    if sides:
        ax.legend()
    else:
        _no_data(ax, "no MOVE decisions")
    return fig


def plot_lmr_phase(lmr: pd.DataFrame, path: Path, colours: dict[str, str] | None = None) -> Path:
    """:func:`lmr_phase_figure` saved to ``path``."""
    return _saved(lmr_phase_figure(lmr, colours), path)


def _directory(directory: str | os.PathLike) -> Path:
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(out, exc) from None  # a clear message naming the directory, exit 2
    return out


def write_plots(acts: pd.DataFrame, ebf_iter: pd.DataFrame, lmr_by_phase: pd.DataFrame,
                directory: str | os.PathLike, ebf: pd.DataFrame | None = None,
                cumulative: pd.DataFrame | None = None, keys: Sequence[str] = ("engine",),
                engines: Sequence[str] | None = None, image_format: str = "png") -> list[Path]:
    """Write the report's three charts into ``directory`` (created if needed); returns the files.

    ``engines``: every engine in input order (fixes the colours; default: as the frames list them).
    """
    out = _directory(directory)
    colours = engine_colours(engines if engines is not None else [*_engines(lmr_by_phase), *_engines(ebf_iter)])
    return [plot_acts(acts, out / f"acts.{image_format}", keys, colours),
            plot_ebf_iter(ebf_iter, out / f"ebf_iter.{image_format}", ebf, cumulative, keys, colours),
            plot_lmr_phase(lmr_by_phase, out / f"lmr_phase.{image_format}", colours)]


# ---------------------------------------------------------------- compare

def _position_rows(nodes: pd.DataFrame) -> pd.DataFrame:
    return nodes[~nodes["position"].astype(str).isin(["(all)", "(geomean)"])].reset_index(drop=True)


def node_ratio_figure(nodes: pd.DataFrame, labels: Sequence[str], colours: dict[str, str] | None = None):
    """Bars from 1 to A's nodes over each other side's, per position (compare's ``nodes`` table): up when A's
    tree is bigger, down when smaller; log scale when the ratios span more than 10x; a bar has the colour
    of the side A is divided by."""
    plt = _pyplot()
    colours = colours or engine_colours(labels)
    rows = _position_rows(nodes)
    ratio_cols = ["ratio"] if "ratio" in nodes.columns else [c for c in nodes.columns if c.startswith("ratio_")]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(rows) + 2), 4))
    width = 0.8 / max(len(ratio_cols), 1)
    x = np.arange(len(rows))
    for i, col in enumerate(ratio_cols):
        other = str(labels[i + 1]) if i + 1 < len(labels) else col
        values = rows[col].astype(float).to_numpy()
        bars = ax.bar(x + i * width, values - 1.0, width, bottom=1.0,
                      color=colours.get(other, ENGINE_PALETTE[(i + 1) % 8]), label=f"{labels[0]} / {other}")
        ax.bar_label(bars, labels=[f"{v:.2f}" if np.isfinite(v) else "" for v in values], fontsize="small")
    ax.axhline(1.0, color="#555555", linewidth=1)
    finite = rows[ratio_cols].astype(float).to_numpy()
    finite = finite[np.isfinite(finite) & (finite > 0)]
    if len(finite) and finite.max() / finite.min() > 10:
        ax.set_yscale("log")
    elif not len(finite):
        _no_data(ax, "no position searched by both sides")
    ax.set_xticks(x + width * (max(len(ratio_cols), 1) - 1) / 2, rows["position"].astype(str).tolist(),
                  rotation=45 if len(rows) > 6 else 0, ha="right" if len(rows) > 6 else "center")
    ax.set_ylabel("nodes ratio" + (" (log scale)" if ax.get_yscale() == "log" else ""))
    ax.set_title("Nodes per position at a common depth")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize="small")
    return fig


def compare_acts_figure(acts: pd.DataFrame, labels: Sequence[str]):
    """Each side's acts in the rows of compare's kind-aligned ``acts`` table (one panel per side, the same
    rows, the same x-scale), bars coloured by kind and labelled with the side's act."""
    plt = _pyplot()
    n = max(len(labels), 1)
    height = max(3.0, 0.3 * len(acts) + 1.2)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, height), squeeze=False, sharex=True, sharey=True)
    pct_cols = [f"{label} pct_of_moves" for label in labels]
    top = np.nanmax(acts[pct_cols].astype(float).to_numpy()) if len(acts) else 0.0
    limit = max(float(top) * 1.15 if np.isfinite(top) else 0.0, 1.0)
    y = np.arange(len(acts))
    kinds = acts["kind"].astype(str).tolist()
    for ax, label in zip(axes[0], labels):
        values = acts[f"{label} pct_of_moves"].astype(float).fillna(0.0).to_numpy()
        names = acts[f"{label} act"].astype("object").tolist()
        bars = ax.barh(y, values, color=[kind_colour(k) for k in kinds])
        for bar, name in zip(bars, names):
            if name is not None and name == name:
                ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {name}", va="center",
                        fontsize="small")
        ax.set_title(str(label))
        ax.set_xlabel("% of MOVE decisions")
        ax.set_xlim(0, limit)
    axes[0][0].set_yticks(y, kinds)
    axes[0][0].invert_yaxis()
    if not len(acts):
        _no_data(axes[0][0], "no MOVE decisions")
    _kind_legend(fig, kinds)
    fig.suptitle("MOVE decisions per act, side by side, aligned by kind")
    return fig


def write_compare_plots(nodes: pd.DataFrame, acts: pd.DataFrame, lmr_by_phase: pd.DataFrame,
                        labels: Sequence[str], directory: str | os.PathLike,
                        image_format: str = "png") -> list[Path]:
    """``compare --plot DIR``: node_ratio, acts and lmr_phase charts (``lmr_by_phase``: a ``side`` column, a
    ``phase`` column, ``admission_pct``); colours by side in input order."""
    out = _directory(directory)
    colours = engine_colours(labels)
    return [_saved(node_ratio_figure(nodes, labels, colours), out / f"node_ratio.{image_format}"),
            _saved(compare_acts_figure(acts, labels), out / f"acts.{image_format}"),
            _saved(lmr_phase_figure(lmr_by_phase, colours, side="side"), out / f"lmr_phase.{image_format}")]
