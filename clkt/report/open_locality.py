"""The open track's locality (issue 47): what an injection kept of the short answers the target knew before.

A snapshot's locality split (`clkt.snapshots.locality`: entities a target already knew, never trained on) holds
short-answer questions too (`locality/open/<lang>.jsonl`); every job of that target answers them with the base and
the injected model (`clkt.inject.open_pass`, split `locality`), each answer scored by the normaliser. Their pairs
become the MCQ locality's paired counts (`clkt.evaluate.locality.paired_counts`) and its figure, kept % with n and
its 95% interval over entities, through the very functions the MCQ locality goes through
(`clkt.report.locality.kept_langs`: the same definition, the same "too few" rule, the same draws of the snapshot's
locality entities). Never pooled with the MCQ locality: the open rows are the open scorer's, in their own table.
A snapshot without open locality questions, or jobs that did not answer them, give no row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clkt.evaluate.locality import paired_counts
from clkt.evaluate.summary import LocalityCounts
from clkt.report.locality import KeptLang, kept_langs
from storage.open_results import GRADES, OpenResultRow

__all__ = ["LOCALITY_SPLIT", "open_kept"]

LOCALITY_SPLIT = "locality"  # the open answers' split of the locality questions (`clkt.openqa.results.OpenSplit`)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Job:
    """A job's open locality counts, as `kept_langs` reads a job (`clkt.report.locality.LocalityJob`)."""

    job_id: int
    model: str
    strategy: str
    train_lang: str
    status: str
    locality: Mapping[str, Mapping[str, LocalityCounts]] | None


def open_kept(rows: Sequence[OpenResultRow], *, snapshot_id: str, seed: int, samples: int) -> list[KeptLang]:
    """Kept % of every job's open locality answers, per scorer and test language (an UNSCORABLE answer is no pair:
    left out, as it is of every figure); [] when none was answered."""
    by_job: dict[int, list[OpenResultRow]] = defaultdict(list)
    for r in rows:
        if r.split == LOCALITY_SPLIT and r.verdict in GRADES:
            by_job[r.job_id].append(r)
    jobs = []
    for job_id, rs in sorted(by_job.items()):
        counts = paired_counts(((r.scorer, r.lang, r.open_qid, r.variant, r.correct) for r in rs),
                               {r.open_qid: r.entity_id for r in rs})
        j = rs[0]
        jobs.append(_Job(job_id=job_id, model=j.target_model, strategy=j.strategy, train_lang=j.train_lang,
                         status="done", locality=counts))
    # the entity ids are public already: no store-id mapping for the draws (`public` None)
    return kept_langs(jobs, snapshot_id=snapshot_id, seed=seed, samples=samples)
