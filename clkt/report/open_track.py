"""The report's open-answer section (issue 47): the short-answer track, the same benchmark, never pooled with the MCQs.

The stored open answers (`storage.open_results`: one verdict per job x open question x language x variant, by the
normaliser layer) become `clkt.report.metrics.Outcome`s (public qid and entity id, correct = CORRECT) and go
through the very functions the MCQ track's rows go through: Learn (`clkt.report.learn.learn_tests`: base against
injected in the train language, exact McNemar, intervals from the bootstrap over entities), the contingency A/B/C/D
of every ordered pair (`pair_metrics`), Overall and Transfer with their entity-bootstrap intervals (`summarize`,
`PAIR_METRICS`; a pair of a job that did not learn is left out of Transfer, as for the MCQs), and Learn on the
control split (its fictional entities, injected with the real ones: the positive control; intervals from a bootstrap
over those entities, the board's open rows' figure: `clkt.report.open_control`). A group whose jobs ran with several training seeds reads Overall and Transfer
pooled over its seeds by the MCQ report's rule (`clkt.report.seed_report.table2`: the leaderboard row's figure,
its interval widened by the between-seed term), and the section lists its seed rows (`seeds`). Apart from those:

- **answered in another language**: per job group, variant and test language, the share of answers the normaliser
  found in another language (INCORRECT, counted apart), with n and its interval over entities;
- **the paired view**: per job and variant, the same fact asked both ways (the MCQ whose slot is the open
  question's fact, e.g. `director` and `film.director`, or the slot `MCQ_SLOT` names where the two are spelled
  apart, about the same entity in the same language): how often
  the MCQ verdict and the open verdict agree, with n, the four cells and the interval over entities;
- **locality** (where the snapshot's locality split has open questions): kept % of what the target answered right
  before injection about entities it already knew, per job and test language, by the MCQ locality's definition
  (`clkt.report.open_locality`);
- **the jury** (where one is configured and has graded): its own figure, apart (`clkt.report.open_jury`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence

from pydantic import BaseModel, ConfigDict, Field

from clkt.openqa.same_fact import MCQ_SLOT, mcq_slot
from clkt.report.basics import BOOTSTRAP_SAMPLES
from clkt.report.clustered import EntityDraws, accuracy_interval, entity_draws
from clkt.report.leaderboard_data import LeaderRow
from clkt.report.learn import LearnTest, learn_tests
from clkt.report.locality import KeptLang
from clkt.report.metrics import ALL_DOMAINS, Outcome, PairMetrics, SummaryCell, pair_metrics, summarize
from clkt.report.open_control import ControlFigure, control_learn
from clkt.report.open_jury import OpenJury, open_jury
from clkt.report.open_locality import open_kept
from clkt.report.seed_report import SeedTables, table2
from clkt.snapshots.ids import stable_entity_id
from storage.gpu_jobs import JobResultRow
from storage.open_judgements import JuryRow
from storage.open_results import GRADES, OpenResultRow

__all__ = ["MCQ_SLOT", "OPEN_TITLE", "OpenAgreement", "OpenTrack", "OtherLanguage", "mcq_slot", "open_outcomes",
           "open_track"]

OPEN_TITLE = "Open answers (short-answer track)"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class OtherLanguage(_Frozen):
    """The share of a group's answers in one test language that were in another language."""

    model: str
    strategy: str
    train_lang: str
    variant: str
    lang: str
    n: int
    other: int
    share: float
    ci: tuple[float, float] | None = None  # over entities


class OpenAgreement(_Frozen):
    """One job's MCQ and open verdicts on the same facts (entity, slot, language), for one variant."""

    job_id: int
    model: str
    strategy: str
    train_lang: str
    variant: str
    n: int
    both_right: int
    mcq_only: int
    open_only: int
    neither: int
    ci: tuple[float, float] | None = None  # of the agreement, over entities

    @property
    def agree(self) -> int:
        return self.both_right + self.neither

    @property
    def rate(self) -> float | None:
        return self.agree / self.n if self.n else None


class OpenTrack(_Frozen):
    scorers: list[str]
    answers: int  # stored open answers read (test and control splits, base and injected)
    # of them, those the normaliser could not score (UNSCORABLE: left out of every figure, never right, counted here)
    unscorable: int = 0
    learn: list[LearnTest]
    # Learn on the control split's fictional entities, per job group, intervals over them (`clkt.report.open_control`)
    control_learn: list[ControlFigure]
    table2: list[SummaryCell]
    pairs: list[PairMetrics]
    other_language: list[OtherLanguage]
    agreement: list[OpenAgreement]
    # the groups run with several seeds: their rows pooled over the seeds (`clkt.report.seed_report`)
    seeds: list[LeaderRow] = Field(default_factory=list)
    # kept % of the locality split's open answers, per job x scorer x test language (`clkt.report.open_locality`)
    locality: list[KeptLang] = Field(default_factory=list)
    # the jury layer's figure, apart (`clkt.report.open_jury`); None: no jury verdict
    jury: OpenJury | None = Field(default=None, exclude_if=lambda v: v is None)


