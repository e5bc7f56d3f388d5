"""A hold-back that holds (issue 35): a held snapshot publishes nothing that names a held entity or states one of its
facts (no questions of either split, no documents, no predictions, no per-entity counts, no adapters); its card says
what is held and until when; on release everything appears in one commit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clkt.publish.service import freeze_hook
from clkt.services import publish_service
from storage.engine import Store
from tests.fakes.hub_server import FakeHub
from tests.publish.conftest import REPO, leaks, publish_settings, seed_snapshot, service_ctx


def held_needles(frozen: Path) -> set[str]:
    """Every held entity's name and every answer (every option, in every language) of its questions, read from
    the frozen folder: what a held snapshot must not publish."""
    out: set[str] = set()
    for f in sorted((frozen / "questions").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out.update(str(o) for o in row["options"])
            out.add(row["question"])
            out.update(str(row[k]) for k in ("qid", "entity_id") if row.get(k) is not None)  # ids name them too
    for f in sorted((frozen / "docs").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out.add(row["text"])
            for k in ("entity_name", "name", "title"):
                if isinstance(row.get(k), str) and row[k]:
                    out.add(row[k])
    return out


async def test_a_held_snapshot_publishes_no_held_entity_name_or_fact(store: Store, tmp_path: Path, hub: FakeHub) -> None:
    settings = publish_settings(tmp_path, hub.url, repo=REPO, on_freeze=True, hold_back_periods=1, hold_documents=False)
    hook = freeze_hook(settings.publish)
    assert hook is not None
    a = await seed_snapshot(store, settings, month=5, prefix="a", on_frozen=hook)
    svc = publish_service(settings, burst=True)
    async with service_ctx(store) as ctx:
        await svc.run(ctx)
    frozen = settings.snapshot.out_dir / "demo" / "2025-05"
    needles = held_needles(frozen)
    # the factories' entities: "<domain> a<domain><i>", answers "a<domain><i>-right-<k>": the external ids name them all
    ext = {f"a{d}{i}" for d in ("movies", "music", "sports", "disasters") for i in range(2)}
    assert len(needles) > 50
    rows = [json.loads(line) for line in (frozen / "questions" / "en.jsonl").read_text().splitlines()]
    assert {r["split"] for r in rows} == {"val", "test"} and all(str(r["qid"]) in needles for r in rows)
    assert leaks(hub, REPO, [*needles, *ext]) == []
    tree = hub.tree(REPO)
    mine = sorted(p for p in tree if p.startswith(f"snapshots/{a}/"))
    assert not [p for p in mine if "/hf/data/" in p or "/predictions/" in p or "/adapters/" in p], mine
    card = tree[f"snapshots/{a}/hf/README.md"].decode()
    assert "held until the snapshot of 2025-06 is frozen (expected by 2025-07-01)" in card
    assert "validation and test questions" in card and "documents" in card  # it says what is held

    await seed_snapshot(store, settings, month=6, prefix="b", on_frozen=hook)  # releases a (and holds b)
    async with service_ctx(store) as ctx:
        await svc.run(ctx)
    release = next(c for c in hub.history(REPO) if c.title == f"Publish {a} revision 2")
    got = {p.removeprefix(f"snapshots/{a}/") for p in release.files if p.startswith(f"snapshots/{a}/")}
    for lang in ("en", "ja", "fr"):  # everything appears in the one release commit
        assert {f"hf/data/qa_{lang}-validation.jsonl", f"hf/data/qa_{lang}-test.jsonl",
                f"hf/data/docs_{lang}-train.jsonl"} <= got
    assert any(p.startswith("predictions/") for p in got) and any(p.startswith("report/") for p in got)
    assert leaks(hub, REPO, sorted(held_needles(settings.snapshot.out_dir / "demo" / "2025-06"))) == []


def test_a_marker_names_its_layout_and_an_old_one_reads_as_layout_one() -> None:
    from clkt.publish.state import LAYOUT, marker, parse_layouts, parse_marker

    key = "ab" * 32
    assert parse_layouts(marker("s-1", 3, key)) == {("s-1", 3): LAYOUT} and LAYOUT == 2
    old = f"clkt-publish: snapshot=s-1 revision=2 state={key}"
    assert parse_layouts(old) == {("s-1", 2): 1} and parse_marker(old) == [("s-1", 2, key)]


async def test_a_revision_published_by_the_leaky_layout_gets_an_erratum(
    store: Store, tmp_path: Path, hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clkt.publish.publisher as publisher
    from clkt.publish.errata import retract
    from tests.publish.conftest import publish_now

    settings = publish_settings(tmp_path, hub.url, hold_back_periods=1)
    a = await seed_snapshot(store, settings, month=5, prefix="a", report=False)
    with monkeypatch.context() as m:  # revision 1 as a layout-1 publisher marked it (no layout in the marker)
        m.setattr(publisher, "marker", lambda sid, rev, key: f"clkt-publish: snapshot={sid} revision={rev} state={key}")
        assert (await publish_now(store, settings, a)).outcome is not None
    errata = hub.tree(REPO)[f"snapshots/{a}/ERRATA.md"].decode()
    assert "hold-back leak" not in errata  # the store can't know yet: it is its first revision
    frozen = settings.snapshot.out_dir / "demo" / "2025-05"
    q = min(int(json.loads(line)["qid"]) for line in (frozen / "questions" / "en.jsonl").read_text().splitlines())
    await retract(store, a, q, reason="a wrong date", publish=settings.publish)
    res = await publish_now(store, settings, a)
    assert res.outcome is not None and res.outcome.revision == 2
    tree = hub.tree(REPO)
    for path in (f"snapshots/{a}/ERRATA.md", f"snapshots/{a}/hf/README.md"):
        text = tree[path].decode()
        assert "**Erratum (hold-back leak)**: revision(s) 1 (commit" in text and "validation questions" in text, path
