"""The in-context track's short answers (issue 47): a target answers the snapshot's open test questions with the
entity's document in the prompt (a contextual track, reported apart from its multiple-choice figures and from the
parametric open track: `clkt.report.incontext_open`).

For every open test question of the snapshot (`clkt.openqa.frozen.load_open_questions`) in every language L it is
asked in, and every context language c: the entity's c document as delimited data, then the question in L
(`clkt.incontext.open_prompt`); and once without the document (the floor). Each prompt is answered greedily by the
target's `OpenAnswerer` (`clkt.incontext.open_answerers`: an API target through the agents' stack, paced, cached,
budgeted; a local one through the open track's generation path), cut by the stop rule, and scored by the normaliser
with the answer's language identified (`clkt.openqa.results.safely_scored_item`: an answer in another language is
INCORRECT and counted apart; one whose scoring raised is UNSCORABLE, in no figure).

Answers are stored chunk by chunk, each row whole (`storage.incontext_open`): a call that fails (a provider down, the
monthly budget spent) stores nothing for its prompt, stops the track once its chunk's answers are stored, and a rerun
asks only what is missing (the answered calls are in the LLM cache). A prompt that cannot fit is stored `skipped`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, ClassVar

from clkt.evaluate.results import Variant
from clkt.incontext.open_answerers import OpenAnswerer
from clkt.incontext.open_prompt import OPEN_INCONTEXT_PROMPT_VERSION, build_open_prompt
from clkt.incontext.track import TrackStopped
from clkt.openqa.generate import ApiOpenAnswer
from clkt.openqa.prompts import INSTRUCTIONS, MAX_NEW_TOKENS
from clkt.openqa.results import UNSCORABLE, safely_scored_item
from storage.incontext import NO_CONTEXT
from storage.incontext_open import InContextOpenRecord, add_incontext_open, incontext_open_keys

if TYPE_CHECKING:
    from clkt.openqa.frozen import FrozenOpenQuestion
    from clkt.snapshots.layout import SnapshotData
    from storage.engine import Store

__all__ = ["InContextOpenTrack", "OpenTrackCounts", "OpenTrackStopped"]

ANSWERED, SKIPPED = "answered", "skipped"


@dataclass(slots=True)
class OpenTrackCounts:
    already: int = 0  # stored before this run
    asked: int = 0
    skipped: int = 0  # prompts that cannot fit the context even with the document cut
    truncated: int = 0
    other_language: int = 0  # answered in another language (INCORRECT, counted apart)
    unscorable: int = 0  # the normaliser raised on the answer (in no figure)
    failed: int = 0  # calls that failed (the run stops; a rerun asks them again)
    errors: list[str] = field(default_factory=list)


class OpenTrackStopped(TrackStopped[OpenTrackCounts]):
    """A call failed: what was answered is stored, a rerun resumes (`counts`: this run's)."""


@dataclass(frozen=True, slots=True)
class _Item:
    q: FrozenOpenQuestion
    context_lang: str
    lang: str
    prompt: str | None  # None: it cannot fit (skipped)
    truncated: bool


@dataclass(kw_only=True)
class InContextOpenTrack:
    """One target's short answers on one snapshot: `run()` asks what is missing and stores it."""

    CHUNK: ClassVar[int] = 32

    store: Store
    snapshot: SnapshotData
    questions: Sequence[FrozenOpenQuestion]  # the snapshot's open questions (test split used)
    target: str  # the target's name (the stored rows' key)
    answerer: OpenAnswerer
    context_langs: Sequence[str]
    max_new_tokens: int = MAX_NEW_TOKENS

    def _items(self, done: set[tuple[int, str, str]]) -> list[_Item]:
        docs = {(d.entity_id, d.lang): d.text for lang in self.snapshot.languages for d in self.snapshot.docs_for(lang)}
        out: list[_Item] = []
        for q in (q for q in self.questions if q.split == "test"):
            for lang in (x for x in self.snapshot.languages if x in q.question.questions and x in INSTRUCTIONS):
                for c in (NO_CONTEXT, *self.context_langs):
                    doc = None if c == NO_CONTEXT else docs.get((q.entity_id, c))
                    if (q.qid, c, lang) in done or (c != NO_CONTEXT and doc is None):
                        continue
                    p = build_open_prompt(document=doc, question=q.question.questions[lang], lang=lang,
                                          chat=self.answerer.chat, context_tokens=self.answerer.context_tokens,
                                          max_new_tokens=self.max_new_tokens, count=self.answerer.count)
                    out.append(_Item(q=q, context_lang=c, lang=lang, prompt=p.text, truncated=p.truncated))
        return out

    def _record(self, item: _Item, reply: ApiOpenAnswer | None) -> InContextOpenRecord:
        rec = InContextOpenRecord(
            snapshot_id=self.snapshot.manifest.snapshot_id, target=self.target, open_qid=item.q.qid,
            entity_id=item.q.entity_id, context_lang=item.context_lang, lang=item.lang, status=SKIPPED, verdict="",
            prompt_version=OPEN_INCONTEXT_PROMPT_VERSION, truncated=item.truncated,
        )
        if reply is None:
            return rec
        s = safely_scored_item(item.q.question, qid=item.q.qid, entity_id=item.q.entity_id, lang=item.lang,
                               answer=reply.text, variant=Variant.base, split="test", domain=item.q.domain)
        return replace(rec, status=ANSWERED, verdict=str(s.verdict), other_language=s.other_language,
                       answer_lang=s.answer_lang, answer=s.answer, reason=s.reason, input_tokens=reply.input_tokens,
                       output_tokens=reply.output_tokens, cost_usd=reply.cost_usd)

    async def run(self) -> OpenTrackCounts:
        """Ask every missing prompt, chunk by chunk, storing each chunk's answers; `OpenTrackStopped` (after storing
        what was answered) when a call failed: no later chunk is asked."""
        sid = self.snapshot.manifest.snapshot_id
        async with self.store.session() as s:
            done = await incontext_open_keys(s, sid, self.target)
        counts = OpenTrackCounts(already=len(done))
        items = self._items(done)
        skipped = [i for i in items if i.prompt is None]
        counts.skipped = len(skipped)
        await self._store([self._record(i, None) for i in skipped])
        todo = [i for i in items if i.prompt is not None]
        for start in range(0, len(todo), self.CHUNK):
            await self._chunk(todo[start:start + self.CHUNK], counts)
            if counts.failed:
                raise OpenTrackStopped(
                    f"in-context short answers of {self.target} on {sid}: {counts.failed} call(s) failed "
                    f"({counts.errors[0]}); {counts.asked} answered this run are stored, a rerun resumes",
                    counts=counts,
                )
        return counts

    async def _chunk(self, chunk: list[_Item], counts: OpenTrackCounts) -> None:
        replies = await self.answerer.answer([i.prompt or "" for i in chunk])
        records: list[InContextOpenRecord] = []
        for item, reply in zip(chunk, replies, strict=True):
            if isinstance(reply, BaseException):
                counts.failed += 1
                counts.errors.append(str(reply)[:300])
                continue
            rec = self._record(item, reply)
            counts.asked += 1
            counts.truncated += item.truncated
            counts.other_language += rec.other_language
            counts.unscorable += rec.verdict == UNSCORABLE
            records.append(rec)
        await self._store(records)

    async def _store(self, records: list[InContextOpenRecord]) -> None:
        if records:
            await self.store.run_with_retry(partial(add_incontext_open, records=records))
