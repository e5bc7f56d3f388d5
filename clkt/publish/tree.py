"""The files of one publish revision, written into a staging folder before anything is sent.

A snapshot's folder in the repo (`snapshots/<snapshot id>/`):

```
hf/README.md                         the snapshot's dataset card (configs qa_<lang>, docs_<lang>)
hf/data/qa_<lang>-{validation,test}.jsonl, docs_<lang>-train.jsonl, open_<lang>-test.jsonl
                                     the frozen `hf/` export's rows, minus the retracted questions (none while held;
                                     open_: the open track's short-answer questions, held back as the MCQs are)
manifest.json                        the frozen manifest, as frozen (counts per domain, hashes: no entity)
report/                              the report recomputed from the stored results without the retracted questions
                                     (aggregates per domain and language pair: no entity)
predictions/<model>__<strategy>__<train_lang>.jsonl   every answer of every finished job (minus retracted; none
                                     while held)
open_predictions/<model>__<strategy>__<train_lang>.jsonl   every open answer (the open track's test split) of every
                                     finished job, with its verdict and reason and the jury's verdict where it graded
                                     (`clkt.report.open_predictions`; minus retracted; none while held)
jobs/<model>__<strategy>__<train_lang>.json           the job's config, summary and library versions
                                     (a training seed other than 0 adds `__seed<n>` to these three names)
adapters/<model>__<strategy>__<train_lang>/           the best epoch's LoRA adapter (publish.include_adapters; none
                                     while held: an adapter trained on the held documents carries their facts)
ERRATA.md, publish.json, SHA256SUMS  the snapshot's retractions, the revision's state, every file's sha256
```

and the repo's own `README.md` and `ERRATA.md` (`write_repo_files`). Rows are filtered line by line from the
verified frozen files (a kept row's bytes are the frozen ones). A held snapshot (issue 35, layout 2) publishes
nothing that names one of its entities or states one of its facts: no question of either split (the split into
validation and test is by question, so validation questions name the test's entities), no document, no prediction,
no adapter and no retraction by qid; on release everything appears in one commit. The folder is built from what
may be published, never built whole and then cleaned.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from clkt.evaluate.summary import JobSummary
from clkt.logs import redact
from clkt.publish.card import (
    Config,
    EarlierRevision,
    RepoEntry,
    SnapshotCard,
    errata_markdown,
    render_repo_card,
    render_snapshot_card,
)
from clkt.publish.state import SnapshotPlan
from clkt.report.data import ReportData
from clkt.report.open_predictions import open_prediction
from clkt.report.open_verdicts import jury_columns
from clkt.report.writer import write_report_files
from clkt.snapshots.content import canonical_json
from clkt.snapshots.ids import stable_entity_id, stable_qid
from clkt.snapshots.layout import MANIFEST_FILE, SnapshotData, sha256_file
from storage.gpu_jobs import GpuJobRecord
from storage.open_judgements import JuryRow
from storage.open_results import OpenResultRow
from storage.publish_revisions import PredictionRow
from storage.retractions import RetractionRecord

__all__ = [
    "SnapshotMaterial",
    "configs_of",
    "held_qids",
    "job_key",
    "snapshot_folder",
    "write_repo_files",
    "write_snapshot_folder",
]

_QA = re.compile(r"^hf/data/qa_(?P<lang>[A-Za-z0-9_-]+)-(?P<split>validation|test)\.jsonl$")
_OPEN = re.compile(r"^hf/data/open_(?P<lang>[A-Za-z0-9_-]+)-test\.jsonl$")
_DOCS = re.compile(r"^hf/data/docs_(?P<lang>[A-Za-z0-9_-]+)-train\.jsonl$")
_PRED = re.compile(r"^predictions/[^/]+\.jsonl$")
_OPEN_PRED = re.compile(r"^open_predictions/[^/]+\.jsonl$")
_SPLITS = (("val", "validation"), ("test", "test"))


def snapshot_folder(snapshot_id: str) -> str:
    return f"snapshots/{snapshot_id}"


def job_key(job: GpuJobRecord | PredictionRow | OpenResultRow) -> str:
    """`<model>__<strategy>__<train_lang>`, and `__seed<n>` for a training seed other than 0 (`spec.seeds`)."""
    model = job.target_model
    key = "__".join(re.sub(r"[^A-Za-z0-9._-]+", "-", p).strip("-") or "x" for p in (model, job.strategy, job.train_lang))
    return f"{key}__seed{job.seed}" if job.seed else key


@dataclass(frozen=True, kw_only=True)
class SnapshotMaterial:
    """Everything one revision of a snapshot's folder is written from."""

    plan: SnapshotPlan
    data: SnapshotData  # the frozen folder, loaded with its hashes checked
    report: ReportData | None  # recomputed without the retracted questions; None: not included or not yet
    predictions: list[PredictionRow] = field(default_factory=list)
    open_predictions: list[OpenResultRow] = field(default_factory=list)  # the open track's stored answers
    open_jury: list[JuryRow] = field(default_factory=list)  # the jury's rows of them, each judge's vote included
    jobs: list[GpuJobRecord] = field(default_factory=list)
    adapters: dict[str, Path] = field(default_factory=dict)  # job key -> the best epoch's folder
    revision: int = 1
    history: list[EarlierRevision] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)  # library versions of the publishing environment


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def _kept_lines(src: Path, drop: frozenset[int]) -> list[str]:
    """The lines of a frozen JSONL file whose row's `qid` is not in `drop`."""
    out: list[str] = []
    with src.open("r", encoding="utf-8") as fh:
        for line in fh:
            if line.strip() and json.loads(line).get("qid") not in drop:
                out.append(line if line.endswith("\n") else line + "\n")
    return out


