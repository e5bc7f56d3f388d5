"""The report's in-context track section (`clkt.incontext`): contextual results, reported apart.

Per target that ran the track on the snapshot: the contingency A/B/C/D of every ordered pair (context language c,
test language L ≠ c), pairing the c-question answered with the c document against the L-question answered with the
same document; Overall and Transfer (`PAIR_METRICS`) as means over the pairs with 95% intervals from the bootstrap
over entities (the leaderboard's draws, `clkt.report.clustered`); the accuracy per (context, test language) and
the no-context floor; what was cut, skipped or unparsable; and the track's cost (tokens, money at the prices of
`[agents.prices]` as the LLM cache recorded them). These rows are never ranked or pooled with the parametric ones:
a local target shows its parametric Transfer beside its in-context ceiling, nothing more.

The pairs and their means are built by `context_pairs` from answers of any question format (`PairAnswer`): the
in-context short answers' section (`clkt.report.incontext_open`) feeds it its graded answers, so both sections' pairs
are one construction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict

from clkt.report._metric_fields import MetricSummary
from clkt.report.basics import BOOTSTRAP_SAMPLES, Contingency, ci1_text
from clkt.report.clustered import EntityDraws, accuracy_interval, entity_draws, pair_draws
from clkt.report.metric_table import OVERALL, PAIR_METRICS, TRANSFER
from clkt.report.metrics import SummaryCell
from clkt.report.pooled import nanmean, percentile_ci
from clkt.report.stats import mcnemar_exact
from storage.incontext import NO_CONTEXT, InContextRecord

__all__ = [
    "INCONTEXT_TITLE",
    "ContextPairs",
    "DocumentHelps",
    "InContextAccuracy",
    "InContextPair",
    "InContextTarget",
    "PairAnswer",
    "context_pairs",
    "incontext_lines",
    "incontext_results",
]

_ALL = "all"
INCONTEXT_TITLE = "In-context track (contextual, not pooled with the parametric results)"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class InContextAccuracy(_Frozen):
    context_lang: str  # "" = no document (the floor)
    lang: str
    n: int
    correct: int
    accuracy: float | None
    ci: tuple[float, float] | None = None


class InContextPair(_Frozen):
    context_lang: str
    test_lang: str
    table: Contingency
    overall: float | None
    transfer: float | None


class DocumentHelps(_Frozen):
    """The c-questions answered with the c document against the same questions without it (the floor)."""

    context_lang: str
    n: int
    with_document: int  # right with the document
    floor: int  # right without it
    gained: int  # right only with the document
    lost: int  # right only without it
    p_value: float  # exact McNemar, two-sided


class InContextTarget(_Frozen):
    """One target's in-context track on a snapshot."""

    target: str
    scorers: list[str] = []  # what scored its answers: generate (letter parse), option-loglik-norm (a local base target)
    contexts: list[str] = []  # the document languages the track ran with (the spec's train languages, or some)
    pairs: list[InContextPair]
    overall: MetricSummary
    transfer: MetricSummary
    accuracy: list[InContextAccuracy]  # per (context language, test language); context "" is the floor
    helps: list[DocumentHelps]  # per context language: does the document help in its own language?
    answered: int
    unparsed: int  # no letter: scored wrong
    skipped: int  # the prompt cannot fit the model's context even with the document cut: left out
    truncated: int  # the document was cut to fit
    input_tokens: int
    output_tokens: int
    cost_usd: float


def _accuracies(rows: Sequence[InContextRecord], draws: EntityDraws) -> list[InContextAccuracy]:
    by: dict[tuple[str, str], list[InContextRecord]] = defaultdict(list)
    for r in rows:
        if r.status != "skipped":
            by[(r.context_lang, r.lang)].append(r)
    out: list[InContextAccuracy] = []
    for (c, lang), rs in sorted(by.items()):
        k = sum(r.correct for r in rs)
        ci = accuracy_interval([(r.correct, r.entity_id) for r in rs], draws)
        out.append(InContextAccuracy(context_lang=c, lang=lang, n=len(rs), correct=k, accuracy=k / len(rs), ci=ci))
    return out


def _helps(rows: Sequence[InContextRecord], contexts: Sequence[str]) -> list[DocumentHelps]:
    kept = [r for r in rows if r.status != "skipped"]
    floor = {(r.qid, r.lang): r.correct for r in kept if r.context_lang == NO_CONTEXT}
    out: list[DocumentHelps] = []
    for c in contexts:
        both = [(r.correct, floor[(r.qid, c)]) for r in kept
                if r.context_lang == c and r.lang == c and (r.qid, c) in floor]
        if not both:
            continue
        gained, lost = sum(d and not f for d, f in both), sum(f and not d for d, f in both)
        out.append(DocumentHelps(context_lang=c, n=len(both), with_document=sum(d for d, _ in both),
                                 floor=sum(f for _, f in both), gained=gained, lost=lost,
                                 p_value=mcnemar_exact(gained, lost)))
    return out


