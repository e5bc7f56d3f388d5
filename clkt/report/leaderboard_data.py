"""The leaderboard's data: what `clkt leaderboard --json` prints and the page shows (see
`clkt.report.leaderboard` for the pooled rows, `clkt.report.compare` for the paired comparison)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from clkt.errors import UserError
from clkt.report._metric_fields import Estimate, PerMetric
from clkt.report.basics import BOOTSTRAP_SAMPLES, MIN_CELL_N, Contingency
from clkt.report.probed import ProbeVerdicts
from clkt.snapshots.period import Cadence

__all__ = [
    "MIN_QUESTIONS",
    "CellCheck",
    "CompareLine",
    "Comparison",
    "ControlEstimate",
    "Estimate",
    "LeaderRow",
    "Leaderboard",
    "LeaderboardError",
    "LeaderboardQuery",
    "LearnEstimate",
    "OpenReproduction",
    "PairCell",
    "Reproduction",
    "SnapshotColumn",
    "StrategyComparison",
    "SubmittedPackInfo",
    "WindowInfo",
]

MIN_QUESTIONS = 50  # a row (or a comparison) on fewer distinct test questions is `too_few`: shown, never ranked


class LeaderboardError(UserError):
    """A leaderboard query that cannot be answered (one line naming what is wrong)."""


@dataclass(frozen=True, kw_only=True)
class LeaderboardQuery:
    """A leaderboard's question: `clkt leaderboard`'s options, the page's form (checked by `clkt.report.window`)."""

    spec: str
    cadence: Cadence = "monthly"
    rolling_days: int = 30
    period_from: str | None = None
    period_to: str | None = None
    strategy: str | None = None
    scorer: str | None = None
    targets: tuple[str, ...] = ()  # only these targets' rows (every target when empty)
    compare: tuple[str, str] | None = None
    compare_strategies: tuple[str, str] | None = None  # two strategies of one target (`clkt.report.strategy_compare`)
    languages: tuple[str, ...] = ()  # the order of languages (the spec's); others follow, sorted
    seed: int = 0
    min_questions: int = MIN_QUESTIONS
    samples: int = BOOTSTRAP_SAMPLES
    names: tuple[str, str] = ("--from", "--to")  # how the two period bounds are named in messages
    unverified: bool = False  # list the submitted rows not reproduced here apart, unranked (`clkt.report.verified_ranks`)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class LearnEstimate(_Frozen):
    """Learn pooled over the train languages: base against injected on the same train-language questions."""

    n: int
    base: float | None
    injected: Estimate
    gain: Estimate
    gained: int
    lost: int
    p_value: float  # exact McNemar on the paired answers
    learned: bool


class ControlEstimate(LearnEstimate):
    """The open track's control split on a row (`clkt.report.open_control`): Learn on the fictional entities (injected
    with the real ones: the positive control of injection), pooled over the row's jobs, its intervals over those
    entities; `too_few` under the rule of `clkt.report.metric_table.open_too_few` (shown as such, never bare)."""

    entities: int
    too_few: bool


class SnapshotColumn(PerMetric):
    snapshot_id: str
    period: str
    status: str  # "ok", "not valid" (no ready snapshot_target row for the target), "no results"
    questions: int = 0
    entities: int = 0
    metrics: dict[str, Estimate] = Field(default_factory=dict)  # per metric of the table (JSON: "overall", ...)
    learn_gain: Estimate = Estimate(value=None)


class PairCell(PerMetric):
    train_lang: str
    test_lang: str
    table: Contingency
    metrics: dict[str, Estimate] = Field(default_factory=dict)  # per metric of the table (JSON: "overall", ...)
    reading: str  # the heatmap metric's (Transfer's): ok, missing, undefined, not interpretable, too few


class CellCheck(_Frozen):
    """One (train language, scorer, variant, test language) cell of a re-run: the pack's letters on the drawn
    questions against the re-run's (`clkt.packs.verdict`)."""

    train_lang: str
    scorer: str
    variant: str
    lang: str
    agreed: int
    checked: int
    passed: bool