def configs_of(paths: Iterable[str], *, prefix: str = "", languages: Sequence[str] = ()) -> list[Config]:
    """The `datasets` configs of a snapshot folder's files (`paths` relative to the folder), named with `prefix`:
    `qa_<lang>`, `docs_<lang>`, `open_<lang>` for each language (in `languages`' order, then by name),
    `predictions` and `open_predictions`."""
    qa: dict[str, dict[str, str]] = {}
    docs: dict[str, str] = {}
    opens: dict[str, str] = {}
    preds: list[str] = []
    open_preds: list[str] = []
    for p in sorted(paths):
        if m := _QA.match(p):
            qa.setdefault(m["lang"], {})[m["split"]] = p
        elif m := _DOCS.match(p):
            docs[m["lang"]] = p
        elif m := _OPEN.match(p):
            opens[m["lang"]] = p
        elif _PRED.match(p):
            preds.append(p)
        elif _OPEN_PRED.match(p):
            open_preds.append(p)
    order = {lang: i for i, lang in enumerate(languages)}

    def langs(keys: Iterable[str]) -> list[str]:
        return sorted(keys, key=lambda lang: (order.get(lang, len(order)), lang))

    out = [Config(name=f"{prefix}qa_{lang}", files=tuple((s, qa[lang][s]) for s in ("validation", "test") if s in qa[lang]))
           for lang in langs(qa)]
    out += [Config(name=f"{prefix}docs_{lang}", files=(("train", docs[lang]),)) for lang in langs(docs)]
    out += [Config(name=f"{prefix}open_{lang}", files=(("test", opens[lang]),)) for lang in langs(opens)]
    if preds:
        out.append(Config(name=f"{prefix}predictions", files=(("predictions", "predictions/*.jsonl"),)))
    if open_preds:
        out.append(Config(name=f"{prefix}open_predictions", files=(("predictions", "open_predictions/*.jsonl"),)))
    return out


def _prediction_row(p: PredictionRow) -> dict[str, object]:
    return {
        "qid": stable_qid(p.source, p.external_id, p.slot), "entity_id": stable_entity_id(p.source, p.external_id),
        "domain": p.domain, "lang": p.lang, "split": p.split, "model": p.target_model, "strategy": p.strategy,
        "train_lang": p.train_lang, "variant": p.variant, "scorer": p.scorer, "predicted": p.predicted or "",
        "parsed": p.predicted is not None, "correct": p.correct, "raw": redact(p.raw),
    }


def _job_config(job: GpuJobRecord, versions: dict[str, str]) -> dict[str, object]:
    try:
        summary: object = JobSummary.from_stored(job.summary)
        summary = summary.model_dump(mode="json") if isinstance(summary, JobSummary) else None
    except ValidationError:
        summary = {"unreadable": True}
    config = job.config.model_dump(mode="json", exclude_unset=True) if job.config is not None else {}  # the keys stored
    return {
        "model": job.target_model, "strategy": job.strategy, "train_lang": job.train_lang, "seed": job.seed,
        "status": job.status.value,
        "attempts": job.attempts, "best_epoch": job.best_epoch, "device": job.device,
        "error": redact(job.last_error) if job.last_error else None,
        "config": json.loads(redact(json.dumps(config, ensure_ascii=False))),  # GPU settings: LoRA, epochs, seeds
        "summary": summary,
        "library_versions": versions,
        "library_versions_note": "the versions of the environment that published this revision (the job's own "
                                 "environment may differ when it ran on another machine)",
    }


