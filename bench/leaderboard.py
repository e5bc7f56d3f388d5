"""Leaderboard benchmark: `clkt leaderboard` over the whole window and the `/leaderboard` page on a store of 24 monthly
snapshots x 4 targets x 5 languages, with 2,000 questions each. Goal: both under 2 s p95 (wall time, 2 cores).

"2,000 questions each" is read as: every snapshot holds 2,000 questions (400 entities of 5 questions), each asked
in all 5 languages; every target has one finished job per train language (5, one strategy) per snapshot, each
answering all 10,000 question x language items with the base and the injected model: 20,000 results per job,
100,000 per snapshot and target, 9.6 million in the store (480 jobs). Validity as a living store has it: the
fourth target is out of its window for the first 6 snapshots, and each target recognised 1 % of each snapshot's
entities (exclusions).

The predictions are written directly through the store: the results with one `executemany` per job (the
repository's `write_job_results` inserts 500 rows a statement, too slow to fill 9.6 million in a bench), then the
job's result packs with `storage.result_packs.write_result_packs`, the very function `write_job_results` calls in
the same transaction; the bench checks one job's stored packs against packs built from its stored results.

Timed, side by side in one run:
- `clkt leaderboard --config C` as a subprocess (text output; also `--json`), as a user runs it again and again: the
  first (untimed) run computes the result and keeps it (`clkt.report.board_cache`), the timed ones read it back
  while the store is unchanged (the goal); `--no-cache` (a fresh computation every run: a figure without a goal,
  what the first run after a new job or snapshot costs); and `clkt --help` (the CLI's start-up);
- `load_leaderboard` in process (the reads and the statistics alone);
- `GET /leaderboard` through the pages application on loopback with the result cache off (every GET reads and
  bootstraps afresh: what the goal is about) and on (what a browser's page + image requests get), and `trend.png`.

    python bench/leaderboard.py [--rounds 10] [--snapshots 24] [--targets 4] [--questions 2000] [--store DIR]

`--store DIR` keeps the filled store in DIR and reuses it on the next run (filling 9.6 million results takes
minutes on a busy machine); without it the store lives in a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import insert, select, update
from sqlmodel import col

from clkt.config import load_settings
from clkt.report.board_cache import board_cache_dir
from clkt.report.window import LeaderboardQuery, load_leaderboard
from clkt.services import page_context
from clkt.web import pages_app
from clkt.web.leaderboard import BoardCache
from storage.engine import Store
from storage.enums import LeaseStatus, SnapshotStatus, SnapshotTargetStatus
from storage.gpu_jobs import enqueue_gpu_jobs
from storage.models import Entity, GpuJob, Question, Snapshot
from storage.result_packs import packs_from_results, result_packs, write_result_packs
from storage.targets import TargetIdentity, add_exclusions, record_snapshot_target, sync_targets

REPO = Path(__file__).resolve().parents[1]
LANGS = ["en", "ja", "zh", "fr", "es"]
GOAL_S = 2.0
PER_ENTITY = 5
WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def _periods(n: int) -> list[str]:
    return [f"{2024 + i // 12}-{i % 12 + 1:02d}" for i in range(n)]


async def fill(store: Store, *, snapshots: int, targets: int, questions: int) -> dict[str, float]:
    t0 = time.perf_counter()
    names = [f"target-{i}" for i in range(targets)]
    periods = _periods(snapshots)
    ents_per = questions // PER_ENTITY
    rng = random.Random(0)
    async with store.transaction() as s:
        await sync_targets(s, [TargetIdentity(name=n, model=f"org/{n}", kind="instruct") for n in names])
    results = 0
    for si, period in enumerate(periods):
        sid = f"bench-{period}-{si:012d}"
        first_e, first_q = si * ents_per + 1, si * questions + 1
        y, m = (int(x) for x in period.split("-"))
        async with store.transaction() as s:
            s.add(Snapshot(id=sid, spec="bench", period=period, status=SnapshotStatus.frozen, manifest={"languages": LANGS}))
            await s.execute(insert(Entity), [dict(
                id=first_e + e, source="bench", external_id=f"{sid}/{e}", domain="music", name=f"entity {e}",
                occurred_at=datetime(y, m, 1 + e % 28, tzinfo=UTC), payload={}, facts={}, content_hash="x", status="ready",
                discovered_at=WHEN, updated_at=WHEN) for e in range(ents_per)])
            await s.execute(insert(Question), [dict(
                id=first_q + q, entity_id=first_e + q // PER_ENTITY, slot=f"s{q}", lang="en", question="q?", options=["a", "b", "c", "d"],
                answer_index=0, evidence="x", generator="bench", prompt_version="v", status="translated", created_at=WHEN)
                for q in range(questions)])
            await enqueue_gpu_jobs(s, snapshot_id=sid, targets=names, strategies=["cpt-lora"], train_langs=LANGS, max_attempts=1)
            for ti, name in enumerate(names):
                if ti == 3 and si < 6:
                    await record_snapshot_target(s, snapshot_id=sid, target=name, status=SnapshotTargetStatus.out_of_window, entities=ents_per)
                    continue
                excl = [(first_e + e, "known") for e in range(ents_per) if (e * 31 + ti * 7) % 100 == 0]
                await record_snapshot_target(s, snapshot_id=sid, target=name, status=SnapshotTargetStatus.ready, entities=ents_per,
                                             excluded=len(excl))
                await add_exclusions(s, snapshot_id=sid, target=name, entities=excl)
        async with store.session() as s:
            jobs = (await s.execute(select(GpuJob.id, GpuJob.target_model, GpuJob.train_lang).where(GpuJob.snapshot_id == sid))).all()
        for job_id, target, train in jobs:
            skill = 0.5 + 0.1 * int(target.rsplit("-", 1)[1])
            rows = []
            for q in range(first_q, first_q + questions):
                for lang in LANGS:
                    rows.append((job_id, q, lang, "base", "generate", "test", "A", rng.random() < 0.25, ""))
                    p = skill if lang == train else skill * 0.6
                    rows.append((job_id, q, lang, "injected", "generate", "test", "A", rng.random() < p, ""))
            async with store.transaction() as s:
                conn = await s.connection()
                await conn.exec_driver_sql(
                    "INSERT INTO question_result (job_id, question_id, lang, variant, scorer, split, predicted, correct, raw) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
                await write_result_packs(s, job_id, [(r[1], r[2], r[3], r[4], r[5], r[7]) for r in rows])
                await s.execute(update(GpuJob).where(col(GpuJob.id) == job_id).values(status=LeaseStatus.done))
            results += len(rows)
    return {"fill_s": round(time.perf_counter() - t0, 1), "results": results}


def _pcts(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs), 3), "p95": round(xs[max(0, int(0.95 * len(xs) + 0.5) - 1)], 3), "max": round(xs[-1], 3)}


def _cli(cfg: Path, args: list[str], rounds: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    out: list[float] = []
    for i in range(rounds + 1):
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "clkt.cli", *args, "--config", str(cfg)] if args != ["--help"]
                             else [sys.executable, "-m", "clkt.cli", "--help"], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
        if res.returncode != 0:
            raise SystemExit(f"clkt {' '.join(args)} failed: {res.stderr[-2000:]}")
        if i:  # the first run warms the file cache
            out.append(time.perf_counter() - t0)
    return out


async def _pages(store: Store, cfg: Path, rounds: int) -> dict[str, dict[str, float]]:
    settings = load_settings(cfg, environ={})
    out: dict[str, dict[str, float]] = {}
    async with TestClient(TestServer(pages_app(page_context(settings, store=store)), host="127.0.0.1")) as client:
        for label, size in (("cold", 0), ("warm", 8)):
            BoardCache.CACHE_SIZE = size
            walls: list[float] = []
            for i in range(rounds + 1):
                t0 = time.perf_counter()
                async with client.get("/leaderboard") as r:
                    body = await r.text()
                    assert r.status == 200 and "Paired comparison" in body, (r.status, body[:500])
                if i:
                    walls.append(time.perf_counter() - t0)
            out[f"page_{label}_s"] = _pcts(walls)
        BoardCache.CACHE_SIZE = 0
        walls = []
        for _ in range(3):
            t0 = time.perf_counter()
            async with client.get("/leaderboard/trend.png") as r:
                assert r.status == 200
                await r.read()
            walls.append(time.perf_counter() - t0)
        out["trend_png_cold_s"] = _pcts(walls)
    BoardCache.CACHE_SIZE = 8
    return out


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--snapshots", type=int, default=24)
    ap.add_argument("--targets", type=int, default=4)
    ap.add_argument("--questions", type=int, default=2000)
    ap.add_argument("--store", type=Path, default=None, help="keep (and reuse) the filled store in this folder")
    args = ap.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as d:
        root = args.store or Path(d)
        root.mkdir(parents=True, exist_ok=True)
        filled = root / "filled.json"
        cfg = root / "clkt.toml"
        cfg.write_text(f'data_dir = "{root}"\n[spec]\nname = "bench"\nlanguages = {json.dumps(LANGS)}\n[gpu]\nenabled = false\n',
                       encoding="utf-8")
        settings = load_settings(cfg, environ={})
        figures: dict[str, object] = {}
        async with Store(url=settings.resolved_store_url) as store:
            shape = {"snapshots": args.snapshots, "targets": args.targets, "questions": args.questions}
            if filled.is_file() and json.loads(filled.read_text())["shape"] == shape:
                figures.update(json.loads(filled.read_text())["fill"], reused=True)
            else:
                got = await fill(store, snapshots=args.snapshots, targets=args.targets, questions=args.questions)
                filled.write_text(json.dumps({"shape": shape, "fill": got}))
                figures.update(got)
            async with store.session() as s:
                job = (await s.execute(select(col(GpuJob.id)).order_by(col(GpuJob.id).desc()).limit(1))).scalar_one()
                stored = await result_packs(s, [job])
                built = await packs_from_results(s, job, scorer=None)
            figures["packs_match_results"] = [(p.langs, p.question_ids, p.entity_ids, p.flags) for p in stored] == \
                [(p.langs, p.question_ids, p.entity_ids, p.flags) for p in built]
            q = LeaderboardQuery(spec="bench", languages=tuple(LANGS))
            walls = []
            for i in range(args.rounds + 1):
                t0 = time.perf_counter()
                board = await load_leaderboard(store, q)
                if i:
                    walls.append(time.perf_counter() - t0)
            figures["in_process_s"] = _pcts(walls)
            figures["rows"] = len(board.rows)
            figures["questions_per_row"] = sorted({r.questions for r in board.rows})
            pages = await _pages(store, cfg, args.rounds)
            page = pages["page_cold_s"]
            figures.update(pages)
        db = root / "clkt.db"
        figures["store_mb"] = round(db.stat().st_size / 2**20)
        figures["cli_help_s"] = _pcts(_cli(cfg, ["--help"], 3))
        shutil.rmtree(board_cache_dir(root), ignore_errors=True)  # the first (untimed) run computes and keeps the result
        cli = _pcts(_cli(cfg, ["leaderboard"], args.rounds))
        figures["cli_s"] = cli
        figures["cli_json_s"] = _pcts(_cli(cfg, ["leaderboard", "--json"], 2))
        figures["cli_no_cache_s"] = _pcts(_cli(cfg, ["leaderboard", "--no-cache"], args.rounds))  # a fresh computation each run
    figures["load_before"] = [round(x, 2) for x in load_before]
    figures["load_after"] = [round(x, 2) for x in os.getloadavg()]
    figures["cpus"] = os.cpu_count()
    cli_p95 = cli["p95"]
    page_p95 = page["p95"]
    goals = {"cli_p95_s": f"< {GOAL_S}", "page_cold_p95_s": f"< {GOAL_S}", "packs_match_results": "true"}
    met = bool(cli_p95 < GOAL_S and page_p95 < GOAL_S and figures["packs_match_results"])
    print(json.dumps({"bench": "leaderboard", "figures": figures, "goals": goals, "met": met}))


if __name__ == "__main__":
    asyncio.run(main())
