"""Publishing a frozen snapshot to the stand-in Hub: the committed tree, one commit per revision (the same revision
again: a no-op), a Hub that fails mid-commit, `datasets` on a clone of what was committed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from clkt.publish.publisher import OutcomeKind
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.publish import find_publish_task
from storage.publish_revisions import revisions_of
from tests.fakes.hub_server import FakeHub
from tests.publish.conftest import REPO, TOKEN, publish_now, publish_settings, seed_snapshot
from tests.snapshots.factories import LANGS


def _publish_commits(hub: FakeHub, repo: str = REPO, branch: str = "main") -> list[str]:
    return [c.title for c in hub.history(repo, branch) if c.title.startswith("Publish ")]


def _every_request_went_to_the_stand_in(hub: FakeHub) -> None:
    assert hub.requests, "no request reached the stand-in"
    assert {r.host for r in hub.requests} == {hub.url.removeprefix("http://")}
    assert hub.unexpected == []  # no route the stand-in does not implement (no LFS batch, no Xet token...)
    for r in hub.calls("commit"):
        ops = [json.loads(line)["key"] for line in r.body.decode().splitlines()]
        assert set(ops) <= {"header", "file", "deletedFile"}, ops  # every file inline: never lfsFile


def _complete(tree: dict[str, bytes], sid: str) -> None:
    """Every file of the snapshot's folder is there, as its SHA256SUMS lists it, and nothing else."""
    base = f"snapshots/{sid}/"
    sums = dict(reversed(line.split("  ", 1)) for line in tree[base + "SHA256SUMS"].decode().splitlines())
    assert set(sums) == {p.removeprefix(base) for p in tree if p.startswith(base)} - {"SHA256SUMS"}
    assert all(hashlib.sha256(tree[base + p]).hexdigest() == h for p, h in sums.items())
    assert len(sums) >= 20


async def test_publish_commits_the_whole_tree_once(store: Store, tmp_path: Path, hub: FakeHub) -> None:
    settings = publish_settings(tmp_path, hub.url, hold_back_periods=0)
    sid = await seed_snapshot(store, settings, month=6, prefix="a")

    res = await publish_now(store, settings, sid, private=True)
    assert res.outcome is not None and res.outcome.kind is OutcomeKind.committed, res.error
    assert res.status is LeaseStatus.done and res.outcome.revision == 1 and res.outcome.created_repo
    assert hub.repos[REPO].private is True
    tree = hub.tree(REPO)
    base = f"snapshots/{sid}/"
    want = {"README.md", "ERRATA.md", f"{base}hf/README.md", f"{base}manifest.json", f"{base}publish.json",
            f"{base}SHA256SUMS", f"{base}ERRATA.md", f"{base}report/report.md", f"{base}report/metrics.json",
            f"{base}report/table2.csv", f"{base}report/pairs.csv", f"{base}report/learn.csv",
            f"{base}jobs/gemma-3-270m__cpt-lora__en.json", f"{base}jobs/gemma-3-270m__cpt-lora__fr.json",
            f"{base}predictions/gemma-3-270m__cpt-lora__en.jsonl", f"{base}predictions/gemma-3-270m__cpt-lora__fr.jsonl"}
    want |= {f"{base}hf/data/qa_{lang}-{split}.jsonl" for lang in LANGS for split in ("validation", "test")}
    want |= {f"{base}hf/data/docs_{lang}-train.jsonl" for lang in LANGS}
    assert want <= set(tree), sorted(want - set(tree))
    assert any(p.startswith(f"{base}report/heatmap-") and p.endswith(".png") for p in tree)
    # the frozen export's rows, byte for byte; the frozen manifest as frozen
    frozen = settings.snapshot.out_dir / "demo" / "2025-06"
    for lang in LANGS:
        for split in ("validation", "test"):
            rel = f"hf/data/qa_{lang}-{split}.jsonl"
            assert tree[base + rel] == (frozen / rel).read_bytes()
    assert tree[base + "manifest.json"] == (frozen / "manifest.json").read_bytes()
    _complete(tree, sid)  # SHA256SUMS covers every other file of the folder
    # the cards: configs per language, licences and provenance per source, the citation, the hashes
    card = tree[base + "hf/README.md"].decode()
    manifest = json.loads(tree[base + "manifest.json"])
    assert "config_name: \"qa_fr\"" in card and "config_name: \"docs_ja\"" in card
    assert "## Provenance and licences" in card and "TMDB" in card and "USGS" in card and "CC0" in card
    assert "@misc{guo2025liveclktbench" in card and "LiveCLKTBench" in card
    assert manifest["content_sha256"] in card
    assert hashlib.sha256(tree[base + "manifest.json"]).hexdigest() in card
    root = tree["README.md"].decode()
    assert f'config_name: "{sid}-qa_en"' in root and f'config_name: "{sid}-predictions"' in root
    # the job configs: strategy, LoRA settings, seeds, library versions
    job = json.loads(tree[base + "jobs/gemma-3-270m__cpt-lora__en.json"])
    assert job["strategy"] == "cpt-lora" and job["config"]["lora_r"] == settings.gpu.lora_r
    assert job["config"]["seed"] == settings.gpu.seed and "huggingface_hub" in job["library_versions"]
    # what each model answered, per variant and scorer
    preds = [json.loads(x) for x in tree[base + "predictions/gemma-3-270m__cpt-lora__en.jsonl"].decode().splitlines()]
    assert {(p["variant"], p["scorer"]) for p in preds} == {("base", "option-loglik"), ("injected", "option-loglik")}
    assert len(preds) == 24 * len(LANGS) * 2 and all(p["raw"].startswith("answer ") for p in preds)
    # one commit, named after the snapshot, with the state in its message
    history = hub.history(REPO)
    assert [c.title for c in history] == [f"Publish {sid} revision 1", "initial commit"]
    assert f"clkt-publish: snapshot={sid} revision=1 state={res.outcome.state_key}" in history[0].description
    assert all(r.headers.get("Authorization") == f"Bearer {TOKEN}" for r in hub.requests if r.path != "/api/validate-yaml")
    _every_request_went_to_the_stand_in(hub)

    # publishing the same revision again: a no-op (read from the Hub's history), no commit
    again = await publish_now(store, settings, sid)
    assert again.outcome is not None and again.outcome.kind is OutcomeKind.unchanged
    assert again.outcome.revision == 1 and again.outcome.recorded_locally
    assert "no-op" in again.outcome.describe() and "Hub's history" in again.outcome.describe()
    assert len(hub.history(REPO)) == 2 and len(hub.calls("commit")) == 1
    async with store.session() as s:
        revs = await revisions_of(s, repo=REPO, branch="main", snapshot_id=sid)
    assert [(r.revision, r.commit_oid, r.found_on_hub) for r in revs] == [(1, history[0].oid, False)]


