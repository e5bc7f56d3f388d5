"""What the snapshot report and the leaderboard share and a light reader needs without numpy: the contingency of
a language pair, the bootstrap's default draws and the smallest Transfer cell worth colouring
(`clkt.report.metrics` and `clkt.report.data` re-export them). The metrics over a contingency are declared
in `clkt.report.metric_table`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from clkt.report.metric_table import MIN_CELL_N, OVERALL, PAIR_METRICS, TRANSFER

__all__ = ["BOOTSTRAP_SAMPLES", "MIN_CELL_N", "Contingency", "ci1_text"]

BOOTSTRAP_SAMPLES = 1000


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

    def metric(self, key: str) -> float | None:
        """The value of a metric of `clkt.report.metric_table.PAIR_METRICS` (None when undefined)."""
        return PAIR_METRICS[key].value(self)

    @property
    def overall(self) -> float | None:
        return OVERALL.value(self)

    @property
    def transfer(self) -> float | None:
        return TRANSFER.value(self)


def ci1_text(ci: tuple[float, float] | None) -> str:
    """An interval to the tenth of a point, as Table 2, the leaderboard and the in-context sections write it
    (` [40.0, 80.0]`; empty without one)."""
    return "" if ci is None else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
