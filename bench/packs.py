"""Bench: result packs (issue 33): `clkt evaluate` against the queue's own job, and the intake of 200 packs.

On a copy of a finished `clkt demo` (`--demo`, never modified: its store and snapshot are copied, its converted
models linked read-only):

- **evaluate**: `clkt evaluate` (a subprocess, as a user runs it) on the demo's snapshot with the embedded target,
  train language en, with the queue's job's own settings (its `spec.json`'s job settings, each that differs from
  the demo config's given by `--set`), against the queue's `cpt-lora` en job run again in the same bench run (side
  by side, as this machine's speed drifts: the copy's job rows, folders and shared base answers removed, the job
  enqueued once with its own seed and run by `clkt worker --burst`, timed from the worker's start to its exit, as
  `clkt evaluate` is timed from its start to its exit; `--order` says which runs first): the share of
  (scorer, variant, language, question) answers whose letter is the same (against that job, and against the demo's
  own job beside), and the wall time against that job's. Goals: the same letters on 100 % of the answers, wall
  <= 1.1x the queue's job.
- **intake**: 200 synthetic packs built from the queue job's predictions (each another model identity, ~10 % of its
  injected letters changed by a seeded draw, its metrics computed from its rows), written as folders, then each
  read and verified (`read_pack`: its files against the manifest) and taken in (`submit_pack`: coverage, window,
  rescoring, metrics, and its rows on the default board computed and kept in the store's figure cache,
  `clkt.report.kept_rows`) in process into the copied store, timed per pack; then the default board with the
  submitted rows listed (`--unverified`), in a fresh process three times (`load_leaderboard` timed, the imports
  apart; the process's wall beside): nothing of the intake's memory helps it. Goals: p95 per pack < 1 s, the
  leaderboard after them < 2 s.

    python bench/packs.py --demo DIR [--work DIR] [--packs 200] [--parts evaluate,intake] [--reuse]
                          [--order queue,evaluate|evaluate,queue] [--timeout-min 60]

`--reuse` reads the evaluate part's earlier pack and timing in `--work` instead of running it again. Ends with one
JSON line: {"bench": "packs", "figures", "goals", "met"}.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench.seeds import _enqueue, _reset, _worker  # noqa: E402
from clkt.config import load_settings  # noqa: E402
from clkt.inject.contract import JobOutcome, JobSpec  # noqa: E402
from clkt.layout import MODELS_DIR, job_dir  # noqa: E402
from clkt.packs.format import (  # noqa: E402
    FORMAT_VERSION,
    EnvironmentInfo,
    ModelIdentity,
    PackManifest,
    PredictionRow,
    SnapshotRef,
    StrategyInfo,
)
from clkt.packs.intake import submit_pack  # noqa: E402
from clkt.packs.metrics import compute_metrics  # noqa: E402
from clkt.packs.pack import read_pack, write_pack  # noqa: E402
from clkt.packs.runner import _predictions, job_settings  # noqa: E402
from clkt.report.window import default_query, load_leaderboard  # noqa: E402
from clkt.snapshots.layout import SnapshotData, load_snapshot_dir  # noqa: E402
from storage.engine import Store  # noqa: E402
from storage.gpu_jobs import jobs_for_snapshot  # noqa: E402

TARGET = "embedded:gemma-3-270m"
JOB = 1  # the demo's queue job: cpt-lora, train language en
PART_GOALS = {"evaluate": ("same_letters", "wall_ratio"), "intake": ("intake_p95_s", "leaderboard_after_s")}
GOALS = {"same_letters": "== 1.0", "wall_ratio": "<= 1.1", "intake_p95_s": "< 1.0", "leaderboard_after_s": "< 2.0"}


def _copy_demo(src: Path, dst: Path) -> Path:
    """The demo folder copied to `dst` with its converted models linked (read-only for the jobs)."""
    data = src / "clkt-data"
    if not (data / "clkt.db").is_file():
        raise SystemExit(f"{src} holds no finished demo (no clkt-data/clkt.db)")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, ignore=lambda d, names: [MODELS_DIR] if Path(d) == data else [], symlinks=True)
    (dst / "clkt-data" / MODELS_DIR).symlink_to((data / MODELS_DIR).resolve(), target_is_directory=True)
    cfg = dst / "packs.toml"
    cfg.write_text(f'offline_demo = true\ndata_dir = "{dst / "clkt-data"}"\n', encoding="utf-8")
    return cfg


def _pcts(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs), 4), "p95": round(xs[max(0, int(0.95 * len(xs) + 0.5) - 1)], 4),
            "max": round(xs[-1], 4), "n": len(xs)}


def _queue(demo: Path) -> tuple[JobSpec, JobOutcome, int]:
    """The queue's job: its spec, its outcome and its training seed, from its folder and the store."""
    import sqlite3

    folder = demo / "clkt-data" / "jobs" / str(JOB)
    spec = JobSpec.model_validate_json((folder / "spec.json").read_bytes())
    outcome = JobOutcome.model_validate_json((folder / "outcome.json").read_bytes())
    con = sqlite3.connect(demo / "clkt-data" / "clkt.db")
    try:
        status, seed = con.execute("SELECT status, seed FROM gpu_job WHERE id = ?", (JOB,)).fetchone()
    finally:
        con.close()
    if status != "done":
        raise SystemExit(f"the demo's job {JOB} is {status}, not done")
    return spec, outcome, int(seed)


