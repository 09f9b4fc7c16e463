"""PNG charts for ``--plot DIR`` (matplotlib, Agg backend: no display needed).

* ``acts.png``: act breakdown per engine (% of MOVE decisions, horizontal bars);
* ``ebf_iter.png``: EBF by iteration, sqrt(N(d)/N(d-2)), one line per engine;
* ``lmr_phase.png``: LMR admission (% of MOVE decisions) per engine and phase.

Each function takes the report frames it draws and returns the file written.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from treediff.store.files import atomic_output, write_error


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    """Save atomically (a temporary PNG beside the target, then a rename)."""
    with atomic_output(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    return path


def plot_acts(acts: pd.DataFrame, path: Path) -> Path:
    """Horizontal bars: % of MOVE decisions per act, one panel per engine."""
    plt = _pyplot()
    engines = list(dict.fromkeys(acts["engine"].astype("object")))
    fig, axes = plt.subplots(1, max(len(engines), 1), figsize=(4.5 * max(len(engines), 1), 4), squeeze=False)
    for ax, engine in zip(axes[0], engines):
        part = acts[acts["engine"].astype("object") == engine].sort_values("pct_of_moves")
        ax.barh(part["act"].astype(str), part["pct_of_moves"])
        ax.set_title(str(engine))
        ax.set_xlabel("% of MOVE decisions")
    fig.suptitle("MOVE decisions per act")
    try:
        return _save(fig, path)
    finally:
        plt.close(fig)


def plot_ebf_iter(ebf_iter: pd.DataFrame, path: Path) -> Path:
    """Lines: sqrt(N(d)/N(d-2)) against iteration d, one per engine."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    data = ebf_iter.dropna(subset=["ebf_iter"])
    for engine, part in data.groupby(data["engine"].astype("object"), sort=False):
        ax.plot(part["iter"], part["ebf_iter"], marker="o", label=str(engine))
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration d (plies)")
    ax.set_ylabel("sqrt(N(d) / N(d-2))")
    ax.set_title("EBF by iteration")
    if len(data):
        ax.legend()
    else:
        ax.text(0.5, 0.5, "no search has iterations d and d-2", ha="center", va="center", transform=ax.transAxes)
    try:
        return _save(fig, path)
    finally:
        plt.close(fig)


def plot_lmr_phase(lmr: pd.DataFrame, path: Path) -> Path:
    """Grouped bars: LMR admission % per phase, one bar per engine."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    phases = list(dict.fromkeys(lmr["phase"].astype("object").fillna("(none)")))
    engines = list(dict.fromkeys(lmr["engine"].astype("object")))
    width = 0.8 / max(len(engines), 1)
    x = np.arange(len(phases))
    for i, engine in enumerate(engines):
        part = lmr[lmr["engine"].astype("object") == engine]
        values = dict(zip(part["phase"].astype("object").fillna("(none)"), part["admission_pct"]))
        ax.bar(x + i * width, [values.get(p, np.nan) for p in phases], width, label=str(engine))
    ax.set_xticks(x + width * (len(engines) - 1) / 2, phases)
    ax.set_ylabel("LMR % of MOVE decisions")
    ax.set_title("LMR admission by phase")
    ax.legend()
    try:
        return _save(fig, path)
    finally:
        plt.close(fig)


def write_plots(acts: pd.DataFrame, ebf_iter: pd.DataFrame, lmr_by_phase: pd.DataFrame,
                directory: str | os.PathLike) -> list[Path]:
    """Write the three charts into ``directory`` (created if needed); returns the files."""
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(out, exc) from None  # a clear message naming the directory, exit 2
    return [plot_acts(acts, out / "acts.png"), plot_ebf_iter(ebf_iter, out / "ebf_iter.png"),
            plot_lmr_phase(lmr_by_phase, out / "lmr_phase.png")]
