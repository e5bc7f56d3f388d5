"""The control split's fictional entities give their injector typed facts, as the real ones do: regenerated from
the snapshot's seed, handed over only where they render the frozen documents exactly (so a fact request or a
fill-in question states what the document says), never for a split another template engine wrote."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from clkt.config import GpuSettings, TargetSettings
from clkt.inject.contract import JobSpec
from clkt.inject.editing.requests import build_requests
from clkt.inject.job import InjectionJob
from clkt.snapshots.control import control_facts
from clkt.snapshots.layout import MANIFEST_FILE, DocRow, SnapshotManifest, dumps_row, load_snapshot_dir, sha256_file
from tests.inject._fixtures import write_tiny_snapshot

DOMAINS = ("movies", "disasters")


def _job(tmp_path: Path, snapshot: Path) -> InjectionJob:
    spec = JobSpec(job_id=1, snapshot_id="tiny", snapshot_dir=snapshot, target=TargetSettings(name="tiny", model="x"),
                   strategy="sft-facts-lora", train_lang="en", gpu=GpuSettings(devices=["cpu"]), data_dir=tmp_path,
                   artifacts_dir=tmp_path / "job", device="cpu")
    return InjectionJob(spec)


def test_the_control_entities_facts_reach_the_injector_and_state_their_documents(tmp_path: Path) -> None:
    root = write_tiny_snapshot(tmp_path / "s", control_domains=DOMAINS)
    qs = _job(tmp_path, root).load_snapshot()
    control = [d for d in qs.docs if d.source == "control"]
    assert len({d.entity_id for d in control}) == 2 and {d.entity_id for d in control} <= set(qs.facts)
    reqs = build_requests(control, qs.facts)
    assert reqs.from_facts == 2 and reqs.requests
    by_entity = {d.entity_id: d.text for d in control}
    for r in reqs.requests:  # each request's prompt and value are the document's own words
        assert (r.prompt + r.target).strip().split(". ")[-1] in by_entity[r.entity_id]


def test_a_control_document_its_facts_do_not_render_is_left_to_its_sentences(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    root = write_tiny_snapshot(tmp_path / "s", control_domains=DOMAINS)
    path = root / "control" / "docs" / "en.jsonl"
    rows = [DocRow.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines()]
    edited = rows[0].model_copy(update={"text": rows[0].text + " An added sentence."})
    data = load_snapshot_dir(root, verify_hashes=False)
    facts = control_facts(data.manifest, [edited, *rows[1:]])
    assert set(facts) == {r.entity_id for r in rows[1:]}
    # through the job: the file edited (its hash in the manifest updated), one entity without facts, said once
    path.write_text("".join(dumps_row(r) + "\n" for r in [edited, *rows[1:]]), encoding="utf-8")
    manifest = SnapshotManifest.model_validate_json((root / MANIFEST_FILE).read_bytes())
    files = {**manifest.files, "control/docs/en.jsonl": sha256_file(path)}
    (root / MANIFEST_FILE).write_text(manifest.model_copy(update={"files": files}).model_dump_json(), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="clkt.inject.job"):
        qs = _job(tmp_path, root).load_snapshot()
    assert edited.entity_id not in qs.facts and rows[1].entity_id in qs.facts
    assert "the facts of 1 control entities do not render their documents" in caplog.text


def test_a_control_split_another_engine_wrote_gives_no_facts(tmp_path: Path) -> None:
    root = write_tiny_snapshot(tmp_path / "s", control_domains=DOMAINS)
    data = load_snapshot_dir(root)
    assert data.manifest.control is not None
    older = data.manifest.model_copy(update={"control": data.manifest.control.model_copy(update={"engine": "tmpl-1"})})
    assert control_facts(older, data.control_docs_for("en")) == {}
    assert control_facts(data.manifest.model_copy(update={"control": None}), data.control_docs_for("en")) == {}
    assert len(control_facts(data.manifest, data.control_docs_for("fr"))) == 2  # any language's documents