def _letters(rows: list[PredictionRow]) -> dict[tuple[str, str, str, int], str | None]:
    return {(r.scorer, r.variant, r.lang, r.qid): r.predicted for r in rows}


def _rerun_queue_job(cfg: Path, spec: JobSpec, seed: int, work: Path, timeout_s: float) -> tuple[JobOutcome, float]:
    """The queue's job run again now on the copy (its rows, folders and the shared base answers removed first):
    its outcome and the worker's wall time."""
    if spec.strategy != "cpt-lora":
        raise SystemExit(f"the demo's job {JOB} is {spec.strategy}, the bench reruns cpt-lora")
    sid, target = asyncio.run(_reset(cfg))
    asyncio.run(_enqueue(cfg, sid, target, spec.train_lang, seed))
    wall = _worker(cfg.parent, cfg, timeout_s)  # in the copy: the store names the snapshot relative to it

    async def job() -> int:
        settings = load_settings(cfg, environ={})
        async with Store(url=settings.resolved_store_url) as store, store.session() as s:
            rows = [j for j in await jobs_for_snapshot(s, sid) if j.strategy == spec.strategy and j.train_lang == spec.train_lang]
        if len(rows) != 1 or rows[0].status != "done":
            raise SystemExit(f"the rerun queue job is {[r.status for r in rows]}, not one done (see {cfg.parent / 'worker.log'})")
        return rows[0].id

    folder = job_dir(load_settings(cfg, environ={}).data_dir, asyncio.run(job()))
    return JobOutcome.model_validate_json((folder / "outcome.json").read_bytes()), wall


def _run_evaluate(cfg: Path, spec: JobSpec, snap: SnapshotData, out: Path) -> tuple[float, list[str]]:
    shutil.rmtree(out.parent, ignore_errors=True)
    out.parent.mkdir(parents=True)
    own = job_settings(load_settings(cfg, environ={}).gpu)
    sets = [f"{k}={json.dumps(v)}" for k, v in job_settings(spec.gpu).items() if own.get(k) != v]
    cmd = [sys.executable, "-m", "clkt.cli", "evaluate", str(snap.path), "--model-path", TARGET, "--train-languages",
           spec.train_lang, "--strategy", spec.strategy, "--device", spec.device, "--out", str(out), "--config", str(cfg)]
    for s in sets:
        cmd += ["--set", s]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    t0 = time.perf_counter()
    with (out.parent / "run.log").open("w") as log:
        rc = subprocess.run(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    wall = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"clkt evaluate exited {rc} (see {out.parent / 'run.log'})")
    return wall, sets


