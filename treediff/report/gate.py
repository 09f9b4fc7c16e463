"""``compare --fail-if EXPR``: a regression gate over compare's summary figures.

The figures (each a number, or undefined):

* every numeric column of compare's ``(all)`` row (of the one position's row when
  only one position was compared), under its column name:
  ``nodes_a``, ``nodes_b``, ``ratio`` (A / B, node sums over the paired
  positions at their common depth), ``depth_a``, ``depth_b``, ``ebf_a``,
  ``ebf_b``, ``lmr_pct_a``, ``lmr_pct_b``, ``skip_pct_a``, ``skip_pct_b``
  (with three or more inputs ``ratio_b``, ``ratio_c``, ... and ``nodes_c``, ...);
* ``geomean_ratio``: the ``(geomean)`` row's ratio (several paired positions);
* ``positions``: how many positions were paired;
* ``delta`` and ``shared_residual``: the divergence total (aligned
  iterations), when compare aligned the trees (``--top`` > 0).

EXPR is :mod:`treediff.report.expr`'s grammar over these names (comparisons
of names and numbers, ``and``/``or``/``not``, parentheses; no arithmetic), e.g.
``ratio > 1.05 or ebf_a > ebf_b``.  A figure the expression uses that is undefined for
this comparison is an error, never a silent pass.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from treediff.model.errors import InputError
from treediff.report.compare import LETTERS, Comparison
from treediff.report.expr import Expr, parse

#: Per-side columns of compare's nodes table (suffix ``_<letter>``).
_SIDE_COLUMNS = ("nodes", "depth", "ebf", "lmr_pct", "skip_pct")
_EXTRA = ("geomean_ratio", "positions", "delta", "shared_residual")


def figure_names(sides: int = 2) -> list[str]:
    """The names ``--fail-if`` accepts for a comparison of ``sides`` inputs."""
    letters = LETTERS[:sides]
    names = [f"{c}_{x}" for c in _SIDE_COLUMNS for x in letters]
    names += ["ratio"] if sides == 2 else [f"ratio_{x}" for x in letters[1:]]
    return names + list(_EXTRA)


def parse_gate(text: str, sides: int = 2) -> Expr:
    """Parse ``--fail-if`` before anything is read (an error names the offending position)."""
    return parse(text, figure_names(sides), what="--fail-if")


def summary_figures(comparison: Comparison) -> dict[str, float | None]:
    """Compare's summary figures by name (module docstring); None where undefined."""
    frame = comparison.nodes
    figures: dict[str, float | None] = {}

    def number(value: object) -> float | None:
        try:
            out = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        return None if math.isnan(out) else out

    labels = frame["position"].astype(str).tolist() if "position" in frame.columns else []
    positions = [p for p in labels if p not in ("(all)", "(geomean)")]
    # One position has no (all) row: its own row is the summary.
    total_row = labels.index("(all)") if "(all)" in labels else (0 if len(positions) == 1 else None)
    if total_row is not None:
        row = frame.iloc[total_row]
        for column in frame.columns:
            if column not in ("position", "phase"):
                figures[str(column)] = number(row[column])
    if "(geomean)" in labels:
        row = frame.iloc[labels.index("(geomean)")]
        ratios = [c for c in frame.columns if str(c) == "ratio" or str(c).startswith("ratio_")]
        figures["geomean_ratio"] = number(row[ratios[0]]) if ratios else None
    elif total_row is not None:
        # No (geomean) row: one paired position, whose ratio is the geometric mean of one ratio.
        figures["geomean_ratio"] = figures.get("ratio", figures.get("ratio_b"))
    figures["positions"] = float(len(positions))
    if comparison.divergence_total is not None and len(comparison.divergence_total):
        total = comparison.divergence_total.iloc[0]
        figures["delta"] = number(total.get("delta"))
        figures["shared_residual"] = number(total.get("shared_residual"))
    return figures


@dataclass(frozen=True)
class GateResult:
    failed: bool
    message: str   #: the condition and the figures it read, e.g. "ratio > 1.05: ratio = 1.987"


def evaluate_gate(expr: Expr, text: str, comparison: Comparison) -> GateResult:
    """Whether ``--fail-if`` holds for ``comparison``; an undefined figure it reads is an InputError."""
    figures = summary_figures(comparison)
    used = sorted(expr.names())
    undefined = [name for name in used if figures.get(name) is None]
    if undefined:
        raise InputError(f"--fail-if {text}: {', '.join(undefined)} undefined for this comparison"
                         f"{_why(undefined)}; the gate cannot be decided")
    shown = ", ".join(f"{name} = {_fmt(figures[name])}" for name in used)
    failed = expr.evaluate(figures) is True
    return GateResult(failed, f"{text}: {shown}")


def _why(names: Sequence[str]) -> str:
    if any(n in ("delta", "shared_residual") for n in names):
        return " (delta and shared_residual need the alignment: --top > 0 and two inputs)"
    return " (e.g. ebf across different depths, or no paired position)"


def _fmt(value: float | None) -> str:
    if value is None:
        return "undefined"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:.4g}"
