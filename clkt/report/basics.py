"""What the snapshot report and the leaderboard share and a light reader needs without numpy: the contingency of
a language pair, the bootstrap's default draws and the smallest Transfer cell worth colouring
(`clkt.report.metrics` and `clkt.report.data` re-export them)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["BOOTSTRAP_SAMPLES", "MIN_CELL_N", "Contingency"]

BOOTSTRAP_SAMPLES = 1000
MIN_CELL_N = 10  # a Transfer cell on fewer questions (A+B) is too small to say anything: grey, never coloured


class Contingency(BaseModel):
    """A/B/C/D of a language pair: right in both, only in the train language, only in the test one, in neither."""

    model_config = ConfigDict(frozen=True)

    a: int = 0
    b: int = 0
    c: int = 0
    d: int = 0

    @property
    def n(self) -> int:
        return self.a + self.b + self.c + self.d

    @property
    def overall(self) -> float | None:
        return self.a / self.n if self.n else None

    @property
    def transfer(self) -> float | None:
        return self.a / (self.a + self.b) if self.a + self.b else None