def write_snapshot_folder(root: Path, mat: SnapshotMaterial) -> list[str]:
    """Write the snapshot's folder of this revision under `root` (the staging repo root); its paths in the repo."""
    plan, data, state = mat.plan, mat.data, mat.plan.state
    base = root / snapshot_folder(plan.record.id)
    frozen = data.path
    base.mkdir(parents=True, exist_ok=True)
    written, published = _write_rows(base, mat)  # relative to `base`
    shutil.copyfile(frozen / MANIFEST_FILE, base / MANIFEST_FILE)
    written.append(MANIFEST_FILE)
    if mat.report is not None:
        write_report_files(mat.report, base / "report")
        written += sorted(p.relative_to(base).as_posix() for p in (base / "report").rglob("*") if p.is_file())
    n_predictions = _write_predictions(base, mat, written)
    n_open = _write_open_predictions(base, mat, written)
    _write_jobs_and_adapters(base, mat, written)
    # a retracted question of a held snapshot is counted, never named (not even by qid) until it is released
    hidden = held_qids(data) if state.held else frozenset()
    named = [r for r in plan.retractions if r.qid not in hidden]
    n_hidden = len(plan.retractions) - len(named)
    _write(base / "ERRATA.md", errata_markdown(named, title=f"Errata of {plan.record.id}", held=n_hidden,
                                               history=mat.history))
    written.append("ERRATA.md")
    _write_publish_info(base, mat, named, n_hidden)
    written.append("publish.json")
    card = SnapshotCard(
        manifest=data.manifest, sources=sorted({d.source for rows in data.docs.values() for d in rows}), state=state,
        hold=plan.hold, retractions=named, held_retractions=n_hidden, revision=mat.revision, history=mat.history,
        published=published, has_report=mat.report is not None, predictions=n_predictions, open_predictions=n_open,
        jobs=len(mat.jobs),
        adapters=0 if state.held else len(mat.adapters), manifest_sha256=sha256_file(frozen / MANIFEST_FILE),
        kept=mat.report.locality if mat.report is not None else (),
        open_track=mat.report.open_track if mat.report is not None else None,
    )
    hf_configs = [  # the card sits in hf/: its paths are relative to it
        Config(name=c.name, files=tuple((s, p.removeprefix("hf/")) for s, p in c.files))
        for c in configs_of([p for p in written if p.startswith("hf/data/")], languages=data.languages)
    ]
    _write(base / "hf" / "README.md", render_snapshot_card(card, hf_configs))
    written.append("hf/README.md")
    sums = "".join(f"{sha256_file(base / rel)}  {rel}\n" for rel in sorted(written))
    _write(base / "SHA256SUMS", sums)
    written.append("SHA256SUMS")
    return sorted(f"{snapshot_folder(plan.record.id)}/{rel}" for rel in written)


def _write_rows(base: Path, mat: SnapshotMaterial) -> tuple[list[str], dict[str, dict[str, int]]]:
    """The `hf/` question rows (without the retracted ones) and documents, none while the snapshot is held: the paths
    written, and per language and split how many rows were published."""
    data, state = mat.data, mat.plan.state
    frozen, retracted = data.path, frozenset(state.retracted)
    written: list[str] = []
    published: dict[str, dict[str, int]] = {lang: {} for lang in data.languages}
    if state.held:
        return written, published
    for lang in data.languages:
        for _, hf_split in _SPLITS:
            rel = f"hf/data/qa_{lang}-{hf_split}.jsonl"
            src = frozen / rel
            if not src.is_file():
                continue
            kept = _kept_lines(src, retracted)
            if kept:
                _write(base / rel, "".join(kept))
                written.append(rel)
                published[lang][hf_split] = len(kept)
    for lang in data.languages:  # the open track's questions (snapshots frozen before it have none)
        rel = f"hf/data/open_{lang}-test.jsonl"
        if (frozen / rel).is_file() and (kept := _kept_lines(frozen / rel, retracted)):
            _write(base / rel, "".join(kept))
            written.append(rel)
    for lang in data.languages:
        rel = f"hf/data/docs_{lang}-train.jsonl"
        if (frozen / rel).is_file():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(frozen / rel, base / rel)
            written.append(rel)
    return written, published