class OpenReproduction(_Frozen):
    """The open rows of a re-run (`clkt.packs.verdict.judge_open`): the pack's open answers re-generated here with
    its prompt (`prompt_version`, greedy), the normaliser's verdicts of both compared on the `questions` open questions
    drawn by the re-run's nonce, `agreed` of `checked` answers, cell by cell (`cells`, each at the threshold)."""

    prompt_version: str
    checked: int
    agreed: int
    questions: int
    rate: float  # agreed / checked
    cells: list[CellCheck] = Field(default_factory=list)
    failed: str | None = None  # the first open cell under the threshold (None: the open rows reproduced)


class Reproduction(_Frozen):
    """`clkt submit --reproduce`: a submitted pack's answers re-run on this service's engine, letter against letter
    (and, with open answers, verdict against verdict: `open`)."""

    checked: int  # answers re-run here (every train language, scorer, variant and language of the sampled questions)
    agreed: int  # of them, the same letter as the pack's
    questions: int  # test questions sampled
    rate: float  # agreed / checked
    threshold: float  # the rate at or above which the pack counts as reproduced
    reproduced: bool
    engine: str  # the GPU engine the jobs ran on: "local" or "ray" (`[gpu] engine`, or `--engine`)
    engine_address: str | None = None  # the Ray cluster's address (`gpu.ray_address`); None on the local engine
    ran_on: list[str] = Field(default_factory=list)  # where each job re-run ran ("local", "ray:<node>"); read back: none
    at: str  # ISO time of the re-run
    # the verdict by cell (`clkt.packs.verdict`): the draw's nonce (fresh at the re-run; repeats the draw), each cell,
    # |pack - re-run| of Learn, Overall and Transfer, and the first cell or figure that failed (None: reproduced).
    # Re-runs stored before carry none of these (their verdict was one pooled agreement)
    nonce: str | None = None
    cells: list[CellCheck] = Field(default_factory=list)
    deltas: dict[str, float] = Field(default_factory=dict)
    tolerance: float | None = None
    failed: str | None = None
    # the open answers' comparison (None: the pack had none, declared no prompt version, or was re-run before open
    # answers were compared): the pack's open rows rank only where it ran and the whole pack reproduced
    open: OpenReproduction | None = Field(default=None, exclude_if=lambda v: v is None)


class SubmittedPackInfo(_Frozen):
    """A submitted pack pooled in a row: where its answers came from (its manifest, as verified by `clkt submit`)."""

    pack_sha256: str
    snapshot_id: str
    target: str  # the target's name in the pack
    model: str  # as given to `clkt evaluate`: a local path, a Hub id, embedded:<name>
    model_revision: str | None = None
    weights_sha256: str | None = None
    kind: str
    cutoff: str
    strategy: str
    train_langs: list[str]
    clkt_version: str
    format_version: int
    environment: dict[str, object] = Field(default_factory=dict)
    overridden: dict[str, object] = Field(default_factory=dict)  # settings the pack ran with other than its config's
    submitted_at: str
    claims_match: bool  # the pack's own metrics.json agreed with its predictions (the board uses the predictions)
    reproduction: Reproduction | None = None
    probe: ProbeVerdicts | None = None  # the probe's verdicts judged at intake (None: the pack carried no answers)
    open_answers: bool = Field(default=False, exclude_if=lambda v: not v)  # it carried open answers (format 2)