async def test_a_hub_that_fails_the_commit_gets_a_retried_then_complete_commit(
    store: Store, tmp_path: Path, hub: FakeHub
) -> None:
    settings = publish_settings(tmp_path, hub.url, hold_back_periods=0)
    sid = await seed_snapshot(store, settings, month=6, prefix="a")
    hub.faults["commit"] = ["500", "drop"]

    first = await publish_now(store, settings, sid)
    assert first.outcome is None and first.transient and first.status is LeaseStatus.pending
    assert "HTTP 500" in str(first.error)
    second = await publish_now(store, settings, sid)
    assert second.outcome is None and second.transient
    assert _publish_commits(hub) == []  # nothing half-committed: the Hub applied nothing
    async with store.session() as s:
        task = await find_publish_task(s, repo=REPO, branch="main", snapshot_id=sid)
    assert task is not None and task.attempts == 0 and task.hub_failures == 2  # the Hub's fault spends no attempt
    third = await publish_now(store, settings, sid)
    assert third.outcome is not None and third.outcome.kind is OutcomeKind.committed and third.outcome.revision == 1
    assert _publish_commits(hub) == [f"Publish {sid} revision 1"]
    _complete(hub.tree(REPO), sid)  # the whole tree, in the one commit
    _every_request_went_to_the_stand_in(hub)


