"""`clkt evaluate hf://owner/name[/snapshot][@revision]`: a snapshot published by clkt to the stand-in Hub (through
`[publish] endpoint`, as huggingface_hub documents it) is read back as the very snapshot folder the jobs read (its
files byte for byte, its id and content hash), kept by commit, and each bad reference is one line with nothing run.

The stand-in serves from the test's own event loop: every read of it (`fetch_hub_snapshot`, the CLI) runs in a
thread (`asyncio.to_thread`), or the blocked loop would never answer it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from clkt.errors import UserError
from clkt.packs.hub import SOURCE_FILE, fetch_hub_snapshot, parse_hub_ref
from clkt.snapshots.layout import MANIFEST_FILE, SnapshotManifest, load_snapshot_dir
from storage.engine import Store
from tests.cli._in_process import clkt
from tests.fakes.hub_server import FakeHub
from tests.publish.conftest import (
    REPO,
    hub,
    loopback_only,
    online_hub_client,
    publish_now,
    publish_settings,
    seed_snapshot,
)

__all__ = ["hub", "loopback_only", "online_hub_client"]  # the publishing tests' stand-in and guards

pytestmark = pytest.mark.usefixtures("wide_console")


async def _published(store: Store, tmp_path: Path, hub: FakeHub) -> tuple[Path, str, Path]:
    """A snapshot frozen and published to the stand-in (nothing held back): the config, its id, its frozen folder."""
    settings = publish_settings(tmp_path, hub.url, hold_back_periods=0)
    sid = await seed_snapshot(store, settings, month=6, prefix="a", report=False)
    res = await publish_now(store, settings, sid)
    assert res.outcome is not None, res.error
    return tmp_path / "clkt.toml", sid, settings.snapshot.out_dir / "demo" / "2025-06"


async def test_a_published_snapshot_reads_back_as_its_frozen_folder(store: Store, tmp_path: Path, hub: FakeHub) -> None:
    _, sid, frozen = await _published(store, tmp_path, hub)
    lines: list[str] = []
    got = await asyncio.to_thread(fetch_hub_snapshot, parse_hub_ref(f"hf://{REPO}"), cache_dir=tmp_path / "cache",
                                  endpoint=hub.url, progress=lines.append)
    data = load_snapshot_dir(got)  # every file it lists checked against its hash
    ours = SnapshotManifest.model_validate_json((frozen / MANIFEST_FILE).read_bytes())
    assert (data.manifest.snapshot_id, data.manifest.content_sha256) == (sid, ours.content_sha256)
    rebuilt = sorted(data.manifest.files)
    assert any(p.startswith("docs/") for p in rebuilt) and any(p.startswith("questions/") for p in rebuilt)
    for rel in rebuilt:  # docs, questions (and the control split, regenerated): byte for byte the frozen ones
        assert (got / rel).read_bytes() == (frozen / rel).read_bytes(), rel
    assert json.loads((got / SOURCE_FILE).read_text())["differ"] == []
    assert lines and f"reading snapshot {sid}" in lines[0]
    assert {r.host for r in hub.requests} == {hub.url.removeprefix("http://")} and hub.unexpected == []
    assert all("Authorization" not in r.headers for r in hub.calls("resolve"))  # a public repo needs no token
    reads = len(hub.calls("resolve"))
    commit = hub.history(REPO)[0].oid
    again = await asyncio.to_thread(fetch_hub_snapshot, parse_hub_ref(f"hf://{REPO}/{sid}@{commit}"),
                                    cache_dir=tmp_path / "cache", endpoint=hub.url, progress=lines.append)
    assert again == got and len(hub.calls("resolve")) == reads  # the same commit: read back, not downloaded
    assert "read before" in lines[-1]


@pytest.mark.parametrize(("ref", "line"), [
    ("hf://nobody/nothing", "no dataset repo nobody/nothing on http://"),
    (f"hf://{REPO}@no-such-branch", f"the repo {REPO} has no revision 'no-such-branch'"),
    (f"hf://{REPO}/demo-2031-01-000000000000", "no snapshot demo-2031-01-000000000000 in"),
    ("hf://just-a-name", "is not hf://owner/name[/snapshot-id][@revision]"),
    ("hf://a/b@x..y", "is not hf://owner/name[/snapshot-id][@revision]"),
])
async def test_a_bad_reference_is_one_line_and_runs_nothing(store: Store, tmp_path: Path, hub: FakeHub, ref: str,
                                                              line: str) -> None:
    cfg, _, _ = await _published(store, tmp_path, hub)
    res = await asyncio.to_thread(clkt, "evaluate", ref, "--model-path", "embedded:gemma-3-270m", "--cutoff", "2024-08-01", "--out",
               str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 2
    err = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(err) == 1 and line in err[0], res.stderr
    assert not (tmp_path / "pack").exists() and not (tmp_path / "pack.work").exists()


def test_a_held_back_snapshot_cannot_be_evaluated(tmp_path: Path) -> None:
    from clkt.packs.hub import _rebuild

    raw = tmp_path / "raw"
    raw.mkdir()
    manifest = SnapshotManifest.model_validate({
        "snapshot_id": "demo-2025-06-000000000000", "spec": "demo", "period": "2025-06", "period_start": "2025-06-01",
        "period_end": "2025-07-01", "cadence": "monthly", "seed": 0, "val_ratio": 0.2, "content_sha256": "0" * 64,
        "languages": ["en"], "domains": ["movies"], "targets": [], "agents": {"backend": "template"}, "counts": {"total": {}},
    })
    (raw / MANIFEST_FILE).write_text(manifest.model_dump_json())
    with pytest.raises(UserError, match=r"publishes no test question in en \(held back"):
        _rebuild(raw, tmp_path / "out", parse_hub_ref("hf://a/b"))


async def test_the_cli_reads_the_snapshot_through_the_configs_endpoint(store: Store, tmp_path: Path, hub: FakeHub) -> None:
    """`clkt evaluate hf://...` reads through `[publish] endpoint` and keeps the folder under the data directory;
    the evaluation itself is `clkt evaluate`'s own (tests/cli/test_evaluate.py): here a model that cannot be read
    stops it with one line once the snapshot is read."""
    from clkt.config import load_settings
    from clkt.layout import hub_cache_dir

    cfg, sid, _ = await _published(store, tmp_path, hub)
    res = await asyncio.to_thread(clkt, "evaluate", f"hf://{REPO}", "--model-path", str(tmp_path / "no-model"), "--cutoff",
                                  "2024-08-01", "--out", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 2 and "does not exist" in res.stderr, res.stderr
    assert f"reading snapshot {sid}" in res.stderr and hub.calls("resolve")
    kept = hub_cache_dir(load_settings(cfg, environ={}).data_dir)
    assert [p.name for p in kept.glob("*/*/*")] == [sid]
    assert not (tmp_path / "pack").exists()


@pytest.mark.parametrize("in_config", [False, True])
async def test_hf_endpoint_is_read_when_the_config_names_no_endpoint(store: Store, tmp_path: Path, hub: FakeHub,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     in_config: bool) -> None:
    """`[publish] endpoint` unset: `HF_ENDPOINT` names the Hub (as huggingface_hub documents it); set, the config
    wins over the environment (here HF_ENDPOINT then names a port where nothing listens)."""
    cfg, sid, _ = await _published(store, tmp_path, hub)
    if in_config:
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9/")
    else:
        text = cfg.read_text()
        cfg.write_text("\n".join(x for x in text.splitlines() if not x.startswith("endpoint =")) + "\n")
        assert hub.url not in cfg.read_text()
        monkeypatch.setenv("HF_ENDPOINT", hub.url + "/")
    res = await asyncio.to_thread(clkt, "evaluate", f"hf://{REPO}", "--model-path", str(tmp_path / "no-model"), "--cutoff",
                                  "2024-08-01", "--out", str(tmp_path / "pack"), "--config", str(cfg))
    assert res.returncode == 2 and "does not exist" in res.stderr, res.stderr  # the snapshot read, then the model
    assert f"reading snapshot {sid} at commit" in res.stderr and f"from {hub.url} " in res.stderr
    assert hub.calls("resolve")