def _same(mine: dict[tuple[str, str, str, int], str | None], theirs: dict[tuple[str, str, str, int], str | None]) -> float | None:
    keys = set(mine) | set(theirs)
    same = sum(1 for k in keys if k in mine and k in theirs and mine[k] == theirs[k])
    return round(same / len(keys), 4) if keys else None


def evaluate_part(demo: Path, cfg: Path, work: Path, snap: SnapshotData, *, reuse: bool, order: list[str],
                  timeout_s: float) -> dict[str, Any]:
    spec, outcome, seed = _queue(demo)
    out = work / "evaluate" / "pack"
    timing = work / "evaluate" / "timing.json"
    if not (reuse and timing.is_file() and out.is_dir()):
        t: dict[str, Any] = {"order": order}
        for step in order:
            if step == "queue":
                rerun, t["queue_wall_s"] = _rerun_queue_job(cfg, spec, seed, work, timeout_s)
                (work / "queue-outcome.json").write_text(rerun.model_dump_json())
            else:
                t["wall_s"], t["set"] = _run_evaluate(cfg, spec, snap, out)
        timing.write_text(json.dumps(t))
    t = json.loads(timing.read_text())
    rerun = JobOutcome.model_validate_json((work / "queue-outcome.json").read_bytes())
    mine = _letters(read_pack(out).predictions)
    theirs = _letters(_predictions(snap, [(spec.train_lang, rerun)]))
    demo_job = _letters(_predictions(snap, [(spec.train_lang, outcome)]))
    return {"answers": len(set(mine) | set(theirs)), "same_letters": _same(mine, theirs),
            "same_letters_as_demo_job": _same(mine, demo_job), "evaluate_wall_s": round(t["wall_s"], 1),
            "queue_job_wall_s": round(t["queue_wall_s"], 1), "wall_ratio": round(t["wall_s"] / t["queue_wall_s"], 3),
            "order": t["order"], "overrides": t["set"]}


def _manifest(snap: SnapshotData, spec: JobSpec, i: int) -> PackManifest:
    m = snap.manifest
    return PackManifest(
        created_at="2026-12-04T00:00:00+00:00", clkt_version="bench",
        snapshot=SnapshotRef(id=m.snapshot_id, content_sha256=m.content_sha256, spec=m.spec, period=m.period,
                             period_start=m.period_start, languages=list(m.languages)),
        model=ModelIdentity(name=f"bench-{i:03d}", model=f"/models/bench-{i:03d}", kind="base",
                            weights_sha256=hashlib.sha256(f"bench-{i}".encode()).hexdigest(), cutoff=spec.target.cutoff),
        strategy=StrategyInfo(name=spec.strategy, train_languages=[spec.train_lang], settings=job_settings(spec.gpu)),
        environment=EnvironmentInfo(python="3", platform="bench", device="cpu"), scorers=[], files={},
    )


def _synthetic(rows: list[PredictionRow], i: int) -> list[PredictionRow]:
    """`rows` with ~10 % of the injected letters changed (a draw seeded by `i`)."""
    rng = random.Random(i)
    out = []
    for r in rows:
        if r.variant == "injected" and rng.random() < 0.1:
            letter = rng.choice([x for x in "ABCD" if x != r.predicted])
            r = r.model_copy(update={"predicted": letter, "correct": False})
        out.append(r)
    return out


