"""The held-back split (never in a committed byte; released in a new commit when a later snapshot freezes) and
errata (a retraction leaves the question out of the next revision, its card, predictions and report; the old
revision stays readable; the frozen folder never changes)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from clkt.errors import UserError
from clkt.publish.errata import retract
from clkt.publish.service import PublishService, freeze_hook
from clkt.report.metrics import ALL_DOMAINS
from clkt.services import publish_service
from clkt.snapshots.layout import load_snapshot_dir
from storage.engine import Store
from storage.publish_revisions import latest_revisions
from tests.fakes.hub_server import FakeHub
from tests.publish.conftest import (
    REPO,
    held_test_items,
    leaks,
    publish_now,
    publish_settings,
    seed_snapshot,
    service_ctx,
)
from tests.snapshots.factories import LANGS


def _docs(frozen: Path) -> set[str]:
    return {json.loads(line)["text"] for f in (frozen / "docs").glob("*.jsonl") for line in f.read_text().splitlines()}


async def _burst(store: Store, svc: PublishService) -> None:
    async with service_ctx(store) as ctx:
        await svc.run(ctx)


async def test_held_questions_never_reach_the_hub_and_are_released_when_a_later_snapshot_freezes(
    store: Store, tmp_path: Path, hub: FakeHub
) -> None:
    settings = publish_settings(tmp_path, hub.url, repo=REPO, on_freeze=True, hold_back_periods=1)
    hook = freeze_hook(settings.publish)
    assert hook is not None
    a = await seed_snapshot(store, settings, month=5, prefix="a", on_frozen=hook)
    svc = publish_service(settings, burst=True)
    await _burst(store, svc)
    out_a = settings.snapshot.out_dir / "demo" / "2025-05"
    qids_a, texts_a = held_test_items(out_a)
    assert len(qids_a) >= 10 and len(texts_a) == len(qids_a) * len(LANGS)
    assert [c.title for c in hub.history(REPO)][:1] == [f"Publish {a} revision 1"]
    # not one byte of any commit holds a held question (its text in any language, its qid) or a held document
    assert leaks(hub, REPO, [*texts_a, *map(str, qids_a), *_docs(out_a)]) == []
    card = hub.tree(REPO)[f"snapshots/{a}/hf/README.md"].decode()
    assert "held until the snapshot of 2025-06 is frozen (expected by 2025-07-01)" in card
    assert "held until the snapshot of 2025-06" in hub.tree(REPO)["README.md"].decode()

    b = await seed_snapshot(store, settings, month=6, prefix="b", on_frozen=hook)  # releases a, holds b
    await _burst(store, svc)
    titles = [c.title for c in hub.history(REPO)]
    assert set(titles[:2]) == {f"Publish {a} revision 2", f"Publish {b} revision 1"}, titles
    release = next(c for c in hub.history(REPO) if c.title == f"Publish {a} revision 2")
    released = {p: d for p, d in release.files.items() if p.startswith(f"snapshots/{a}/hf/data/qa_")}
    assert {f"snapshots/{a}/hf/data/qa_{lang}-test.jsonl" for lang in LANGS} <= set(released)
    got = {json.loads(line)["qid"] for lang in LANGS for line in released[f"snapshots/{a}/hf/data/qa_{lang}-test.jsonl"].decode().splitlines()}
    assert got == qids_a and "Test split: published." in release.description
    assert f"snapshots/{a}/hf/data/qa_fr-test.jsonl" in release.added
    # b's test split: held, in every commit
    qids_b, texts_b = held_test_items(settings.snapshot.out_dir / "demo" / "2025-06")
    assert leaks(hub, REPO, [*texts_b, *map(str, qids_b)]) == []
    async with store.session() as s:
        latest = await latest_revisions(s, repo=REPO, branch="main")
    assert (latest[a].revision, latest[a].held) == (2, False) and (latest[b].revision, latest[b].held) == (1, True)
    root = hub.tree(REPO)["README.md"].decode()
    assert "released" in root and "held until the snapshot of 2025-07" in root


async def test_documents_of_a_held_snapshot_are_held_whatever_hold_documents_says(
    store: Store, tmp_path: Path, hub: FakeHub
) -> None:
    settings = publish_settings(tmp_path, hub.url, hold_back_periods=1, hold_documents=False)
    a = await seed_snapshot(store, settings, month=5, prefix="a", report=False)
    assert (await publish_now(store, settings, a)).outcome is not None
    tree = hub.tree(REPO)
    assert not any(p.startswith(f"snapshots/{a}/hf/data/") for p in tree)  # issue 35: they name the held entities
    out_a = settings.snapshot.out_dir / "demo" / "2025-05"
    qids, texts = held_test_items(out_a)
    assert leaks(hub, REPO, [*texts, *map(str, qids), *_docs(out_a)]) == []


def _rows(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in data.decode().splitlines()]


async def test_a_retraction_leaves_the_question_out_of_the_next_revision(store: Store, tmp_path: Path, hub: FakeHub) -> None:
    settings = publish_settings(tmp_path, hub.url, hold_back_periods=0)
    a = await seed_snapshot(store, settings, month=6, prefix="a")
    frozen = settings.snapshot.out_dir / "demo" / "2025-06"
    assert (await publish_now(store, settings, a)).outcome is not None
    base = f"snapshots/{a}/"
    first = hub.tree(REPO)
    q = int(str(_rows(first[base + "hf/data/qa_en-test.jsonl"])[0]["qid"]))

    with pytest.raises(UserError, match="has no question 12345"):
        await retract(store, a, 12345, reason="nope", publish=settings.publish)
    with pytest.raises(UserError, match="--reason"):
        await retract(store, a, q, reason="  \n ", publish=settings.publish)
    r = await retract(store, a, q, reason="the answer names the wrong venue | see the source", publish=settings.publish)
    assert r.new and r.record.qid == q
    again = await retract(store, a, q, reason="another reason", publish=settings.publish)
    assert not again.new and again.record.reason == r.record.reason  # the first reason and date stand

    res = await publish_now(store, settings, a)
    assert res.outcome is not None and res.outcome.revision == 2 and res.outcome.retracted == 1
    tree = hub.tree(REPO)
    for lang in LANGS:
        for split in ("validation", "test"):
            rel = f"{base}hf/data/qa_{lang}-{split}.jsonl"
            assert q not in {row["qid"] for row in _rows(tree[rel])} if rel in tree else True
    assert all(row["qid"] != q for p, d in tree.items() if p.startswith(base + "predictions/") for row in _rows(d))
    # the report is computed again without it
    metrics = json.loads(tree[base + "report/metrics.json"])
    assert any("1 retracted question(s)" in n for n in metrics["notes"])

    def learn_n(t: dict[str, bytes]) -> set[str]:
        rows = csv.DictReader(io.StringIO(t[base + "report/learn.csv"].decode()))
        return {row["n"] for row in rows if row["split"] == "real" and row["domain"] == ALL_DOMAINS}

    assert {int(n) for n in learn_n(tree)} == {int(n) - 1 for n in learn_n(first)}
    # the errata: the repo's, the snapshot's and its card, with the reason and the date
    day = r.record.retracted_at.strftime("%Y-%m-%d")
    for path in ("ERRATA.md", base + "ERRATA.md"):
        text = tree[path].decode()
        assert str(q) in text and "the answer names the wrong venue / see the source" in text and day in text
    assert f"qid {q} ({day})" in tree[base + "hf/README.md"].decode()
    # the old revision stays readable on the Hub, and the frozen folder never changed
    old = hub.history(REPO)[1]
    assert old.title == f"Publish {a} revision 1"
    assert q in {row["qid"] for row in _rows(old.files[base + "hf/data/qa_en-test.jsonl"])}
    assert q in {row.qid for row in load_snapshot_dir(frozen, verify_hashes=True).questions["en"]}


async def test_a_retracted_held_question_is_counted_not_named_until_its_split_is_released(
    store: Store, tmp_path: Path, hub: FakeHub
) -> None:
    settings = publish_settings(tmp_path, hub.url, repo=REPO, on_freeze=True, hold_back_periods=1)
    hook = freeze_hook(settings.publish)
    svc = publish_service(settings, burst=True)
    a = await seed_snapshot(store, settings, month=5, prefix="a", on_frozen=hook)
    await _burst(store, svc)
    qids, texts = held_test_items(settings.snapshot.out_dir / "demo" / "2025-05")
    q = min(qids)
    r = await retract(store, a, q, reason="secret-reason-xyz: the options repeat", publish=settings.publish)
    assert r.asked_publish  # automatic publishing: the next revision is asked for in the same transaction
    await _burst(store, svc)
    assert hub.history(REPO)[0].title == f"Publish {a} revision 2"
    assert leaks(hub, REPO, [str(q), "secret-reason-xyz", *texts]) == []
    for path in ("ERRATA.md", f"snapshots/{a}/ERRATA.md"):
        assert "1 retracted question(s) of a snapshot still held back" in hub.tree(REPO)[path].decode()
    await seed_snapshot(store, settings, month=6, prefix="b", on_frozen=hook)  # releases a
    await _burst(store, svc)
    tree = hub.tree(REPO)
    for path in ("ERRATA.md", f"snapshots/{a}/ERRATA.md"):
        assert str(q) in tree[path].decode() and "secret-reason-xyz" in tree[path].decode()
    released = _rows(tree[f"snapshots/{a}/hf/data/qa_en-test.jsonl"])
    assert q not in {row["qid"] for row in released} and len(released) == len(qids) - 1
