"""The open track's locality (issue 47): what an injection kept of the short answers the target knew before.

A snapshot's locality split (`clkt.snapshots.locality`: entities a target already knew, never trained on) holds
short-answer questions too (`locality/open/<lang>.jsonl`); every job of that target answers them with the base and
the injected model (`clkt.inject.open_pass`, split `locality`), each answer scored by the normaliser. Their pairs
become the MCQ locality's paired counts (`clkt.evaluate.locality.paired_counts`) and its figure, kept % with n and
its 95% interval over entities, through the very functions the MCQ locality goes through
(`clkt.report.locality.kept_langs`: the same definition, the same "too few" rule, the same draws of the snapshot's
locality entities). Never pooled with the MCQ locality: the open rows are the open scorer's, in their own table.
A snapshot without open locality questions, or jobs that did not answer them, give no row.

The stored answers are the one source of every view: the report's table (`open_kept`) and the board's kept % of
its open rows (`locality_tallies` per job, read by `clkt.report.open_board` into the jobs' locality counts that
`clkt.report.locality.pooled_kept` pools), for each layer: the normaliser's verdicts, and the jury's where it has
graded (`clkt.report.open_right.jury_right`: undecided never kept, ungraded in no pair).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from clkt.evaluate.locality import paired_counts
from clkt.evaluate.summary import LocalityCounts
from clkt.report.locality import KeptLang, kept_langs
from clkt.report.open_right import Right, normaliser_right
from storage.open_results import OpenResultRow

__all__ = ["LOCALITY_SPLIT", "locality_tallies", "open_kept"]

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


def locality_tallies(rows: Iterable[OpenResultRow], *, right: Right = normaliser_right,
                     scorer: str | None = None) -> dict[int, dict[str, dict[str, LocalityCounts]]]:
    """Job id -> layer (`scorer`, else each answer's own) -> test language -> the paired counts of its locality answers
    that `right` decided (`clkt.report.open_right`: an answer without the layer's verdict is no pair); {} without any."""
    by_job: dict[int, list[tuple[OpenResultRow, bool]]] = defaultdict(list)
    for r in rows:
        if r.split == LOCALITY_SPLIT and (got := right(r)) is not None:
            by_job[r.job_id].append((r, got))
    return {job: paired_counts(((scorer or r.scorer, r.lang, r.open_qid, r.variant, got) for r, got in rs),
                               {r.open_qid: r.entity_id for r, _ in rs})
            for job, rs in sorted(by_job.items())}


def open_kept(rows: Sequence[OpenResultRow], *, snapshot_id: str, seed: int, samples: int,
              right: Right = normaliser_right, scorer: str | None = None) -> list[KeptLang]:
    """Kept % of every job's open locality answers, per layer and test language (`locality_tallies`: by default the
    normaliser's verdicts, an UNSCORABLE answer no pair); [] when none was answered."""
    who = {r.job_id: r for r in rows}
    jobs = [_Job(job_id=job, model=who[job].target_model, strategy=who[job].strategy, train_lang=who[job].train_lang,
                 status="done", locality=counts)
            for job, counts in locality_tallies(rows, right=right, scorer=scorer).items()]
    # the entity ids are public already: no store-id mapping for the draws (`public` None)
    return kept_langs(jobs, snapshot_id=snapshot_id, seed=seed, samples=samples)
