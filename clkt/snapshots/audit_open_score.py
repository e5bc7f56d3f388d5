"""Scoring the open track's audit forms (`clkt.snapshots.audit_open`): each scorer against the human labels.

`read_open_forms` reads the annotators' forms and refuses, with one line naming the file, the row and what is
wrong: a form with no label at all, a row left without one (a partial form), a label that is not one of SimpleQA's
grades, a row id whose snapshot is not the form's, an id twice, forms of several snapshots. The human label of an
answer is the strict majority of its annotators' (with one annotator, theirs); an answer without one is left out,
counted in `no_majority`. With several annotators, their own agreement over the answers all of them labelled is
reported too (Cohen's kappa for two, Fleiss' for more, over the three grades).

`score_open` looks each labelled answer up among the snapshot's stored answers (`storage.open_results`, every
scorer's rows) by its id, and refuses an id it does not know (edited, or drawn from another store) or an answer
whose text is not the stored one (edited, or the job re-run since the form was drawn). Then, for each scorer with
verdicts on those answers (the normaliser, `open-normaliser`; each judge and the jury, from the jury stage's rows,
`storage.open_judgements`, where a jury is configured and has graded them; `without_verdicts` says when none has),
per language and overall: n, the answers where the scorer's
verdict is the human label, Cohen's kappa over the three grades and its 95 % interval from a bootstrap over
entities (an entity's answers are drawn together; seeded by the snapshot's seed and id). Under `MIN_N` answers, or
with one entity, the kappa reads *too few* (no figure); where every label and verdict is one grade it is undefined.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from clkt.errors import UserError
from clkt.snapshots.agreement import BOOTSTRAP_SAMPLES, cohen_kappa, fleiss_kappa, kappa_interval
from clkt.snapshots.audit import Agreement, neutralise_cell, sheet_text
from clkt.snapshots.audit_open import LABEL, LABELS, open_sample_id
from storage.open_judgements import JURY, JuryRow
from storage.open_results import GRADES, OpenResultRow

__all__ = ["ALL", "MIN_N", "OpenAuditScore", "OpenLabels", "ScorerAgreement", "is_open_form", "read_open_forms",
           "score_open"]

MIN_N = 10  # answers under which a kappa reads "too few" (no figure)
ALL = "all"  # the overall row's language
_REQUIRED = ("sample_id", "snapshot_id", "answer", LABEL)
_LABEL_TEXT = ", ".join(LABELS[:-1]) + f" or {LABELS[-1]}"
_JUDGE_MARKERS = ("jury", "judge")


@dataclass(frozen=True, kw_only=True)
class OpenLabels:
    """The forms' human labels: per answer id, the majority label and the answer as the form shows it."""

    snapshot_id: str
    files: list[str]
    annotators: int
    labels: dict[str, str]
    answers: dict[str, str]
    no_majority: int
    votes: dict[str, list[str]] = field(default_factory=dict)  # per answer, each form's label in the forms' order


class ScorerAgreement(BaseModel):
    """One scorer's agreement with the human labels in one language (or `ALL`)."""

    model_config = ConfigDict(frozen=True)

    scorer: str
    language: str
    n: int
    agree: int  # answers where the scorer's verdict is the human label
    entities: int
    kappa: float | None  # None: too few, or undefined (`reading`)
    ci: tuple[float, float] | None
    reading: str  # "ok" | "too few" | "undefined"


class OpenAuditScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    snapshot_id: str
    files: list[str]
    annotators: int
    labelled: int  # answers with a human label (a majority)
    no_majority: int
    scorers: list[str]
    without_verdicts: list[str]  # scoring layers with no verdict stored per answer
    annotator_agreement: Agreement | None = None  # None: one annotator
    agreement: list[ScorerAgreement]
    ci_method: str = f"bootstrap over entities, {BOOTSTRAP_SAMPLES} draws, 95 % percentile interval"


def _header(f: Path) -> list[str]:
    try:
        return next(csv.reader(io.StringIO(sheet_text(f), newline="")), [])
    except csv.Error as e:
        raise UserError(f"{f}:1: not a readable CSV ({e})") from None


def is_open_form(f: Path) -> bool:
    """Whether `f` is an open-answer form (its `label` column) rather than an MCQ audit sheet."""
    return LABEL in _header(f)


