"""Small statistics shared by the environments' calibrations (pure Python).

ci95([0.61, 0.70, 0.66])     # half-width of the 95% interval of the mean, Student's t
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path

# Student's t 97.5% quantiles by degrees of freedom: ten seeds are too few for the normal 1.96.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
         14: 2.145, 19: 2.093, 29: 2.045, 39: 2.023, 79: 1.99}  # fmt: skip


def ci95(values: Sequence[float]) -> float:
    """Half-width of the 95% confidence interval of the mean (Student's t); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    # The tabled quantile at or below the degrees of freedom: never narrower than the exact interval.
    t = _T975[max(k for k in _T975 if k <= len(values) - 1)]
    return t * statistics.stdev(values) / math.sqrt(len(values))


def write_between_markers(path: Path, start: str, end: str, body: str) -> None:
    """Replace what lies between the `start` and `end` markers of the file at `path` with `body` (a calibration's
    table in its README); the markers must be there."""
    text = path.read_text(encoding="utf-8")
    head, found_start, rest = text.partition(start)
    _, found_end, tail = rest.partition(end)
    assert found_start and found_end, f"{path} has no {start} ... {end} markers"
    path.write_text(f"{head}{start}\n{body}\n{end}{tail}", encoding="utf-8")
