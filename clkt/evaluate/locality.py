"""The locality split's answers as paired counts: what an injection kept of what the target knew before.

The locality questions are about entities the target already knew (the probe's "known" verdicts). The job
answers them with the base and the injected model; per result scorer x test language, `locality_counts` pairs
the two answers of each question: kept (right before, right after), lost (right before, wrong after), gained
(wrong before, right after), and per entity its questions right before and those kept, from which the report
draws an interval over entities (`clkt.report.locality`). Kept % = kept / (kept + lost).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from clkt.evaluate.results import ResultItem, Variant
from clkt.evaluate.summary import EntityKept, LocalityCounts

__all__ = ["PairedAnswer", "locality_counts", "paired_counts"]

# one answer as the pairing reads it: scorer, test language, qid, variant ("base" / "injected"), right or not
PairedAnswer = tuple[str, str, int, str, bool]


def locality_counts(items: Iterable[ResultItem], entity_of: Mapping[int, int]) -> dict[str, dict[str, LocalityCounts]]:
    """scorer -> test language -> paired counts over the questions with both answers; `entity_of`: qid -> its
    public entity id (a qid it does not name is left out)."""
    return paired_counts(((r.scorer, r.lang, r.qid, r.variant, r.correct) for r in items), entity_of)


def paired_counts(answers: Iterable[PairedAnswer], entity_of: Mapping[int, int]) -> dict[str, dict[str, LocalityCounts]]:
    """`locality_counts` of any track's answers (the open track's too: `clkt.report.open_locality`)."""
    pairs: dict[tuple[str, str, int], dict[Variant, bool]] = {}
    for scorer, lang, qid, variant, correct in answers:
        if qid in entity_of:
            pairs.setdefault((scorer, lang, qid), {})[Variant(variant)] = correct
    cells: dict[tuple[str, str], list[tuple[int, bool, bool]]] = {}
    for (scorer, lang, qid), v in sorted(pairs.items()):
        if Variant.base in v and Variant.injected in v:
            cells.setdefault((scorer, lang), []).append((entity_of[qid], v[Variant.base], v[Variant.injected]))
    out: dict[str, dict[str, LocalityCounts]] = {}
    for (scorer, lang), rows in sorted(cells.items()):
        per: dict[int, list[int]] = {}
        for entity, before, after in rows:
            if before:
                tally = per.setdefault(entity, [0, 0])
                tally[0] += 1
                tally[1] += after
        out.setdefault(scorer, {})[lang] = LocalityCounts(
            n=len(rows),
            kept=sum(b and a for _, b, a in rows),
            lost=sum(b and not a for _, b, a in rows),
            gained=sum(a and not b for _, b, a in rows),
            entities=[EntityKept(entity=e, base_right=t[0], kept=t[1]) for e, t in sorted(per.items())],
        )
    return out