def open_outcomes(rows: Sequence[OpenResultRow], *, split: str = "test") -> list[Outcome]:
    """The stored open answers of `split` as outcomes (their public ids stand for the store's: the bootstrap draws
    them), with split "test" whatever theirs (the metric functions read the test split)."""
    return [
        Outcome(model=r.target_model, strategy=r.strategy, scorer=r.scorer, variant=r.variant, train_lang=r.train_lang,
                lang=r.lang, qid=r.open_qid, domain=r.domain, correct=r.correct, split="test", entity=r.entity_id,
                entity_public=r.entity_id, seed=r.seed)
        for r in rows if r.split == split and r.verdict in GRADES
    ]


def _other_language(rows: Sequence[OpenResultRow], draws: EntityDraws) -> list[OtherLanguage]:
    by: dict[tuple[str, str, str, str, str], list[OpenResultRow]] = defaultdict(list)
    for r in rows:
        if r.split == "test":
            by[(r.target_model, r.strategy, r.train_lang, r.variant, r.lang)].append(r)
    out: list[OtherLanguage] = []
    for (model, strategy, train, variant, lang), rs in sorted(by.items()):
        k = sum(r.other_language for r in rs)
        out.append(OtherLanguage(model=model, strategy=strategy, train_lang=train, variant=variant, lang=lang, n=len(rs),
                                 other=k, share=k / len(rs),
                                 ci=accuracy_interval([(r.other_language, r.entity_id) for r in rs], draws)))
    return out


def _agreement(rows: Sequence[OpenResultRow], mcq: Sequence[JobResultRow], draws: EntityDraws) -> list[OpenAgreement]:
    """Per job x variant, the MCQ verdicts (one scorer: the first in name order) against the open ones."""
    first_scorer: dict[int, str] = {}
    for m in sorted(mcq, key=lambda m: m.scorer):
        first_scorer.setdefault(m.job_id, m.scorer)
    mcq_of = {(m.job_id, m.variant, stable_entity_id(m.source, m.external_id), m.slot, m.lang): m.correct
              for m in mcq if m.split == "test" and m.scorer == first_scorer.get(m.job_id)}
    cells: dict[tuple[int, str], list[tuple[bool, bool, int]]] = defaultdict(list)
    who: dict[int, OpenResultRow] = {}
    for r in rows:
        got = mcq_of.get((r.job_id, r.variant, r.entity_id, mcq_slot(r.fact), r.lang))
        if r.split == "test" and got is not None:
            cells[(r.job_id, r.variant)].append((got, r.correct, r.entity_id))
            who.setdefault(r.job_id, r)
    out: list[OpenAgreement] = []
    for (job, variant), cs in sorted(cells.items()):
        j = who[job]
        out.append(OpenAgreement(
            job_id=job, model=j.target_model, strategy=j.strategy, train_lang=j.train_lang, variant=variant, n=len(cs),
            both_right=sum(m and o for m, o, _ in cs), mcq_only=sum(m and not o for m, o, _ in cs),
            open_only=sum(o and not m for m, o, _ in cs), neither=sum(not (m or o) for m, o, _ in cs),
            ci=accuracy_interval([(m == o, e) for m, o, e in cs], draws),
        ))
    return out


def open_track(
    rows: Sequence[OpenResultRow], *, languages: Sequence[str], snapshot_id: str, seed: int = 0,
    primary_jobs: Collection[int] | None = None, mcq: Sequence[JobResultRow] = (), samples: int = BOOTSTRAP_SAMPLES,
    jury: Sequence[JuryRow] = (), seeded: SeedTables | None = None,
) -> OpenTrack | None:
    """The open track's figures (None: no open answer stored); `primary_jobs`: the jobs of the tables' seed (the
    others' answers pooled in Learn only, as for the MCQs); `mcq`: those jobs' MCQ results, for the paired view;
    `jury`: the jury's stored verdicts, for its figure apart; `seeded`: the open groups run with several seeds."""
    if not rows:
        return None
    tables = [r for r in rows if (primary_jobs is None or r.job_id in primary_jobs) and r.verdict in GRADES]
    tests = open_outcomes(tables)
    public = Outcome.public_ids(tests)
    draws = entity_draws([o.cluster for o in tests], snapshot_id=snapshot_id, seed=seed, samples=samples,
                         public=public)
    learn = learn_tests(open_outcomes(rows), draws=draws)
    not_learned = {(t.model, t.strategy, t.scorer, t.train_lang) for t in learn if t.domain == ALL_DOMAINS and not t.learned}
    return OpenTrack(
        scorers=sorted({r.scorer for r in rows}), answers=len(rows), unscorable=sum(r.verdict not in GRADES for r in rows),
        learn=learn,
        control_learn=control_learn(rows, snapshot_id=snapshot_id, seed=seed, samples=samples),
        table2=summarize(tests, languages, seed=seed, not_learned=not_learned, snapshot_id=snapshot_id,
                         samples=samples, bootstrap=samples > 0, public=public) if seeded is None else
        table2(tests, open_outcomes(rows), languages, seeded, seed=seed, not_learned=not_learned,
               snapshot_id=snapshot_id, public=public),
        seeds=seeded.rows if seeded is not None else [],
        pairs=pair_metrics(tests, languages), other_language=_other_language(tables, draws),
        agreement=_agreement(tables, mcq, draws),
        jury=open_jury(tables, jury, draws, splits=rows, snapshot_id=snapshot_id, seed=seed, samples=samples),
        locality=open_kept(rows, snapshot_id=snapshot_id, seed=seed, samples=samples),
    )