async def intake_part(demo: Path, cfg: Path, work: Path, snap: SnapshotData, n: int) -> dict[str, Any]:
    spec, outcome, _ = _queue(demo)
    rows = _predictions(snap, [(spec.train_lang, outcome)])
    scorers = sorted({r.scorer for r in rows})
    folder = work / "intake"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    paths = []
    for i in range(n):
        preds = _synthetic(rows, i)
        metrics = compute_metrics(preds, snap.languages, format_version=FORMAT_VERSION).model_dump(mode="json")
        write_pack(folder / f"pack-{i:03d}", _manifest(snap, spec, i).model_copy(update={"scorers": scorers}), preds, metrics)
        paths.append(folder / f"pack-{i:03d}")
    built = time.perf_counter() - t0
    settings = load_settings(cfg, environ={})
    board = default_query(settings.spec, settings.snapshot)  # each pack's rows on it are computed at intake
    per: list[float] = []
    async with Store(url=settings.resolved_store_url) as store:
        for p in paths:
            t = time.perf_counter()
            got = await submit_pack(store, read_pack(p), buffer_days=settings.spec.temporal_buffer_days, board=board)
            per.append(time.perf_counter() - t)
            if not got.stored:
                raise SystemExit(f"{p}: not stored")
    fresh = [_fresh_board(cfg) for _ in range(3)]  # each in a new process: nothing of this one's memory
    return {"packs": n, "answers_per_pack": len(rows), "build_s": round(built, 1), "intake_s": _pcts(per),
            "intake_p95_s": round(_pcts(per)["p95"], 4), "leaderboard_after_s": fresh[0]["load_s"],
            "leaderboard_again_s": [f["load_s"] for f in fresh[1:]], "process_wall_s": [f["wall_s"] for f in fresh],
            "rows": fresh[0]["rows"], "submitted_rows": fresh[0]["submitted_rows"]}


def _fresh_board(cfg: Path) -> dict[str, Any]:
    """The default board with the submitted rows listed (`--unverified`), in a new process: the load's seconds (the
    imports apart), the process's wall seconds, the rows."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--board", str(cfg)], capture_output=True, text=True, check=True).stdout
    got: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return {**got, "wall_s": round(time.perf_counter() - t, 3)}


async def _board_once(cfg: Path) -> dict[str, Any]:
    settings = load_settings(cfg, environ={})
    q = replace(default_query(settings.spec, settings.snapshot), unverified=True)
    async with Store(url=settings.resolved_store_url) as store:
        t = time.perf_counter()
        board = await load_leaderboard(store, q)
        load_s = time.perf_counter() - t
    return {"load_s": round(load_s, 3), "rows": len(board.rows),
            "submitted_rows": sum(1 for r in board.rows if r.track == "submitted")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demo", type=Path, help="a finished `clkt demo` folder (copied, never modified; required)")
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "results" / "packs-work")
    ap.add_argument("--packs", type=int, default=200)
    ap.add_argument("--parts", default="evaluate,intake")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--order", default="queue,evaluate", choices=["queue,evaluate", "evaluate,queue"],
                    help="which of the two runs of the evaluate part goes first")
    ap.add_argument("--timeout-min", type=float, default=60.0, help="the rerun queue job's worker")
    ap.add_argument("--board", type=Path, help=argparse.SUPPRESS)  # internal: one board in this process (see _fresh_board)
    args = ap.parse_args()
    if args.board is not None:
        print(json.dumps(asyncio.run(_board_once(args.board))))
        return
    if args.demo is None:
        ap.error("--demo is required")
    parts = set(args.parts.split(","))
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    cfg = _copy_demo(args.demo.resolve(), work / "demo")  # afresh each run; the evaluate part's pack is apart
    spec, _, _ = _queue(work / "demo")
    snap = load_snapshot_dir(work / "demo" / spec.snapshot_dir.relative_to(args.demo.resolve()))
    figures: dict[str, Any] = {}
    met = True
    if "evaluate" in parts:
        figures["evaluate"] = e = evaluate_part(work / "demo", cfg, work, snap, reuse=args.reuse,
                                                       order=args.order.split(","), timeout_s=args.timeout_min * 60)
        met = met and e["same_letters"] == 1.0 and e["wall_ratio"] <= 1.1
    if "intake" in parts:
        figures["intake"] = i = asyncio.run(intake_part(work / "demo", cfg, work, snap, args.packs))
        met = met and i["intake_p95_s"] < 1.0 and i["leaderboard_after_s"] < 2.0
    goals = {k: v for k, v in GOALS.items() if k in {x for part in figures for x in PART_GOALS[part]}}
    print(json.dumps({"bench": "packs", "figures": figures, "goals": goals, "met": met and bool(figures)}))


if __name__ == "__main__":
    main()