def _contexts(rows: Sequence[InContextRecord], languages: Sequence[str]) -> list[str]:
    """The document languages of the answers, in the snapshot's language order (any other after, sorted)."""
    seen = {r.context_lang for r in rows} - {NO_CONTEXT}
    return [c for c in languages if c in seen] + sorted(seen - set(languages))


def _summary(metric_values: list[float | None], per_draw: np.ndarray) -> MetricSummary:
    vals = [v for v in metric_values if v is not None]
    if not vals:
        return MetricSummary()
    ci = percentile_ci(nanmean(per_draw, axis=1)) if per_draw.size else None
    return MetricSummary(mean=float(np.mean(vals)), std=float(np.std(vals)), ci=ci)


class PairAnswer(NamedTuple):
    """One answer with a document in the prompt, whatever the question's format: what `context_pairs` reads."""

    context_lang: str
    lang: str
    qid: int
    entity_id: int
    correct: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextPairs:
    """The ordered pairs (context language c, test language L ≠ c) of one target's answers with a document."""

    contexts: list[str]  # the document languages of the answers, in the snapshot's language order
    pairs: list[InContextPair]
    entities: list[frozenset[int]]  # per pair: the entities of its questions (answered in both languages)
    per_draw: dict[str, np.ndarray]  # Overall's and Transfer's key -> (draws, pairs), NaN where undefined
    overall: MetricSummary  # mean over the pairs [95% CI of the mean over the draws]
    transfer: MetricSummary


def context_pairs(answers: Sequence[PairAnswer], *, languages: Sequence[str], draws: EntityDraws) -> ContextPairs:
    """Per ordered pair (c, L ≠ c) of `languages`, c a document language of `answers`: the contingency pairing each
    c-question answered with the c document against the L-question answered with the same document, Overall and
    Transfer (`PAIR_METRICS`), and their means over the pairs with the bootstrap over `draws`' entities. The one
    builder of the in-context multiple-choice figures and of the in-context short answers'."""
    by: dict[tuple[str, str, str], dict[int, bool]] = defaultdict(dict)
    cluster: dict[int, int] = {}
    for r in answers:
        by[(r.context_lang, _ALL, r.lang)][r.qid] = r.correct
        cluster[r.qid] = r.entity_id
    contexts = [c for c in languages if any(k[0] == c for k in by)]
    pairs_keys = [(c, lang) for c in contexts for lang in languages if lang != c]
    pairs: list[InContextPair] = []
    entities: list[frozenset[int]] = []
    for c, lang in pairs_keys:
        x, y = by.get((c, _ALL, c), {}), by.get((c, _ALL, lang), {})
        both = sorted(set(x) & set(y))
        t = Contingency(a=sum(x[q] and y[q] for q in both), b=sum(x[q] and not y[q] for q in both),
                        c=sum(y[q] and not x[q] for q in both), d=sum(not x[q] and not y[q] for q in both))
        pairs.append(InContextPair(context_lang=c, test_lang=lang, table=t, overall=OVERALL.value(t),
                                   transfer=TRANSFER.value(t)))
        entities.append(frozenset(cluster[q] for q in both))
    if pairs_keys and len(draws.weights):
        pd = pair_draws(by, cluster_of=cluster, draws=draws, domains=[_ALL], pairs=pairs_keys)
        per = {m.key: m.ratio(PAIR_METRICS.sums_of(pd.sums[:, 0])) for m in (OVERALL, TRANSFER)}
    else:
        per = {m.key: np.zeros((0, len(pairs_keys))) for m in (OVERALL, TRANSFER)}  # no draw
    return ContextPairs(
        contexts=contexts, pairs=pairs, entities=entities, per_draw=per,
        overall=_summary([p.overall for p in pairs], per[OVERALL.key]),
        transfer=_summary([p.transfer for p in pairs], per[TRANSFER.key]),
    )


