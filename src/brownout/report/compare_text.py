"""The engines' comparison (compare.json) as text: its cells and each run's note, in one
line each, for the comparison's page and the terminal table of `brownout compare`.

scenarios/compare.py builds the rows from the runs' documents: one per measure, of a
kind (RATE, SPREAD or VERDICTS), with one cell per engine, observed or not (NOT_OBSERVED
is how the latter reads). The kinds are named here, below both the rows' builder and
their readers, which all import them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RATE, SPREAD, VERDICTS = "rate", "spread", "verdicts"
NOT_OBSERVED = "not observed"


def _num(value: float) -> str:
    if float(value).is_integer():
        return f"{value:.0f}"
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.3g}"


def cell_text(kind: str, cell: Mapping[str, Any], unit: str = "") -> str:
    """A cell as one line: `1 pass / 0 fail / 0 unknown`, `2/3 runs [0.21-0.94],
    median 5 (0-9)`, `4.2 s (3.9-5.1)`, or `not observed`."""
    if not cell.get("observed"):
        return NOT_OBSERVED
    if kind == VERDICTS:  # a verdicts cell counts the runs per verdict.json word
        return f"{cell['pass']} pass / {cell['fail']} fail / {cell['unknown']} unknown"
    spread = f"{_num(cell['median'])}{' s' if unit == 's' else ''} " \
             f"({_num(cell['min'])}-{_num(cell['max'])})"
    if kind == SPREAD:
        return f"median {spread}"
    low, high = cell["interval95"]
    return f"{cell['count']}/{cell['runs']} runs [{low:.2f}-{high:.2f}], median {spread}"


def run_note(entry: Mapping[str, Any]) -> str:
    """One run's entry (what scenarios/compare.py's `why` says of it: the expectations
    that failed, its error, why it is unknown) as text ("" for nothing to say)."""
    return "; ".join(x for x in (", ".join(entry.get("failed") or []), entry.get("error"),
                                 entry.get("unknown_reason")) if x)
