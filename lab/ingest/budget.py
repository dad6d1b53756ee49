"""One byte budget per upload: every byte that decoding produces (unzipped members at any nesting level,
`attachment://` expansions) is counted against one limit, so a small upload cannot grow past it.

    budget = ByteBudget(limit=256 * 2**20, stored=len(upload), ratio=50, floor=16 * 2**20)
    budget.spend(len(chunk), what="zip member big.json", file="run.zip")   # raises BudgetExceeded past the limit

Two limits, the tighter one applies: the absolute `limit`, and the ratio limit, `ratio` x the bytes actually
uploaded (`stored`, never less than `floor`). The ratio is what refuses a 300 KB archive that would unpack to
300 MB after 15 MB of work instead of after 256 MB of it; the refusal names which limit it crossed.

Counting happens before (or while, for zip members read in chunks) the bytes are produced, so refusing an
upload never needs its expansion in memory. Declared sizes are used only to refuse early, never trusted.
"""

from __future__ import annotations

from dataclasses import dataclass


class BudgetExceeded(Exception):
    """Decoding would produce more bytes than the upload's budget; answered as 413 `too_large`."""

    def __init__(self, reason: str, *, file: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.file = file


@dataclass
class ByteBudget:
    """Bytes produced so far (`spent`) against `limit`; shared by every level of one upload's decoding."""

    limit: int
    spent: int = 0
    stored: int = 0  # bytes of the upload as it came; the ratio limit is relative to them
    ratio: float = 0.0  # expanded / stored at most; 0 for no ratio limit
    floor: int = 0  # the ratio limit is never below this many bytes (a 2 KB upload may still expand to a few MB)

    def __post_init__(self) -> None:
        assert self.limit > 0, f"a byte budget needs a positive limit, got {self.limit}"
        assert self.ratio >= 0 and self.stored >= 0 and self.floor >= 0, (
            f"bad ratio limit {self.ratio} x {self.stored} (floor {self.floor})"
        )

    @property
    def cap(self) -> int:
        """The bytes decoding may produce: the tighter of the absolute and the ratio limit."""
        if not self.ratio:
            return self.limit
        return min(self.limit, max(self.floor, int(self.ratio * self.stored)))

    @property
    def which(self) -> str:
        if self.cap < self.limit:
            return f"the expansion ratio limit: {self.ratio:g} x the {self.stored} bytes uploaded, at least {self.floor}"
        return "the expansion limit"

    @property
    def left(self) -> int:
        return self.cap - self.spent

    def spend(self, size: int, *, what: str, file: str = "") -> None:
        """Count `size` more produced bytes; past the limit, raise before the caller builds them."""
        assert size >= 0, f"cannot spend {size} bytes"
        if size > self.left:
            raise BudgetExceeded(
                f"{what} would expand the upload to more than {self.cap} bytes ({self.which}; {self.spent} already used)", file=file
            )
        self.spent += size

    def check_declared(self, size: int, *, what: str, file: str = "") -> None:
        """Refuse at once what claims to be too big; a claim within budget is still counted as it is read."""
        if size > self.left:
            raise BudgetExceeded(
                f"{what} unpacks to {size} bytes; at most {self.left} of the {self.cap} bytes of {self.which} are left", file=file
            )
