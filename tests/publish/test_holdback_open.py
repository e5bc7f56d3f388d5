"""The open track under the hold-back: a held snapshot publishes none of its short-answer questions (no question,
no gold, no qid); on release they appear as the `open_<lang>` configs of the snapshot's dataset card."""

from __future__ import annotations

import json
from pathlib import Path

from clkt.publish.service import freeze_hook
from clkt.services import publish_service
from storage.engine import Store
from tests.fakes.hub_server import FakeHub
from tests.publish.conftest import OPEN_DIRECTOR, REPO, leaks, publish_settings, seed_open_snapshot, service_ctx


def _open_needles(frozen: Path) -> set[str]:
    out: set[str] = set()
    for f in sorted((frozen / "open").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out.update({row["question"], row["answer"], str(row["qid"])})
    return out


async def test_a_held_snapshot_publishes_no_open_question_and_its_release_does(
    store: Store, tmp_path: Path, hub: FakeHub,
) -> None:
    settings = publish_settings(tmp_path, hub.url, repo=REPO, on_freeze=True, hold_back_periods=1, hold_documents=False)
    hook = freeze_hook(settings.publish)
    assert hook is not None
    a = await seed_open_snapshot(store, settings, month=5, prefix="a", hook=hook)
    svc = publish_service(settings, burst=True)
    async with service_ctx(store) as ctx:
        await svc.run(ctx)
    needles = _open_needles(settings.snapshot.out_dir / "demo" / "2025-05")
    assert f"{OPEN_DIRECTOR} a" in needles and len(needles) > 20
    assert leaks(hub, REPO, sorted(needles)) == []
    assert not [p for p in hub.tree(REPO) if "open_" in p]

    await seed_open_snapshot(store, settings, month=6, prefix="b", hook=hook)  # releases a (and holds b)
    async with service_ctx(store) as ctx:
        await svc.run(ctx)
    tree = hub.tree(REPO)
    for lang in ("en", "ja", "fr"):
        path = f"snapshots/{a}/hf/data/open_{lang}-test.jsonl"
        frozen = settings.snapshot.out_dir / "demo" / "2025-05" / "hf" / "data" / f"open_{lang}-test.jsonl"
        assert tree[path] == frozen.read_bytes()  # the frozen rows, byte for byte (none retracted)
    card = tree[f"snapshots/{a}/hf/README.md"].decode()
    assert 'config_name: "open_fr"' in card and 'path: "data/open_fr-test.jsonl"' in card
    assert leaks(hub, REPO, sorted(_open_needles(settings.snapshot.out_dir / "demo" / "2025-06"))) == []