def _label(value: str, where: str) -> str | None:
    v = value.strip().upper().replace(" ", "_").replace("-", "_")
    if not v:
        return None
    if v not in LABELS:
        raise UserError(f"{where}: {value!r} is not a label (use {_LABEL_TEXT})")
    return v


def _form_rows(f: Path) -> list[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(sheet_text(f), newline=""))
    try:
        missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise UserError(f"{f}: not an open-answer audit form (missing columns {missing})")
        rows = list(enumerate(reader, start=2))
    except csv.Error as e:
        raise UserError(f"{f}: not a readable CSV ({e})") from None
    for n, row in rows:
        if None in row or any(row.get(c) is None for c in _REQUIRED):
            raise UserError(f"{f}:{n}: the row does not have the form's columns")
    return rows


def _one_form(f: Path, votes: dict[str, list[str]], answers: dict[str, str]) -> str:
    """Add one annotator's labels to `votes`; the form's snapshot id."""
    rows = _form_rows(f)
    labels = [(n, row, _label(row[LABEL], f"{f}:{n} column {LABEL}")) for n, row in rows]
    if not any(lab for _, _, lab in labels):
        raise UserError(f"{f}: no label in this form: give {_LABEL_TEXT} on every row")
    snapshots = {row["snapshot_id"] for _, row, _ in labels}
    if len(snapshots) != 1:
        raise UserError(f"{f}: the rows name several snapshots: {sorted(snapshots)}")
    snapshot_id = snapshots.pop()
    seen: set[str] = set()
    for n, row, lab in labels:
        sid = row["sample_id"]
        if not sid.startswith(f"{snapshot_id}:"):
            raise UserError(f"{f}:{n}: answer id {sid!r} is not one of snapshot {snapshot_id}'s (an edited id?)")
        if sid in seen:
            raise UserError(f"{f}:{n}: answer {sid} appears twice")
        seen.add(sid)
        if lab is None:
            raise UserError(f"{f}:{n}: answer {sid} has no label: give {_LABEL_TEXT} on every row")
        if answers.setdefault(sid, row["answer"]) != row["answer"]:
            raise UserError(f"{f}:{n}: answer {sid} reads differently in another form")
        votes.setdefault(sid, []).append(lab)
    return snapshot_id


def read_open_forms(files: Sequence[Path]) -> OpenLabels:
    if not files:
        raise UserError("give at least one labelled form")
    votes: dict[str, list[str]] = {}
    answers: dict[str, str] = {}
    snapshots = {_one_form(Path(f), votes, answers) for f in files}
    if len(snapshots) != 1:
        raise UserError(f"the forms cover several snapshots: {sorted(snapshots)}")
    labels: dict[str, str] = {}
    for sid, vs in votes.items():
        top, k = Counter(vs).most_common(1)[0]
        if k * 2 > len(vs):
            labels[sid] = top
    return OpenLabels(snapshot_id=snapshots.pop(), files=[Path(f).name for f in files], annotators=len(files),
                      labels=labels, answers=answers, no_majority=len(votes) - len(labels), votes=votes)


@dataclass(frozen=True, slots=True)
class _Pair:
    lang: str
    entity: int
    human: str
    verdict: str


def _pairs(labels: OpenLabels, stored: Sequence[OpenResultRow]) -> dict[str, list[_Pair]]:
    """Per scorer, (language, entity, human label, verdict) of every labelled answer it has a verdict on."""
    index: dict[str, list[OpenResultRow]] = {}
    for r in stored:
        index.setdefault(open_sample_id(labels.snapshot_id, r.lang, r.open_qid, r.job_id, r.variant), []).append(r)
    for sid in labels.answers:
        rows = index.get(sid)
        if rows is None:
            raise UserError(f"answer {sid} is not one of snapshot {labels.snapshot_id}'s stored answers "
                            "(an edited id, or a form drawn from another store)")
        shown = labels.answers[sid].strip()
        if shown not in (rows[0].answer.strip(), neutralise_cell(rows[0].answer).strip()):
            raise UserError(f"answer {sid} is not the stored answer (edited, or its job was run again since the "
                            "form was drawn): draw a new form")
    out: dict[str, list[_Pair]] = {}
    for sid, human in labels.labels.items():
        for r in index[sid]:
            if r.verdict in GRADES:  # an UNSCORABLE answer has no verdict to agree with: left out, never guessed
                out.setdefault(r.scorer, []).append(_Pair(r.lang, r.entity_id, human, r.verdict))
    return out


