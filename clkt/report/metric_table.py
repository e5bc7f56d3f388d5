"""The report's metrics, each declared once: the table every consumer loops over.

A *pair metric* is a ratio of two sums of the contingency cells of an ordered language pair (L_train, L_test)
(`clkt.report.basics.Contingency`: A right in both, B right in L_train only, C right in L_test only, D in
neither): Overall = A/(A+B+C+D), Transfer = A/(A+B). One declaration gives

- its value on one contingency (`PairMetric.value`: None, never 0, when the denominator is 0),
- its numpy form over sums of cells (`PairMetric.ratio`: the snapshot report's bootstrap over questions, the
  leaderboard's over entities, the comparison's paired draws; NaN where undefined),
- its per-question form (`cell_indicator`: which questions count above and below the line, for the paired
  McNemar test of `clkt.report.compare`),
- its names (`key`: the field of the report's JSON and the CSV columns' prefix, `label`: the column heading),
- its "interpretable when" rule (`PairMetric.reading`: a metric that `needs_learned` is *not interpretable* for
  a pair whose train language did not learn and is left out of its means; a pair whose denominator is under
  `min_n` is *too few*).

Learn (base against injected on the same train-language questions) is declared here too (`learned`,
`learn_accuracy`, `learn_gain`): `clkt.report.learn` and the leaderboard both decide "learned" with it.

One rule per figure, whatever the view (the report, the leaderboard's JSON, CSV and page, the comparisons, the
per-domain board, the card, a result pack's metrics.json and the intake):

- **learned** (a train language of a row: target x strategy x scorer over its snapshots): `learned` on the paired
  answers (base, injected) of every training seed together: the exact McNemar on the summed gained / lost. One
  seed: the job's own test. A pair whose train language did not learn is left out of Transfer's mean everywhere,
  a result pack's included (`clkt.packs.metrics`).
- **over seeds**: every pair-level figure (Overall, Transfer) is computed per seed over the same pairs (those the
  row's learned flags keep), then averaged over the seeds (`clkt.report.seeds`); the interval widens the sampling
  one by the between-seed term.
- **intervals**: a row's bootstrap draws the entities of its own answers, snapshot by snapshot, seeded by the seed
  and the snapshot's id (`clkt.report.pooled.Draws.own`), never those of whatever else a view loaded: a filter or a
  submission beside it never moves an unchanged row's interval.
- **too few**: a Transfer pair under `MIN_CELL_N` questions (A+B); kept % under `MIN_KEPT_N` questions right before
  or about fewer than `MIN_KEPT_ENTITIES` entities (`kept_too_few`), for a cell and for a row's pooled figure alike
  (board, CSV, strategy table, report, card, pack); the open track's control split (its Learn on the fictional
  entities, `clkt.report.open_control`) under `MIN_CELL_N` questions or about fewer than `MIN_KEPT_ENTITIES`
  entities (`open_too_few`), in the report's open section and on the board's open rows alike; by the same rule an
  open-answer cell's % right: the report's in-context short answers (`clkt.report.incontext_open`) and a result
  pack's open cells (`clkt.packs.metrics.OpenCell`: its metrics.json and `clkt submit`'s lines).

The report's Table 2, `table2.csv`, `pairs.csv`, `metrics.json`, `report.md`, the size figures, the
leaderboard's rows, its CSV and page, and the comparison all loop over `PAIR_METRICS`. A new metric is one
`PairMetric(...)` added to `PAIR_METRICS` below (or `PAIR_METRICS.register(...)`, as the tests do).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CELLS",
    "HEATMAP",
    "MIN_CELL_N",
    "MIN_KEPT_ENTITIES",
    "MIN_KEPT_N",
    "OVERALL",
    "PAIR_METRICS",
    "RANK_BY",
    "TRANSFER",
    "Cells",
    "MetricConflictError",
    "MetricTable",
    "PairMetric",
    "cell_indicator",
    "cell_sum",
    "cell_sums",
    "kept_too_few",
    "learn_accuracy",
    "learn_gain",
    "learned",
    "open_too_few",
    "ratio",
]

CELLS = "ABCD"
MIN_CELL_N = 10  # a Transfer cell on fewer questions (A+B) is too small to say anything: grey, never coloured
MIN_KEPT_N = 10  # questions right before injection under which kept % reads "too few"
MIN_KEPT_ENTITIES = 2  # ... and entities: a bootstrap over one entity gives an interval of width 0, which says nothing


class Cells(Protocol):
    """A contingency: `clkt.report.basics.Contingency` (or anything with its four counts)."""

    @property
    def a(self) -> int: ...
    @property
    def b(self) -> int: ...
    @property
    def c(self) -> int: ...
    @property
    def d(self) -> int: ...


def _check(cells: str) -> str:
    if not cells or any(x not in CELLS for x in cells) or len(set(cells)) != len(cells):
        raise ValueError(f"{cells!r}: a sum of contingency cells is written as distinct letters of {CELLS!r}")
    return "".join(sorted(cells))


def cell_sum(cells: str, table: Cells) -> int:
    """The sum of the named cells of one contingency ("AB" = A+B)."""
    return sum(getattr(table, x.lower()) for x in cells)


def cell_sums(cells: str, t: np.ndarray) -> np.ndarray:
    """The sum of the named cells of contingencies stacked as (..., 4) A, B, C, D."""
    idx = [CELLS.index(x) for x in cells]
    return t[..., idx[0]] if len(idx) == 1 else t[..., idx].sum(axis=-1)


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num/den elementwise, NaN where den is 0: every metric's numpy form."""
    import numpy as np

    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def cell_indicator(cells: str, train_right: np.ndarray, test_right: np.ndarray) -> np.ndarray:
    """Per question (answered in both languages), whether it falls in one of the named cells."""
    import numpy as np

    out = np.zeros(train_right.shape, dtype=bool)
    for x in cells:
        t = train_right if x in "AB" else ~train_right
        s = test_right if x in "AC" else ~test_right
        out |= t & s
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class PairMetric:
    """A metric of a language pair: `numerator` / `denominator`, each a sum of cells (letters of "ABCD")."""

    key: str  # JSON field and CSV prefix: overall -> overall_mean, overall_ci_low, ...
    label: str  # what a heading shows: "Overall"
    numerator: str
    denominator: str
    needs_learned: bool = False  # interpretable only where the pair's train language learned
    min_n: int = 0  # a pair whose denominator is under this is "too few" (grey, never coloured)

    def __post_init__(self) -> None:
        if not self.key.isidentifier() or self.key != self.key.lower():
            raise ValueError(f"metric key {self.key!r}: a lower-case identifier (it names fields and columns)")
        object.__setattr__(self, "numerator", _check(self.numerator))
        object.__setattr__(self, "denominator", _check(self.denominator))
        if not set(self.numerator) <= set(self.denominator):
            raise ValueError(f"{self.key}: the numerator's cells must be among the denominator's (a share)")

    @property
    def definition(self) -> str:
        """`A/(A+B)`."""

        def side(cells: str) -> str:
            return cells if len(cells) == 1 else "(" + "+".join(cells) + ")"

        return f"{side(self.numerator)}/{side(self.denominator)}"

    @property
    def reads(self) -> bool:
        """Whether a pair's value needs reading (an interpretable-when rule): `pairs.csv` has a reading column."""
        return self.needs_learned or self.min_n > 0

    def n(self, table: Cells) -> int:
        """What a pair's value rests on: its denominator."""
        return cell_sum(self.denominator, table)

    def value(self, table: Cells) -> float | None:
        den = cell_sum(self.denominator, table)
        return cell_sum(self.numerator, table) / den if den else None

    def ratio(self, sums: Mapping[str, np.ndarray]) -> np.ndarray:
        """Per pair, from sums of cells keyed by their letters (`sums_of`); NaN where undefined."""
        return ratio(sums[self.numerator], sums[self.denominator])

    def reading(self, table: Cells, *, learned: bool | None) -> str:
        """`missing` (no question answered in both), `not interpretable`, `undefined` (denominator 0), `too few` or
        `ok`; `learned`: whether the pair's train language learned (None: unknown, not held against it)."""
        if cell_sum(CELLS, table) == 0:
            return "missing"
        if self.needs_learned and learned is False:
            return "not interpretable"
        den = cell_sum(self.denominator, table)
        if den == 0:
            return "undefined"
        return "too few" if den < self.min_n else "ok"


