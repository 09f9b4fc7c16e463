"""PNG charts of the search-quality tables for ``report --plot DIR`` (matplotlib, Agg backend).

* ``cutoff_mn.png``: share of move cutoffs by the cutoff move's number (mn 1, 2, 3-4, 5+), per engine;
* ``fh_depth.png``: fail-high rate of move tries by depth (whole plies), Wilson 95 % error bars, per engine;
* ``residual_iter.png``: mean residual depth (plies) by iteration of the moves decided in 3+ iterations.

Each function takes the report frames it draws (the ``cutoff_mn``, ``fh`` with ``--bucket depth``, and
``residual_iter`` sections grouped by engine) and returns the file written.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from treediff.render.plots import _pyplot, _save
from treediff.store.files import write_error

_MN_COLUMNS = (("mn1_pct", "1"), ("mn2_pct", "2"), ("mn3_4_pct", "3-4"), ("mn5p_pct", "5+"))


def _finish(plt, fig, ax, path: Path, has_data: bool, empty: str) -> Path:
    """The legend (or ``empty`` written across an empty chart), then the file; the figure is closed."""
    if has_data:
        ax.legend()
    else:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)
    try:
        return _save(fig, path)
    finally:
        plt.close(fig)


def plot_cutoff_mn(cutoff_mn: pd.DataFrame, path: Path) -> Path:
    """Grouped bars: % of move cutoffs per mn band, one bar per engine."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    engines = list(dict.fromkeys(cutoff_mn["engine"].astype("object")))
    width = 0.8 / max(len(engines), 1)
    x = np.arange(len(_MN_COLUMNS))
    for i, engine in enumerate(engines):
        row = cutoff_mn[cutoff_mn["engine"].astype("object") == engine].iloc[0]
        ax.bar(x + i * width, [row[c] for c, _ in _MN_COLUMNS], width, label=str(engine))
    ax.set_xticks(x + width * (max(len(engines), 1) - 1) / 2, [label for _, label in _MN_COLUMNS])
    ax.set_xlabel("mn of the cutoff move")
    ax.set_ylabel("% of move cutoffs")
    ax.set_title("Cutoff share by move number")
    return _finish(plt, fig, ax, path, bool(engines), "no cutoffs")


def plot_fh_depth(fh: pd.DataFrame, path: Path) -> Path:
    """Lines with Wilson 95 % error bars: fail-high % of move tries by depth, one line per engine."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    data = fh[fh["depth"].notna()] if "depth" in fh else fh.iloc[:0]
    for engine, part in data.groupby(data["engine"].astype("object"), sort=False):
        depth = part["depth"].astype(float).to_numpy()
        rate = part["fh_pct"].to_numpy(dtype=float)
        err = np.vstack([rate - part["fh_lo"].to_numpy(dtype=float), part["fh_hi"].to_numpy(dtype=float) - rate])
        ax.errorbar(depth, rate, yerr=err, marker="o", capsize=3, label=str(engine))
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("depth (plies)")
    ax.set_ylabel("fail-high % of move tries")
    ax.set_title("Fail-high rate by depth (Wilson 95 %)")
    return _finish(plt, fig, ax, path, len(data) > 0, "no move tries")


def plot_residual_iter(residual_iter: pd.DataFrame, path: Path) -> Path:
    """Lines: mean residual depth against iteration, one per engine."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for engine, part in residual_iter.groupby(residual_iter["engine"].astype("object"), sort=False):
        ax.plot(part["iteration"].astype(float), part["mean_residual"].astype(float), marker="o", label=str(engine))
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration (plies)")
    ax.set_ylabel("mean residual depth (plies)")
    ax.set_title("Residual depth by iteration (moves decided in 3+ iterations)")
    return _finish(plt, fig, ax, path, len(residual_iter) > 0, "no move decided in 3 or more iterations")


def write_analytics_plots(cutoff_mn: pd.DataFrame, fh_by_depth: pd.DataFrame, residual_iter: pd.DataFrame,
                          directory: str | os.PathLike) -> list[Path]:
    """Write the three charts into ``directory`` (created if needed); returns the files."""
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(out, exc) from None
    return [plot_cutoff_mn(cutoff_mn, out / "cutoff_mn.png"), plot_fh_depth(fh_by_depth, out / "fh_depth.png"),
            plot_residual_iter(residual_iter, out / "residual_iter.png")]
