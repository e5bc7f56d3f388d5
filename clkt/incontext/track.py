"""The in-context track of one target on one frozen snapshot (a contextual track, reported apart: never pooled
with the parametric results).

For every test question of the snapshot in every language L, and every context language c (the spec's train
languages): the entity's c-language document in the prompt, the question and options in L
(`clkt.incontext.prompt`), answered at temperature 0 and scored by the target's scorer (`clkt.incontext.askers`:
the paper's generate parse, or option-loglik-norm for a local base target, stored with each answer); and every question
once without the document (context "": the no-context floor; a local base target's floor is its parametric
jobs' base answers when they are stored, `InContextTrack._floor_from_jobs`). The contingency A/B/C/D of a pair (c, L) pairs the
c-question answered with the c document against the L-question answered with the same document
(`clkt.report.incontext`).

Answers are stored as they come (`storage.incontext`, in chunks of `CHUNK`): a rerun asks only what is missing,
and the calls themselves are in the LLM cache, so a provider dying mid-track costs nothing twice. A prompt that
cannot fit the model's context even with the document cut is stored as `skipped`; an answer without a letter as
`unparsed` (wrong).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from clkt._tasks import cancel_and_wait
from clkt.errors import AgentError, RetryLater
from clkt.evaluate.results import Variant
from clkt.evaluate.scorers import OPTION_LOGLIK_NORM
from clkt.incontext.askers import Ask, Asker, Reply
from clkt.incontext.prompt import build_prompt
from clkt.snapshots.ids import stable_qid
from storage.gpu_jobs import results_for_snapshot
from storage.incontext import NO_CONTEXT, InContextRecord, add_incontext_answers, incontext_keys

if TYPE_CHECKING:
    from clkt.snapshots.layout import QuestionRow, SnapshotData
    from storage.engine import Store

__all__ = ["InContextTrack", "TrackCounts", "TrackStopped"]

ANSWERED, UNPARSED, SKIPPED = "answered", "unparsed", "skipped"
C = TypeVar("C")  # a track's counts


@dataclass(slots=True)
class TrackCounts:
    """What one run did: prompts asked (cached or paid), stored answers, and the documented exceptions."""

    already: int = 0  # stored before this run (not asked again)
    asked: int = 0
    skipped: int = 0  # prompts that cannot fit the context even with the document cut
    truncated: int = 0  # prompts whose document was cut to fit
    unparsed: int = 0  # answers that state no letter (scored wrong)
    failed: int = 0  # calls that failed (the run stops; a rerun asks them again)
    pending: int = 0  # batch mode: calls queued for, or waiting in, a provider batch (a rerun reads their answers)
    from_jobs: int = 0  # floor answers taken from the target's parametric jobs' base pass (not asked)
    errors: list[str] = field(default_factory=list)


class TrackStopped(AgentError, Generic[C]):
    """A call of the track failed: what was answered is stored, a rerun resumes (`counts`: this run's; the short
    answers' track, `clkt.incontext.open_track`, stops with its own counts)."""

    def __init__(self, message: str, *, counts: C) -> None:
        super().__init__(message)
        self.counts = counts


@dataclass(frozen=True, slots=True)
class _Item:
    row: QuestionRow
    context_lang: str
    prompt: str | None
    truncated: bool
    document: str | None = None  # as it is in the prompt (None: the floor, or skipped)

    def ask(self) -> Ask:
        return Ask(prompt=self.prompt or "", document=self.document, question=self.row.question,
                   options=tuple(self.row.options), lang=self.row.lang)


@dataclass(kw_only=True)
class InContextTrack:
    """One target's track on one snapshot: `run()` asks what is missing and stores it."""

    CHUNK: ClassVar[int] = 32  # prompts asked, then stored, at a time
    AHEAD: ClassVar[int] = 2  # chunks asked at once: the next while the one before is answered

    store: Store
    snapshot: SnapshotData
    target: str  # the target's name (the stored rows' key)
    asker: Asker
    context_langs: Sequence[str]  # the spec's train languages, among the snapshot's
    max_new_tokens: int

    def _items(self, done: set[tuple[int, str, str]]) -> list[_Item]:
        docs = {(d.entity_id, d.lang): d.text for lang in self.snapshot.languages for d in self.snapshot.docs_for(lang)}
        out: list[_Item] = []
        for lang in self.snapshot.languages:
            for row in self.snapshot.questions_for(lang, "test"):
                for c in (NO_CONTEXT, *self.context_langs):
                    if (row.qid, c, lang) in done:
                        continue
                    doc = None if c == NO_CONTEXT else docs.get((row.entity_id, c))
                    if c != NO_CONTEXT and doc is None:
                        continue  # the snapshot has no document of the entity in c
                    p = build_prompt(
                        document=doc, question=row.question, options=list(row.options), lang=lang,
                        cue=self.asker.cue, context_tokens=self.asker.context_tokens,
                        max_new_tokens=self.max_new_tokens, count=self.asker.count,
                    )
                    out.append(_Item(row=row, context_lang=c, prompt=p.text, truncated=p.truncated, document=p.document))
        return out

    def _record(self, item: _Item, reply: Reply | None) -> InContextRecord:
        row = item.row
        if reply is None:
            status, letter = SKIPPED, None
        else:
            status, letter = (ANSWERED if reply.letter else UNPARSED), reply.letter
        return InContextRecord(
            snapshot_id=self.snapshot.manifest.snapshot_id, target=self.target, qid=row.qid,
            entity_id=row.entity_id, context_lang=item.context_lang, lang=row.lang, status=status, letter=letter,
            correct=letter is not None and letter == row.answer, truncated=item.truncated,
            input_tokens=reply.input_tokens if reply else 0, output_tokens=reply.output_tokens if reply else 0,
            cost_usd=reply.cost_usd if reply else 0.0, scorer=self.asker.scorer,
        )

    async def run(self) -> TrackCounts:
        """Ask every missing prompt, storing answers chunk by chunk; `TrackStopped` (after storing what was
        answered) when a call failed: a rerun resumes there and pays for nothing twice. In batch mode every prompt
        not yet answered is queued (all of them in this one run, so they share batches) and counted `pending`:
        the track is complete once a run ends with none pending.

        The next chunk is asked while the one before is answered and stored (`AHEAD` chunks at a time): an API
        target's limiter always has a call waiting, instead of idling at each chunk's end until its slowest answer
        (at a few requests a minute that idle time was several percent of the provider's limit lost). A call that
        fails stops the run once its chunk is stored: the chunk asked ahead is cancelled (what it had answered is
        in the LLM cache: a rerun reads it without paying) and no other is asked."""
        sid = self.snapshot.manifest.snapshot_id
        async with self.store.session() as s:
            done = await incontext_keys(s, sid, self.target)
        counts = TrackCounts(already=len(done))
        items = self._items(done)
        skipped = [i for i in items if i.prompt is None]
        todo = [i for i in items if i.prompt is not None]
        counts.skipped = len(skipped)
        await self._store([self._record(i, None) for i in skipped])
        todo = await self._floor_from_jobs(todo, counts)
        chunks = [todo[start:start + self.CHUNK] for start in range(0, len(todo), self.CHUNK)]
        asked: deque[tuple[list[_Item], asyncio.Task[list[Reply | BaseException]]]] = deque()
        try:
            for chunk in chunks:
                asked.append((chunk, asyncio.create_task(self.asker.ask([i.ask() for i in chunk]))))
                if len(asked) >= self.AHEAD:
                    await self._settle(*asked.popleft(), counts)
                    if counts.failed:
                        break
            while asked and not counts.failed:
                await self._settle(*asked.popleft(), counts)
        finally:  # after a failure, the chunk asked ahead (what it answered is in the LLM cache)
            await cancel_and_wait(task for _, task in asked)
        if counts.failed:
            raise TrackStopped[TrackCounts](
                f"in-context track of {self.target} on {sid}: {counts.failed} call(s) failed "
                f"({counts.errors[0]}); {counts.asked} answered this run are stored, a rerun resumes",
                counts=counts,
            )
        return counts

    async def _floor_from_jobs(self, todo: list[_Item], counts: TrackCounts) -> list[_Item]:
        """Store the floor answers the target's parametric jobs already gave, and return what is left to ask.

        A local base target scored by `option-loglik-norm` is asked the floor exactly as its jobs' base pass asks
        every test question (`clkt.evaluate.loglik.loglik_item` without a document block), so those stored base
        answers are the floor: one figure, not two computations of it that could differ in a near tie (and, on the
        offline demo, about 3 of its 20 minutes not spent twice). Other scorers ask their own floor."""
        if self.asker.scorer != OPTION_LOGLIK_NORM or not any(i.context_lang == NO_CONTEXT for i in todo):
            return todo
        async with self.store.session() as s:  # the done jobs' results, as the report reads them
            rows = await results_for_snapshot(s, self.snapshot.manifest.snapshot_id)
        base: dict[tuple[int, str], tuple[str | None, int]] = {}
        for r in rows:  # one base set per (target, scorer) whatever the jobs' dtypes (`one_base_set`): the report's
            if (r.target_model == self.target and r.variant == Variant.base.value and r.scorer == OPTION_LOGLIK_NORM
                    and r.split == "test"):
                base.setdefault((stable_qid(r.source, r.external_id, r.slot), r.lang), (r.predicted, r.job_id))
        records: list[InContextRecord] = []
        rest: list[_Item] = []
        for item in todo:
            got = base.get((item.row.qid, item.row.lang)) if item.context_lang == NO_CONTEXT else None
            if got is None:
                rest.append(item)
                continue
            records.append(self._record(item, Reply(text=f"base pass of job {got[1]}", letter=got[0])))
            counts.unparsed += got[0] is None
        counts.from_jobs = len(records)
        await self._store(records)
        return rest

    async def _settle(self, chunk: list[_Item], task: asyncio.Task[list[Reply | BaseException]],
                      counts: TrackCounts) -> None:
        """A chunk's answers, counted and stored."""
        records: list[InContextRecord] = []
        for item, reply in zip(chunk, await task, strict=True):
            if isinstance(reply, RetryLater):  # batch mode: queued or in a batch, not a failure
                counts.pending += 1
                continue
            if isinstance(reply, BaseException):
                counts.failed += 1
                counts.errors.append(str(reply)[:300])
                continue
            rec = self._record(item, reply)
            counts.asked += 1
            counts.truncated += item.truncated
            counts.unparsed += rec.status == UNPARSED
            records.append(rec)
        await self._store(records)

    async def _store(self, records: list[InContextRecord]) -> None:
        if records:
            await self.store.run_with_retry(partial(add_incontext_answers, records=records))