class MetricConflictError(ValueError):
    """A metric registered under a key the table already holds."""


class MetricTable:
    """The pair metrics in their order (the order of every column and JSON field)."""

    def __init__(self, metrics: tuple[PairMetric, ...]) -> None:
        self._metrics: dict[str, PairMetric] = {}
        for m in metrics:
            self.register(m)

    def register(self, metric: PairMetric) -> None:
        if metric.key in self._metrics:
            raise MetricConflictError(f"a metric {metric.key!r} is already declared")
        self._metrics[metric.key] = metric

    def unregister(self, key: str) -> None:
        del self._metrics[key]

    def __iter__(self) -> Iterator[PairMetric]:
        return iter(list(self._metrics.values()))

    def __len__(self) -> int:
        return len(self._metrics)

    def __getitem__(self, key: str) -> PairMetric:
        return self._metrics[key]

    def ordered_keys(self) -> list[str]:
        return list(self._metrics)

    def cell_sets(self) -> list[str]:
        """Every sum of cells a metric of the table reads, once each, in order of first use."""
        out: list[str] = []
        for m in self:
            for cells in (m.numerator, m.denominator):
                if cells not in out:
                    out.append(cells)
        return out

    def sums_of(self, t: np.ndarray) -> dict[str, np.ndarray]:
        """The sums the table reads, from contingencies stacked as (..., P, 4)."""
        return {cells: cell_sums(cells, t) for cells in self.cell_sets()}