async def test_a_commit_whose_answer_is_lost_is_found_in_the_history_not_committed_twice(
    store: Store, tmp_path: Path, hub: FakeHub
) -> None:
    settings = publish_settings(tmp_path, hub.url, hold_back_periods=0)
    sid = await seed_snapshot(store, settings, month=6, prefix="a")
    hub.faults["commit"] = ["drop-after-apply"]  # the Hub applies it, the answer never arrives

    first = await publish_now(store, settings, sid)
    assert first.transient and _publish_commits(hub) == [f"Publish {sid} revision 1"]
    async with store.session() as s:
        assert await revisions_of(s, repo=REPO, branch="main", snapshot_id=sid) == []
    second = await publish_now(store, settings, sid)
    assert second.outcome is not None and second.outcome.kind is OutcomeKind.unchanged
    assert not second.outcome.recorded_locally and "recorded now" in second.outcome.describe()
    assert _publish_commits(hub) == [f"Publish {sid} revision 1"] and len(hub.calls("commit")) == 1
    async with store.session() as s:
        revs = await revisions_of(s, repo=REPO, branch="main", snapshot_id=sid)
    assert [(r.revision, r.found_on_hub) for r in revs] == [(1, True)]


async def test_datasets_reads_every_config_of_a_clone(
    store: Store, tmp_path: Path, hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    import datasets

    settings = publish_settings(tmp_path, hub.url, hold_back_periods=1)
    a = await seed_snapshot(store, settings, month=5, prefix="a")
    assert (await publish_now(store, settings, a)).outcome is not None
    b = await seed_snapshot(store, settings, month=6, prefix="b", report=False)
    assert (await publish_now(store, settings, a)).outcome is not None  # released: its test split now
    assert (await publish_now(store, settings, b)).outcome is not None  # held: no question, no document
    clone = hub.write_clone(REPO, tmp_path / "clone")
    cache = str(tmp_path / "hf-cache")

    names = datasets.get_dataset_config_names(str(clone))
    assert {f"{a}-qa_{lang}" for lang in LANGS} | {f"{a}-docs_{lang}" for lang in LANGS} | {f"{a}-predictions"} <= set(names)
    assert not any(n.startswith(f"{b}-") for n in names)  # a held snapshot has no config (issue 35)
    for name in names:
        ds = datasets.load_dataset(str(clone), name, cache_dir=cache)
        assert sum(len(split) for split in ds.values()) > 0, name
    qa_a = datasets.load_dataset(str(clone), f"{a}-qa_fr", cache_dir=cache)
    assert set(qa_a) == {"validation", "test"} and len(qa_a["validation"]) + len(qa_a["test"]) == 24
    row = qa_a["test"][0]
    assert row["options"][row["answer_index"]] == row["text_answer"] and row["lang"] == "fr"
    # the released snapshot's own card works on its folder too
    for sid in (a,):
        folder = clone / "snapshots" / sid / "hf"
        for name in datasets.get_dataset_config_names(str(folder)):
            assert len(datasets.load_dataset(str(folder), name, cache_dir=cache)) >= 1



async def test_best_adapters_and_another_branch(store: Store, tmp_path: Path, hub: FakeHub) -> None:
    from sqlmodel import col, select

    from storage.models import GpuJob

    settings = publish_settings(tmp_path, hub.url, hold_back_periods=0, include_adapters=True)
    sid = await seed_snapshot(store, settings, month=6, prefix="a")
    weights = b"\x00\x01safetensors-bytes\xff" * 10
    async with store.transaction() as s:
        for job in (await s.execute(select(GpuJob).where(col(GpuJob.snapshot_id) == sid))).scalars():
            best = tmp_path / "jobs" / str(job.id) / "checkpoints" / "epoch-1"
            best.mkdir(parents=True)
            (best / "adapter_model.safetensors").write_bytes(weights)
            (best / "adapter_config.json").write_text('{"r": 16}')
            (best / "optimizer.pt").write_bytes(b"not published")
            job.artifacts_dir = str(tmp_path / "jobs" / str(job.id))
    (settings.data_dir / "publish" / f"clkt-lab_live-bench_staging--{sid}-r1-dead").mkdir(parents=True)  # a killed try's

    res = await publish_now(store, settings, sid, branch="staging")
    assert res.outcome is not None and res.outcome.branch == "staging", res.error
    tree = hub.tree(REPO, "staging")
    base = f"snapshots/{sid}/adapters/gemma-3-270m__cpt-lora__"
    assert {tree[f"{base}{lang}/adapter_model.safetensors"] for lang in ("en", "fr")} == {weights}
    assert f"{base}en/adapter_config.json" in tree and not any(p.endswith("optimizer.pt") for p in tree)
    assert [c.title for c in hub.history(REPO, "main")] == ["initial commit"]  # main untouched
    assert not any((settings.data_dir / "publish").iterdir())  # no staging folder left, the killed one's included
    _every_request_went_to_the_stand_in(hub)
