"""Retracting a question retracts the other format's question(s) on the same fact (issue 47): an MCQ takes the open
question on its fact with it and an open question its MCQ, in one transaction; the report recomputed without them and
the next publish revision no longer count them; a snapshot whose open questions cannot be read refuses (nothing
written)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clkt.errors import UserError
from clkt.openqa.frozen import load_open_questions
from clkt.openqa.same_fact import mcq_slot
from clkt.publish.errata import retract
from clkt.report.metrics import ALL_DOMAINS
from clkt.report.writer import load_report_data
from clkt.snapshots.ids import stable_qid
from storage.engine import Store
from storage.open_results import open_results_for_snapshot
from storage.retractions import retractions_of
from storage.snapshots import stored_items
from tests.fakes.hub_server import FakeHub
from tests.publish._open import store_open_answers
from tests.publish.conftest import REPO, publish_now, publish_settings, seed_open_snapshot


async def _mcq_of(store: Store, sid: str, entity_id: int, slot: str) -> int:
    """The public qid of the snapshot's MCQ on `slot` about the entity (public id `entity_id`)."""
    from clkt.snapshots.ids import stable_entity_id

    async with store.session() as s:
        items = await stored_items(s, sid)
    found = [stable_qid(r.source, r.external_id, r.slot) for r in items
             if r.source and r.external_id and r.slot == slot and stable_entity_id(r.source, r.external_id) == entity_id]
    assert len(found) == 1, found
    return found[0]


async def _retracted(store: Store, sid: str) -> dict[int, str]:
    async with store.session() as s:
        return {r.qid: r.reason for r in await retractions_of(s, [sid])}


async def test_a_retraction_takes_the_same_fact_in_the_other_format_out_of_every_count(
    store: Store, tmp_path: Path, hub: FakeHub,
) -> None:
    settings = publish_settings(tmp_path, hub.url, repo=REPO, hold_back_periods=0)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    frozen = await store_open_answers(store, sid)
    opens = load_open_questions(frozen)
    director = next(q for q in opens if q.question.fact == "film.director")
    mcq = await _mcq_of(store, sid, director.entity_id, mcq_slot(director.question.fact))

    done = await retract(store, sid, mcq, reason="the director is wrong", publish=settings.publish)
    assert done.new and [r.qid for r in done.same_fact] == [director.qid]
    assert await _retracted(store, sid) == {mcq: "the director is wrong",
                                           director.qid: f"the same fact as question {mcq}: the director is wrong"}

    # the reverse: an open question takes its MCQ with it
    date_q = next(q for q in opens if q.question.fact == "film.release_date" and q.entity_id != director.entity_id)
    date_mcq = await _mcq_of(store, sid, date_q.entity_id, "release_date")
    back = await retract(store, sid, date_q.qid, reason="wrong date", publish=settings.publish)
    assert back.new and [r.qid for r in back.same_fact] == [date_mcq]
    gone = frozenset(await _retracted(store, sid))
    assert gone == {mcq, director.qid, date_q.qid, date_mcq}

    # the report recomputed without them counts none of their answers (the open track's and the MCQs')
    async with store.session() as s:
        rows = await open_results_for_snapshot(s, sid)
    assert {director.qid, date_q.qid} <= {r.open_qid for r in rows}
    before = await load_report_data(store, sid)
    after = await load_report_data(store, sid, exclude_qids=gone)
    assert before.open_track is not None and after.open_track is not None
    n = {t.train_lang: t.stat.n for t in before.open_track.learn if t.domain == ALL_DOMAINS and not t.control}
    shrunk = {t.train_lang: t.stat.n for t in after.open_track.learn if t.domain == ALL_DOMAINS and not t.control}
    assert shrunk.keys() == n.keys() == {"en", "fr"} and all(shrunk[k] < n[k] for k in n)
    dropped = sum(r.open_qid in gone for r in rows)
    assert after.open_track.answers == before.open_track.answers - dropped > 0
    assert any("4 retracted question(s)" in note for note in after.notes)

    # the next publish revision: no row of them, no answer to them
    await publish_now(store, settings, sid)
    tree = hub.tree(REPO)
    rows_of = {p.split("/", 2)[2]: [json.loads(line) for line in body.decode().splitlines()]
               for p, body in tree.items() if p.startswith(f"snapshots/{sid}/") and p.endswith(".jsonl")}
    qids = {r["qid"] for rows in rows_of.values() for r in rows if "qid" in r}  # the documents have none
    assert any(p.startswith("open_predictions/") for p in rows_of) and any(p.startswith("hf/data/open_") for p in rows_of)
    assert qids and not qids & gone
    kept_open = {r.open_qid for r in rows if r.split == "test"} - gone
    assert kept_open and kept_open <= qids  # the other open questions are still published, with their answers


async def test_an_unreadable_open_track_refuses_the_retraction_and_writes_nothing(store: Store, tmp_path: Path) -> None:
    settings = publish_settings(tmp_path, None)
    sid = await seed_open_snapshot(store, settings, month=5, prefix="a")
    frozen = await store_open_answers(store, sid)
    director = next(q for q in load_open_questions(frozen) if q.question.fact == "film.director")
    mcq = await _mcq_of(store, sid, director.entity_id, "director")
    with pytest.raises(UserError, match="has no question 12345"):
        await retract(store, sid, 12345, reason="wrong", publish=settings.publish)
    shutil.rmtree(frozen / "open")
    with pytest.raises(UserError, match="open track but its frozen folder cannot be read"):
        await retract(store, sid, mcq, reason="wrong", publish=settings.publish)
    assert await _retracted(store, sid) == {}