OVERALL = PairMetric(key="overall", label="Overall", numerator="A", denominator="ABCD")
TRANSFER = PairMetric(key="transfer", label="Transfer", numerator="A", denominator="AB", needs_learned=True, min_n=MIN_CELL_N)
PAIR_METRICS = MetricTable((OVERALL, TRANSFER))
RANK_BY = OVERALL  # the leaderboard ranks rows by it
HEATMAP = TRANSFER  # the heatmaps (the paper's Figure 3) and a leaderboard pair's `reading` show it


# -- Learn: base against injected on the same train-language questions --------------------------------------------

def learned(*, n: int, base_correct: int, injected_correct: int, significant: Callable[[], bool]) -> bool:
    """A train language *learned* when its gain is positive and significant (exact McNemar p < `LEARN_ALPHA`
    of `clkt.report.learn`; `significant` is asked only for a positive gain); Transfer of a language that did
    not learn is not interpretable."""
    return n > 0 and injected_correct > base_correct and significant()


def learn_accuracy(correct: int, n: int) -> float | None:
    return correct / n if n else None


def learn_gain(*, base_correct: int, injected_correct: int, n: int) -> float | None:
    return (injected_correct - base_correct) / n if n else None


def open_too_few(*, n: int, entities: int) -> bool:
    """Whether an open-answer figure on `n` questions about `entities` entities is too few to show (its counts shown,
    no rate): the one rule of the open control split's Learn (the report's cell, the board's pooled figure), the
    in-context short answers' cells and a result pack's open cells."""
    return n < MIN_CELL_N or entities < MIN_KEPT_ENTITIES


def kept_too_few(*, base_right: int, entities: int, min_n: int = MIN_KEPT_N) -> bool:
    """Whether kept % (kept / right before) on `base_right` questions right before, about `entities` entities, is
    too few to show: the one rule of a cell, a row's pooled figure and a pack's cell."""
    return base_right < min_n or entities < MIN_KEPT_ENTITIES