class LeaderRow(PerMetric):
    target: str
    strategy: str
    scorer: str
    snapshots: int  # valid snapshots with results
    questions: int  # distinct test questions
    entities: int
    train_langs: list[str]
    learned_langs: list[str]  # the train languages that learned (pooled): their pairs count in Transfer
    metrics: dict[str, Estimate] = Field(default_factory=dict)  # per metric of the table (JSON: "overall", ...)
    learn: LearnEstimate
    not_interpretable: int  # pairs left out of Transfer (their train language was not learned)
    too_few: bool
    rank: int | None = None
    tied: bool = False
    pairs: list[PairCell] = Field(default_factory=list)
    per_snapshot: list[SnapshotColumn] = Field(default_factory=list)
    # kept % (`clkt.report.locality.pooled_kept`): of the locality questions its jobs' base model answered right, the
    # share still right after injection; n = those questions. Absent (not in the JSON) without a locality split
    kept: Estimate | None = Field(default=None, exclude_if=lambda v: v is None)
    # an open row's control split (`clkt.report.open_control`); absent (not in the JSON) where its jobs answered none
    control: ControlEstimate | None = Field(default=None, exclude_if=lambda v: v is None)
    track: str = "run here"  # "run here" (this service's GPU queue) or "submitted" (result packs, `clkt submit`)
    submissions: list[SubmittedPackInfo] = Field(default_factory=list)  # a submitted row's packs, with provenance
    # a submitted row: "reproduced" (re-run here, agreement at or above the threshold), "flagged" (below it) or
    # "not reproduced" (not re-run yet); `agreement` over every answer re-run of its packs
    verified: str = ""
    agreement: float | None = None
    probe: str = ""  # a submitted row: "probed here (k of n excluded)" or "not probed here" (clkt.report.probed)
    # several training seeds (`spec.seeds`; None: one, and the row reads as it always did): the seeds, and each
    # metric's value per seed; the metrics are then pooled over them (`clkt.report.seeds`: mean, between-seed
    # std, an interval over entities and seeds)
    seeds: list[int] | None = None
    per_seed: dict[str, dict[int, float | None]] | None = None

    HIDDEN_WHEN_NONE = ("seeds", "per_seed")


class WindowInfo(_Frozen):
    snapshot_id: str
    period: str


class CompareLine(_Frozen):
    """One metric of a paired comparison: both targets on the same questions, their difference and its test."""

    metric: str  # "Overall", "Transfer" or "Learn"
    scope: str  # "all pairs", "into <lang>" (the pairs whose test language it is), "train language"
    a: Estimate
    b: Estimate
    diff: Estimate  # a - b, with the paired bootstrap interval
    a_only: int  # McNemar's discordant units: right for a only ...
    b_only: int  # ... and for b only
    p_value: float | None  # exact McNemar; None when there is no unit
    verdict: str  # the better target's name, "tie" (the interval holds 0), "too few" or "n/a"


class Comparison(_Frozen):
    """Two targets compared on the questions valid for both (see `clkt.report.compare`)."""

    target_a: str
    target_b: str
    strategy: str
    scorer_a: str
    scorer_b: str
    snapshots: list[str]  # valid for both, with both targets' results
    entities: int
    questions: int  # distinct test questions answered by both
    question_pairs: int  # question x language-pair units of Overall
    too_few: bool
    lines: list[CompareLine] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class StrategyComparison(_Frozen):
    """Two strategies of one target compared on the questions valid for both (see `clkt.report.strategy_compare`):
    `lines` as a target comparison's (a: `strategy_a`, b: `strategy_b`), `learn` base -> injected of each."""

    target: str
    strategy_a: str
    strategy_b: str
    scorer: str
    snapshots: list[str]  # valid for the target, with both strategies' results
    entities: int
    questions: int  # distinct test questions answered under both strategies
    question_pairs: int  # question x language-pair units of Overall
    too_few: bool
    learn: list[LearnEstimate] = Field(default_factory=list)  # strategy_a's, then strategy_b's, on the same questions
    # each strategy's own kept % (its row's, over its jobs' locality questions: not paired); None where it has none
    kept: list[Estimate | None] = Field(default_factory=list, exclude_if=lambda v: not any(e is not None for e in v))
    lines: list[CompareLine] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class Leaderboard(_Frozen):
    spec: str
    cadence: str
    window_from: str
    window_to: str
    snapshots: list[WindowInfo]
    languages: list[str]
    rows: list[LeaderRow]  # the multiple-choice scorers' rows
    # the open track's rows (`clkt.report.open_board`: its layers open-normaliser and open-jury), apart from `rows`:
    # the same figures by the same rules, never pooled, ranked or compared with them; absent from the JSON when none
    open_rows: list[LeaderRow] = Field(default_factory=list, exclude_if=lambda v: not v)
    comparison: Comparison | None = None
    strategy_comparison: StrategyComparison | None = None
    min_questions: int = MIN_QUESTIONS
    min_cell_n: int = MIN_CELL_N
    bootstrap: int = BOOTSTRAP_SAMPLES
    seed: int = 0
    notes: list[str] = Field(default_factory=list)