def _target(target: str, rows: Sequence[InContextRecord], *, languages: Sequence[str], snapshot_id: str,
            seed: int) -> InContextTarget:
    kept = [r for r in rows if r.status != "skipped"]
    draws = entity_draws([r.entity_id for r in kept], snapshot_id=snapshot_id, seed=seed, samples=BOOTSTRAP_SAMPLES)
    cp = context_pairs([PairAnswer(r.context_lang, r.lang, r.qid, r.entity_id, r.correct)
                        for r in kept if r.context_lang != NO_CONTEXT], languages=languages, draws=draws)
    return InContextTarget(
        target=target, pairs=cp.pairs, scorers=sorted({r.scorer for r in kept}),
        contexts=_contexts(rows, languages), overall=cp.overall, transfer=cp.transfer,
        accuracy=_accuracies(rows, draws), helps=_helps(rows, cp.contexts),
        answered=sum(r.status == "answered" for r in rows), unparsed=sum(r.status == "unparsed" for r in rows),
        skipped=sum(r.status == "skipped" for r in rows), truncated=sum(r.truncated for r in rows),
        input_tokens=sum(r.input_tokens for r in rows), output_tokens=sum(r.output_tokens for r in rows),
        cost_usd=round(sum(r.cost_usd for r in rows), 6),
    )


def incontext_results(
    rows: Sequence[InContextRecord], *, languages: Sequence[str], snapshot_id: str, seed: int = 0
) -> list[InContextTarget]:
    """The track's results per target (in name order) from its stored answers on one snapshot."""
    by: dict[str, list[InContextRecord]] = defaultdict(list)
    for r in rows:
        by[r.target].append(r)
    return [_target(t, by[t], languages=languages, snapshot_id=snapshot_id, seed=seed) for t in sorted(by)]


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _parametric(target: str, table2: Sequence[SummaryCell]) -> str:
    """The target's parametric Transfer on this snapshot (all domains pooled), per strategy and scorer."""
    cells = [c for c in table2 if c.model == target and c.domain == _ALL]
    parts = [f"{c.strategy}/{c.scorer} {_pct(c.metric(TRANSFER.key).mean)}" for c in cells]
    return ", ".join(parts) or "–"


def incontext_lines(targets: Sequence[InContextTarget], table2: Sequence[SummaryCell]) -> list[str]:
    """The report.md section: one row per target (never ranked), then each target's accuracies and floor."""
    lines = [
        f"## {INCONTEXT_TITLE}", "",
        "The entity's document in the context language is in the prompt; the question and its options are in the test "
        "language, at temperature 0. *scorer*: the one the target's parametric results are headlined with: `generate` "
        "(API and instruct targets: the letter parse, no letter = wrong) or `option-loglik-norm` (a local base model: "
        "each option's text scored after the document, the question and the answer cue, per character; every answer "
        "has a letter). "
        f"{OVERALL.label} = {OVERALL.definition} and {TRANSFER.label} = {TRANSFER.definition} over the ordered pairs "
        "(context language c, test language L ≠ c), pairing the c-question and the L-question answered with the same "
        "c document; mean over pairs [95% CI from a bootstrap over entities], in %. This track reads across languages, "
        "it does not measure knowledge stored in weights: its rows are not ranked and not pooled with the parametric "
        "results above. *parametric Transfer*: the target's injected jobs on this snapshot (all domains pooled), beside "
        "its in-context ceiling. Documents longer than the model's context are cut (their head kept); a prompt that "
        "cannot fit even then is skipped.", "",
        "| target | scorer | documents | Overall | Transfer (in context) | parametric Transfer | answered | no letter "
        "| truncated | skipped | tokens in / out | cost USD |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in targets:
        lines.append(
            f"| {t.target} | {', '.join(t.scorers) or '–'} | {', '.join(t.contexts) or '–'} "
            f"| {_pct(t.overall.mean)}{ci1_text(t.overall.ci)} | {_pct(t.transfer.mean)}{ci1_text(t.transfer.ci)} "
            f"| {_parametric(t.target, table2)} | {t.answered} | {t.unparsed} | {t.truncated} | {t.skipped} "
            f"| {t.input_tokens} / {t.output_tokens} | {t.cost_usd:.4f} |"
        )
    lines.append("")
    for t in targets:
        for h in t.helps:
            lines.append(
                f"- {t.target}, {h.context_lang} questions: {h.with_document}/{h.n} right with the {h.context_lang} "
                f"document, {h.floor}/{h.n} without it (the floor); exact McNemar p = {h.p_value:.3g} "
                f"({h.gained} gained, {h.lost} lost)"
            )
    if any(t.helps for t in targets):
        lines.append("")
    for t in targets:
        lines += [f"### {t.target}: accuracy by document and question language", "",
                  "| document | question | n | accuracy % [95% CI] |", "|---|---|---|---|"]
        for a in t.accuracy:
            doc = a.context_lang or "none (floor)"
            lines.append(f"| {doc} | {a.lang} | {a.n} | {_pct(a.accuracy)}{ci1_text(a.ci)} |")
        lines.append("")
    return lines