def judge_scorer(judge: str) -> str:
    """The name a jury row's verdicts are scored under: `jury`, or `judge <provider:model>`."""
    return "jury" if judge == JURY else f"judge {judge}"


def _judged_pairs(labels: OpenLabels, stored: Sequence[OpenResultRow], judged: Sequence[JuryRow]) -> dict[str, list[_Pair]]:
    """Per judge and the jury, the labelled answers it gave a verdict on (a failed vote or an undecided jury is no
    verdict: left out, never guessed). A jury row is keyed like its answer (job, qid, language, variant, scorer)."""
    answers = {(r.job_id, r.open_qid, r.lang, r.variant, r.scorer): r for r in stored}
    out: dict[str, list[_Pair]] = {}
    for j in judged:
        r = answers.get((j.job_id, j.open_qid, j.lang, j.variant, j.scorer))
        if r is None or j.verdict is None:
            continue
        human = labels.labels.get(open_sample_id(labels.snapshot_id, r.lang, r.open_qid, r.job_id, r.variant))
        if human is not None:
            out.setdefault(judge_scorer(j.judge), []).append(_Pair(r.lang, r.entity_id, human, j.verdict))
    return out


def _agreement(scorer: str, language: str, pairs: Sequence[_Pair], *, seed: int, name: str) -> ScorerAgreement:
    humans, verdicts, units = [p.human for p in pairs], [p.verdict for p in pairs], [p.entity for p in pairs]
    entities = len(set(units))
    kappa, ci, reading = None, None, "too few"
    if len(pairs) >= MIN_N and entities > 1:
        kappa = cohen_kappa(humans, verdicts)
        reading = "undefined" if kappa is None else "ok"
        if kappa is not None:
            ci = kappa_interval(humans, verdicts, units, seed=seed, name=f"{name}/{scorer}/{language}")
    return ScorerAgreement(
        scorer=scorer, language=language, n=len(pairs), agree=sum(h == v for h, v in zip(humans, verdicts, strict=True)),
        entities=entities, kappa=kappa, ci=ci, reading=reading,
    )


def _annotators(labels: OpenLabels) -> Agreement | None:
    """The annotators' agreement over the answers every one of them labelled (the three grades)."""
    if labels.annotators < 2:
        return None
    rated = [vs for vs in labels.votes.values() if len(vs) == labels.annotators]
    if not rated:
        return Agreement(method="none", kappa=None, pairs=0, observed=0.0)
    if labels.annotators == 2:
        method, kappa = "Cohen's kappa", cohen_kappa([r[0] for r in rated], [r[1] for r in rated])
    else:
        method, kappa = "Fleiss' kappa", fleiss_kappa(rated)
    return Agreement(method=method, kappa=None if kappa is None else round(kappa, 4), pairs=len(rated),
                     observed=round(sum(len(set(r)) == 1 for r in rated) / len(rated), 4))


def score_open(labels: OpenLabels, stored: Sequence[OpenResultRow], *, seed: int,
               judged: Sequence[JuryRow] = ()) -> OpenAuditScore:
    """Each scorer's agreement with the labels, per language (in name order) and overall: the stored answers'
    scorers (the normaliser) and, from `judged` (the jury's stored rows with each judge's vote), each judge and the
    jury."""
    per_scorer = _pairs(labels, stored) | _judged_pairs(labels, stored, judged)
    rows: list[ScorerAgreement] = []
    for scorer, pairs in sorted(per_scorer.items()):
        for lang in sorted({p.lang for p in pairs}):
            rows.append(_agreement(scorer, lang, [p for p in pairs if p.lang == lang], seed=seed, name=labels.snapshot_id))
        rows.append(_agreement(scorer, ALL, pairs, seed=seed, name=labels.snapshot_id))
    has_judges = any(m in s for s in per_scorer for m in _JUDGE_MARKERS)
    return OpenAuditScore(
        snapshot_id=labels.snapshot_id, files=labels.files, annotators=labels.annotators, labelled=len(labels.labels),
        no_majority=labels.no_majority, scorers=sorted(per_scorer), agreement=rows,
        without_verdicts=[] if has_judges else ["each judge", "the jury"], annotator_agreement=_annotators(labels),
    )
