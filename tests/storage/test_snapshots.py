"""The snapshots' repository on a real SQLite file: records out, rows never; freezing, superseding, reads."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from clkt.errors import UserError
from storage.engine import Session, Store
from storage.models import Event, Snapshot, SnapshotItem, SnapshotStatus
from storage.snapshots import (
    NewSnapshot,
    NewSnapshotItem,
    SnapshotRecord,
    add_event,
    candidate_entities,
    content_rows,
    count_revisions,
    find_snapshot,
    freeze_snapshot,
    frozen_manifests,
    frozen_snapshot,
    get_snapshot,
    list_snapshots,
    set_snapshot_audit,
    stored_items,
)
from tests.snapshots.factories import add_ready_entity

JUNE = datetime(2025, 6, 1, tzinfo=UTC)
JULY = datetime(2025, 7, 1, tzinfo=UTC)


def _new(sid: str, *, period: str = "2025-06", built_at: datetime = JULY) -> NewSnapshot:
    return NewSnapshot(
        id=sid, spec="demo", period=period, content_sha256="c" * 64, seed=7, partial=False,
        manifest={"period_end": "2025-07-01", "cadence": "monthly"}, export_path=f"/x/{sid}", built_at=built_at,
    )


async def _question_rows(store: Store, entity_id: int) -> list[tuple[int, int]]:
    from storage.models import Question

    async with store.session() as s:
        return [(q.id or 0, q.entity_id) for q in (await s.execute(select(Question).where(Question.entity_id == entity_id))).scalars()]


async def test_freeze_writes_rows_items_event_and_runs_the_hook_in_the_transaction(store: Store) -> None:
    eid = await add_ready_entity(store, domain="movies", source="tmdb", external_id="1", occurred_at=JUNE)
    (qrow, _), *_ = await _question_rows(store, eid)
    seen: list[SnapshotRecord] = []

    async def hook(session: Session, snap: SnapshotRecord) -> None:
        seen.append(snap)
        assert await find_snapshot(session, snap.id) is not None  # flushed before the hook runs

    async with store.transaction() as s:
        rec = await freeze_snapshot(
            s, snapshot=_new("demo-2025-06-a"),
            items=[NewSnapshotItem(question_id=qrow, entity_id=eid, split="test", option_order=(2, 0, 1, 3), answer_letter="B")],
            supersedes=None, superseded_export_path=None, event_message="froze", event_data={"n": 1}, on_frozen=hook,
        )
    assert seen == [rec] and rec.status is SnapshotStatus.frozen and rec.audit == {} and rec.superseded_by is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.audit = {}  # type: ignore[misc]  # the test: the record is frozen
    async with store.session() as s:
        (item,) = await stored_items(s, rec.id)
        assert (item.question_id, item.entity_id, item.option_order, item.answer_letter) == (qrow, eid, (2, 0, 1, 3), "B")
        assert (item.source, item.external_id, item.slot) == ("tmdb", "1", "slot0")
        (ev,) = (await s.execute(select(Event).where(Event.kind == "snapshot.frozen"))).scalars().all()
        assert ev.data == {"n": 1} and ev.ts == JULY
        assert await frozen_snapshot(s, "demo", "2025-06") == rec
        assert await count_revisions(s, "demo", "2025-06") == 1


async def test_a_failing_hook_leaves_nothing(store: Store) -> None:
    async def hook(session: Session, snap: SnapshotRecord) -> None:
        raise RuntimeError("enqueue failed")

    with pytest.raises(RuntimeError):
        async with store.transaction() as s:
            await freeze_snapshot(s, snapshot=_new("demo-2025-06-a"), items=[], supersedes=None, superseded_export_path=None,
                                  event_message="m", event_data={}, on_frozen=hook)
    async with store.session() as s:
        assert await list_snapshots(s) == []
        assert (await s.execute(select(Event))).scalars().all() == []


async def test_superseding_and_the_read_helpers(store: Store) -> None:
    async with store.transaction() as s:
        await freeze_snapshot(s, snapshot=_new("demo-2025-06-a"), items=[], supersedes=None, superseded_export_path=None,
                              event_message="m", event_data={})
    async with store.transaction() as s:
        await freeze_snapshot(s, snapshot=_new("demo-2025-06-b", built_at=JULY + timedelta(days=1)), items=[],
                              supersedes="demo-2025-06-a", superseded_export_path="/x/superseded/a", event_message="m",
                              event_data={})
        await freeze_snapshot(s, snapshot=_new("demo-2025-05-c", period="2025-05"), items=[], supersedes=None,
                              superseded_export_path=None, event_message="m", event_data={})
    async with store.session() as s:
        assert [r.id for r in await list_snapshots(s)] == ["demo-2025-06-b", "demo-2025-06-a", "demo-2025-05-c"]
        assert await list_snapshots(s, spec="other") == []
        old = await get_snapshot(s, "demo-2025-06-a")
        assert (old.status, old.superseded_by, old.export_path) == (SnapshotStatus.superseded, "demo-2025-06-b", "/x/superseded/a")
        assert (await get_snapshot(s, "demo-2025-05")).id == "demo-2025-05-c"  # a unique prefix
        with pytest.raises(UserError, match="ambiguous"):
            await get_snapshot(s, "demo-2025-06")
        with pytest.raises(UserError, match="unknown"):
            await get_snapshot(s, "nope")
        assert await find_snapshot(s, "demo-2025-05") is None  # exact ids only
        assert (await frozen_snapshot(s, "demo", "2025-06") or old).id == "demo-2025-06-b"
        assert await count_revisions(s, "demo", "2025-06") == 2
        assert len(await frozen_manifests(s, "demo")) == 2 and await frozen_manifests(s, "other") == []
    async with store.transaction() as s:
        rec = await set_snapshot_audit(s, "demo-2025-05", {"overall": {"pairs": 3}})
    assert rec.audit == {"overall": {"pairs": 3}}
    async with store.session() as s:
        row = await s.get(Snapshot, "demo-2025-05-c")
        assert row is not None and row.audit == {"overall": {"pairs": 3}}


async def test_candidates_filter_status_period_domain_and_translated_questions(store: Store) -> None:
    from storage.enums import EntityStatus

    ok = await add_ready_entity(store, domain="movies", source="tmdb", external_id="ok", occurred_at=JUNE, langs=("en", "fr"),
                                targets=("m1", "m2"), known_by=("m2",))
    await add_ready_entity(store, domain="movies", source="tmdb", external_id="july", occurred_at=JULY)
    await add_ready_entity(store, domain="music", source="deezer", external_id="other-domain", occurred_at=JUNE)
    await add_ready_entity(store, domain="movies", source="tmdb", external_id="not-ready", occurred_at=JUNE,
                           status=EntityStatus.generating)
    async with store.session() as s:
        (c,) = await candidate_entities(s, domains=["movies", "sports"], start=JUNE, end=JULY)
    assert (c.id, c.source, c.external_id, c.domain) == (ok, "tmdb", "ok", "movies")
    assert sorted((p.target_model, p.known) for p in c.probes) == [("m1", False), ("m2", True)]
    assert c.doc_langs == frozenset({"en", "fr"})
    assert [q.slot for q in c.questions] == ["slot0", "slot1", "slot2"]
    assert all(q.n_options == 4 and q.answer_index == 0 and q.translations == {"en": (4, 0), "fr": (4, 0)} for q in c.questions)


async def test_content_rows_keep_only_the_asked_languages(store: Store) -> None:
    eid = await add_ready_entity(store, domain="movies", source="tmdb", external_id="1", occurred_at=JUNE, redated=True)
    qrows = [q for q, _ in await _question_rows(store, eid)]
    async with store.session() as s:
        rows = await content_rows(s, entity_ids=[eid], question_ids=qrows, languages=["en", "ja"])
    assert set(rows.entities) == {eid} and rows.entities[eid].redated_from is not None
    assert set(rows.documents) == {(eid, "en"), (eid, "ja")}
    assert set(rows.questions) == set(qrows) and rows.questions[qrows[0]].options[0] == "1-right-0"
    assert set(rows.translations) == {(q, lang) for q in qrows for lang in ("en", "ja")}
    assert rows.translations[(qrows[0], "ja")].translator == "template"


async def test_add_event(store: Store) -> None:
    async with store.transaction() as s:
        await add_event(s, ts=JUNE, kind="snapshot.under_quota", message="short", data={"missing": {"movies": 1}})
    async with store.session() as s:
        (ev,) = (await s.execute(select(Event))).scalars().all()
    assert (ev.kind, ev.message, ev.data) == ("snapshot.under_quota", "short", {"missing": {"movies": 1}})


async def test_stored_items_are_records_not_rows(store: Store) -> None:
    eid = await add_ready_entity(store, domain="movies", source="tmdb", external_id="1", occurred_at=JUNE)
    qrow = (await _question_rows(store, eid))[0][0]
    async with store.transaction() as s:
        await freeze_snapshot(
            s, snapshot=_new("demo-2025-06-a"),
            items=[NewSnapshotItem(question_id=qrow, entity_id=eid, split="val", option_order=(0, 1, 2, 3), answer_letter="A")],
            supersedes=None, superseded_export_path=None, event_message="m", event_data={},
        )
    async with store.session() as s:
        items = await stored_items(s, "demo-2025-06-a")
        assert not any(isinstance(i, SnapshotItem) for i in items) and items[0].split == "val"
        assert await stored_items(s, "missing") == []
