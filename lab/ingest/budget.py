"""One byte budget per upload: every byte that decoding produces (unzipped members at any nesting level,
`attachment://` expansions) is counted against one limit, so a small upload cannot grow past it.

    budget = ByteBudget(limit=256 * 2**20)
    budget.spend(len(chunk), what="zip member big.json", file="run.zip")   # raises BudgetExceeded past the limit

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

    def __post_init__(self) -> None:
        assert self.limit > 0, f"a byte budget needs a positive limit, got {self.limit}"

    @property
    def left(self) -> int:
        return self.limit - self.spent

    def spend(self, size: int, *, what: str, file: str = "") -> None:
        """Count `size` more produced bytes; past the limit, raise before the caller builds them."""
        assert size >= 0, f"cannot spend {size} bytes"
        if size > self.left:
            raise BudgetExceeded(
                f"{what} would expand the upload to more than {self.limit} bytes (the expansion limit; {self.spent} already used)",
                file=file,
            )
        self.spent += size

    def check_declared(self, size: int, *, what: str, file: str = "") -> None:
        """Refuse at once what claims to be too big; a claim within budget is still counted as it is read."""
        if size > self.left:
            raise BudgetExceeded(
                f"{what} unpacks to {size} bytes; at most {self.left} of the {self.limit}-byte expansion limit are left", file=file
            )