def _write_predictions(base: Path, mat: SnapshotMaterial, written: list[str]) -> int:
    """Every job's predictions (without the retracted questions; none while held), one file a job; how many."""
    state = mat.plan.state
    retracted = frozenset(state.retracted)
    by_job: dict[str, list[dict[str, object]]] = {}
    for p in [] if state.held else mat.predictions:
        row = _prediction_row(p)
        if row["qid"] in retracted:
            continue
        by_job.setdefault(job_key(p), []).append(row)
    for key, rows in sorted(by_job.items()):
        rows.sort(key=lambda r: (str(r["lang"]), str(r["variant"]), str(r["scorer"]), str(r["split"]),
                                 int(str(r["qid"]))))
        rel = f"predictions/{key}.jsonl"
        _write(base / rel, "".join(canonical_json(r) + "\n" for r in rows))
        written.append(rel)
    return len(by_job)


def _write_open_predictions(base: Path, mat: SnapshotMaterial, written: list[str]) -> int:
    """Every job's open answers of the test split (without the retracted open questions; none while held), one file a
    job (`clkt.report.open_predictions.OpenPrediction` rows); how many files."""
    state = mat.plan.state
    retracted = frozenset(state.retracted)
    by_job: dict[str, list[OpenResultRow]] = {}
    jury = jury_columns(mat.open_jury)
    for r in [] if state.held else mat.open_predictions:
        if r.split == "test" and r.open_qid not in retracted:
            by_job.setdefault(job_key(r), []).append(r)
    for key, rows in sorted(by_job.items()):
        rows.sort(key=lambda r: (r.lang, r.variant, r.scorer, r.open_qid))
        rel = f"open_predictions/{key}.jsonl"
        _write(base / rel, "".join(canonical_json(open_prediction(r, jury).model_dump(mode="json")) + "\n" for r in rows))
        written.append(rel)
    return len(by_job)


def _write_jobs_and_adapters(base: Path, mat: SnapshotMaterial, written: list[str]) -> None:
    for job in mat.jobs:
        rel = f"jobs/{job_key(job)}.json"
        _write(base / rel, json.dumps(_job_config(job, mat.versions), ensure_ascii=False, indent=1, sort_keys=True)
               + "\n")
        written.append(rel)
    for key, folder in [] if mat.plan.state.held else sorted(mat.adapters.items()):
        for f in sorted(folder.iterdir()):
            if f.is_file() and f.name.startswith("adapter_"):
                rel = f"adapters/{key}/{f.name}"
                (base / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, base / rel)
                written.append(rel)


def _write_publish_info(base: Path, mat: SnapshotMaterial, named: list[RetractionRecord], n_hidden: int) -> None:
    plan, state = mat.plan, mat.plan.state
    shown_state = state.model_dump(mode="json")
    shown_state["retracted"] = sorted(r.qid for r in named)
    publish_info = {
        "snapshot_id": plan.record.id, "revision": mat.revision, "state_key": state.key, "state": shown_state,
        "retracted_in_held_test_split": n_hidden,
        "hold": plan.hold.describe(), "held_until_period": plan.hold.until_period,
        "held_expected_release": plan.hold.expected.isoformat() if plan.hold.expected else None,
        "earlier_revisions": [{"revision": r.revision, "commit": r.commit_oid,
                               "committed_at": r.committed_at.isoformat()} for r in mat.history],
    }
    _write(base / "publish.json", json.dumps(publish_info, ensure_ascii=False, indent=1, sort_keys=True) + "\n")


def held_qids(data: SnapshotData) -> frozenset[int]:
    """The qids a hold keeps back: every question of the snapshot (both splits; layout 2)."""
    return frozenset(data.qids())


def write_repo_files(
    root: Path, *, repo: str, paths: Iterable[str], entries: Sequence[RepoEntry], retractions: Sequence[RetractionRecord],
    languages: Sequence[str], sources: Sequence[str], held_retractions: int = 0,
) -> list[str]:
    """The repo's `README.md` (a config per language of every snapshot folder in `paths`, the repo's files after this
    commit) and `ERRATA.md`; their paths."""
    by_snapshot: dict[str, list[str]] = {}
    for p in paths:
        parts = p.split("/", 2)
        if len(parts) == 3 and parts[0] == "snapshots":
            by_snapshot.setdefault(parts[1], []).append(parts[2])
    order = [e.snapshot_id for e in entries] + sorted(set(by_snapshot) - {e.snapshot_id for e in entries}, reverse=True)
    configs: list[Config] = []
    for sid in order:
        for c in configs_of(by_snapshot.get(sid, []), prefix=f"{sid}-", languages=languages):
            configs.append(Config(name=c.name, files=tuple((s, f"{snapshot_folder(sid)}/{p}") for s, p in c.files)))
    _write(root / "README.md", render_repo_card(repo, entries, configs, languages=languages, sources=sources))
    _write(root / "ERRATA.md", errata_markdown(retractions, title=f"Errata of {repo}", held=held_retractions))
    return ["ERRATA.md", "README.md"]

