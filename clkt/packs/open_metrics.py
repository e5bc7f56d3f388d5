"""A pack's open figures (`PackMetrics.open`), computed from its open answers as scored by the normaliser layer.

`clkt evaluate` computes them from its own scoring of the answers (its metrics.json's claim); `clkt submit` from
its rescoring (`clkt.packs.open_answers.rescore`), and stores only those. Per cell (train language, variant,
split, test language): the graded answers (an `UNSCORABLE` one is counted apart, in no figure), the right ones,
the answers in another language, and a 95% interval from the bootstrap over the cell's split's entities, seeded by
the snapshot's id and `KEPT_SEED` as the pack's kept % is; under `MIN_CELL_N` graded answers or about one entity the
cell is too few, its counts without a rate (`clkt.report.metric_table.open_too_few`, every open cell's rule). The test split's answers also go through the very
functions a multiple-choice scorer's go through (`compute_metrics`: accuracy, Learn, the contingency, Overall and
Transfer and their means; kept % from the locality split's answers, `clkt.packs.metrics.kept_cells`), as rows of the
open scorer's own, under `figures`, never merged with an MCQ scorer's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from clkt.openqa.results import OPEN_SCORER, UNSCORABLE
from clkt.packs.format import LocalityRow, PredictionRow
from clkt.packs.metrics import KEPT_SEED, OpenCell, OpenMetrics, ScorerMetrics, compute_metrics
from clkt.packs.open_answers import ScoredOpenAnswer
from clkt.report.basics import BOOTSTRAP_SAMPLES
from clkt.report.clustered import EntityDraws, accuracy_interval, entity_draws
from clkt.report.metric_table import open_too_few

__all__ = ["open_metrics"]


def _as_locality(items: Sequence[ScoredOpenAnswer]) -> list[LocalityRow]:
    return [
        LocalityRow(train_lang=i.train_lang, scorer=OPEN_SCORER, variant=i.variant.value, lang=i.lang, qid=i.qid,
                    entity_id=i.entity_id, domain=i.domain, predicted=None, correct=i.correct, split="locality")
        for i in items if i.split == "locality" and i.verdict != UNSCORABLE
    ]


def _as_rows(items: Sequence[ScoredOpenAnswer]) -> list[PredictionRow]:
    return [
        PredictionRow(train_lang=i.train_lang, scorer=OPEN_SCORER, variant=i.variant.value, lang=i.lang, qid=i.qid,
                      entity_id=i.entity_id, domain=i.domain, predicted=None, correct=i.correct)
        for i in items if i.split == "test" and i.verdict != UNSCORABLE
    ]


def _draws(items: Sequence[ScoredOpenAnswer], snapshot_id: str, seed: int, samples: int) -> dict[str, EntityDraws]:
    by_split: dict[str, set[int]] = defaultdict(set)
    for i in items:
        by_split[i.split].add(i.entity_id)
    return {split: entity_draws(sorted(ents), snapshot_id=f"{snapshot_id}:open:{split}", seed=seed, samples=samples)
            for split, ents in by_split.items()}


def _cells(items: Sequence[ScoredOpenAnswer], draws: dict[str, EntityDraws]) -> list[OpenCell]:
    by: dict[tuple[str, str, str, str], list[ScoredOpenAnswer]] = defaultdict(list)
    for i in items:
        by[(i.train_lang, i.variant.value, i.split, i.lang)].append(i)
    out: list[OpenCell] = []
    for (train, variant, split, lang), sel in sorted(by.items()):
        graded = [i for i in sel if i.verdict != UNSCORABLE]
        right, entities = sum(i.correct for i in graded), len({i.entity_id for i in graded})
        few = open_too_few(n=len(graded), entities=entities)
        ci = None if few else accuracy_interval([(i.correct, i.entity_id) for i in graded], draws[split])
        out.append(OpenCell(train_lang=train, variant=variant, split=split, lang=lang, n=len(graded), correct=right,
                            too_few=few, accuracy=None if few else right / len(graded), ci=ci, entities=entities,
                            other_language=sum(i.other_language for i in graded), unscorable=len(sel) - len(graded)))
    return out


def open_metrics(
    items: Sequence[ScoredOpenAnswer], train_langs: Sequence[str], languages: Sequence[str], *, snapshot_id: str,
    format_version: int, seed: int = KEPT_SEED, samples: int = BOOTSTRAP_SAMPLES,
) -> OpenMetrics | None:
    """The open figures of the scored answers `items`; None without any. `train_langs` are the pack's (an answer
    of another is a programming error: the answers were checked against them)."""
    if not items:
        return None
    answers = list(items)
    unknown = {a.train_lang for a in answers} - set(train_langs)
    if unknown:
        raise ValueError(f"open answers of train languages {sorted(unknown)} not among {list(train_langs)}")
    figures = compute_metrics(_as_rows(answers), languages, format_version=format_version, locality=_as_locality(answers),
                              snapshot_id=snapshot_id).scorers.get(OPEN_SCORER)
    return OpenMetrics(scorer=OPEN_SCORER, cells=_cells(answers, _draws(answers, snapshot_id, seed, samples)),
                       figures=figures or ScorerMetrics(accuracy=[], learn={}, pairs=[], means={}))
