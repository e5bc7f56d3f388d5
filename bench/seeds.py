"""Bench: training seeds (`spec.seeds`, issue 35 item 1) on the demo snapshot with the embedded target.

Takes the folder of a finished `clkt demo` (`--from DIR`, else runs one in a temporary folder), copies it (the
converted models linked, not copied), removes the copy's `cpt-lora` jobs of the snapshot, their folders and the
shared base answers, then enqueues the job (`cpt-lora`, train language `--train`, default en) once per seed and
runs each with `clkt worker --burst` on the demo's settings, timing each. The first seed computes the base
model's answers; the others read them from the shared cache. Then, from the store, as the leaderboard reads it
over the window of that one snapshot: Learn (injected accuracy, gain, McNemar p, learned) and Overall/Transfer per
seed (each seed alone: its own row and interval), the row pooled over the seeds (`clkt.report.seeds`: mean,
between-seed std, the interval over entities alone and over entities and seeds).

Goals: the seeds' total wall time at most 3.3x the first seed's (`wall_ratio`: the base pass is computed once and
shared); for Overall and Transfer, the pooled interval (entities and seeds) at least as wide as the widest
single-seed interval's sampling part (`<metric>_pooled_ci_width` >= `<metric>_widest_single_ci_width`; a single
seed's interval is its sampling interval); the per-domain pooled table (`clkt leaderboard --by domain`) over the
window of that one snapshot, on the seed the report's tables are on (the lowest), equals the snapshot's own
report Table 2 field by field (`table2_fields_mismatched` == 0, no cell on one side only). Ends with one JSON line;
on 2 idle CPU cores a demo job takes about 6 minutes; under a load of 5-10 the first seed alone ran past 40 minutes
(base pass 18 min, 5 epochs with validation about 20 min, then the test pass), hence `--timeout-min` 90 per seed.

`--record` adds each seed's figures to the demo's spread (`bench/results/demo-spread.json`, issue 45 item 5: kind
`seed`, or `deterministic` with `--deterministic`, which runs the jobs with `[gpu] deterministic = true` on
`--threads` torch threads, default 1). `seed0_vs_demo` lists the figures where this copy's seed-0 job differs from
the demo's own report (the same job run again on the same machine).

    .venv/bin/python bench/seeds.py [--from DIR] [--seeds 3] [--train en] [--timeout-min 90]
                                    [--record] [--deterministic] [--threads N]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import delete, update
from sqlmodel import col

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.demo import run_demo  # noqa: E402
from bench.support import spread  # noqa: E402
from clkt.config import load_settings  # noqa: E402
from clkt.layout import MODELS_DIR, base_cache_dir, job_dir  # noqa: E402
from clkt.report.domain_board import build_domain_board  # noqa: E402
from clkt.report.leaderboard import build_rows  # noqa: E402
from clkt.report.leaderboard_data import Estimate, LeaderboardQuery, LeaderRow  # noqa: E402
from clkt.report.window import Window, resolve_window  # noqa: E402
from clkt.report.writer import load_report_data  # noqa: E402
from storage.engine import Store  # noqa: E402
from storage.entity_domains import entity_domains  # noqa: E402
from storage.gpu_jobs import enqueue_gpu_jobs, jobs_for_snapshot  # noqa: E402
from storage.leaderboard import window_snapshots  # noqa: E402
from storage.models import GpuJob, LeaseStatus  # noqa: E402

STRATEGY = "cpt-lora"
WALL_RATIO_GOAL = 3.3
METRICS = ("overall", "transfer")


def _copy_demo(src: Path, dst: Path) -> Path:
    """The demo folder copied to `dst` with its converted models linked (read-only for the jobs)."""
    data = src / "clkt-data"
    if not (data / "clkt.db").is_file():
        raise SystemExit(f"{src} holds no finished demo (no clkt-data/clkt.db)")
    shutil.copytree(src, dst, ignore=lambda d, names: [MODELS_DIR] if Path(d) == data else [], symlinks=True)
    (dst / "clkt-data" / MODELS_DIR).symlink_to((data / MODELS_DIR).resolve(), target_is_directory=True)
    return dst


def _config(work: Path, seeds: list[int], *, deterministic: bool = False, threads: int | None = None,
            open_answers: bool | None = None) -> Path:
    cfg = work / "seeds.toml"
    lines = ["offline_demo = true", f'data_dir = "{work / "clkt-data"}"', "[spec]", f"seeds = {seeds}"]
    gpu = (["deterministic = true"] if deterministic else []) + ([f"torch_threads = {threads}"] if threads else [])
    gpu += [f"open_answers = {str(open_answers).lower()}"] if open_answers is not None else []
    cfg.write_text("\n".join(lines + (["[gpu]", *gpu] if gpu else [])) + "\n", encoding="utf-8")
    return cfg


async def _reset(cfg: Path, strategy: str = STRATEGY) -> tuple[str, str]:
    """Remove the copy's `strategy` jobs of its snapshot (rows, folders, base answers) and cancel its unfinished
    jobs of any other; (snapshot id, target)."""
    settings = load_settings(cfg, environ={})
    async with Store(url=settings.resolved_store_url) as store:
        async with store.session() as s:
            snaps = await window_snapshots(s, settings.spec.name)
            if not snaps:
                raise SystemExit("the demo store has no frozen snapshot")
            sid = snaps[-1].id
            jobs = [j for j in await jobs_for_snapshot(s, sid) if j.strategy == strategy]
        async with store.transaction() as s:
            await s.execute(delete(GpuJob).where(col(GpuJob.snapshot_id) == sid, col(GpuJob.strategy) == strategy))
            # a demo stopped mid-job leaves its job pending: the bench's worker would run it before the bench's own
            await s.execute(update(GpuJob).where(col(GpuJob.status).in_([LeaseStatus.pending, LeaseStatus.leased]))
                            .values(status=LeaseStatus.cancelled))
    for j in jobs:  # an id may be given again: its old folder would be resumed from
        shutil.rmtree(job_dir(settings.data_dir, j.id), ignore_errors=True)
    shutil.rmtree(base_cache_dir(settings.data_dir, sid), ignore_errors=True)
    return sid, settings.spec.targets[0].name


async def _enqueue(cfg: Path, sid: str, target: str, train: str, seed: int, strategy: str = STRATEGY) -> None:
    settings = load_settings(cfg, environ={})
    async with Store(url=settings.resolved_store_url) as store, store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=sid, targets=[target], strategies=[strategy], train_langs=[train],
                               max_attempts=1, seeds=[seed])


def _worker(work: Path, cfg: Path, timeout_s: float) -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    with (work / "worker.log").open("ab") as log:
        try:
            proc = subprocess.run([sys.executable, "-m", "clkt.cli", "worker", "--burst", "--config", str(cfg)],
                                  cwd=work, env=env, stdout=log, stderr=log, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"clkt worker still running after {timeout_s / 60:.0f} min (--timeout-min; a loaded "
                             f"machine is slower); see {work / 'worker.log'}") from None
    if proc.returncode != 0:
        raise SystemExit(f"clkt worker exited {proc.returncode}; see {work / 'worker.log'}")
    return time.perf_counter() - t0


def _width(e: Estimate, *, sampling: bool = False) -> float | None:
    ci = (e.sampling_ci or e.ci) if sampling else e.ci
    return None if ci is None else ci[1] - ci[0]


async def _table2_check(store: Store, q: LeaderboardQuery, w: Window, sid: str) -> dict[str, Any]:
    """The per-domain pooled table (`clkt leaderboard --by domain`) over the window of the one snapshot, every
    strategy, on the jobs of the lowest seed (the seed the snapshot's report tables are on), against the report's
    own Table 2: the same cells, and per cell Overall and Transfer mean and std compared field by field."""
    data = dataclasses.replace(w.data, jobs=tuple(j for j in w.data.jobs if j.seed == min(x.seed for x in w.data.jobs)))
    ids = {int(e) for p in data.packs for e in np.frombuffer(p.entity_ids, dtype="<i8").tolist()}
    async with store.session() as s:
        domain_of = await entity_domains(s, ids)
    board = await asyncio.to_thread(build_domain_board, dataclasses.replace(w, data=data), q, domain_of=domain_of)
    report = await load_report_data(store, sid)
    mine = {(c.target, c.strategy, c.scorer, c.domain): c for c in board.cells}
    theirs = {(c.model, c.strategy, c.scorer, c.domain): c for c in report.table2}
    diff, compared, mismatched = 0.0, 0, []
    for key in sorted(set(mine) & set(theirs)):
        for m in METRICS:
            a, b = mine[key].metrics[m], theirs[key].values.get(m)
            for field in ("mean", "std"):
                x, y = getattr(a, field), getattr(b, field) if b is not None else None
                compared += 1
                if (x is None) != (y is None) or (x is not None and y is not None and abs(x - y) > 1e-12):
                    mismatched.append(f"{'/'.join(key)} {m} {field}: {x} vs {y}")
                elif x is not None and y is not None:
                    diff = max(diff, abs(x - y))
    return {"table2_cells": len(theirs), "table2_cells_by_domain": len(mine),
            "table2_cells_only_one_side": len(set(mine) ^ set(theirs)), "table2_fields_compared": compared,
            "table2_fields_mismatched": len(mismatched), "table2_mismatches": mismatched[:5],
            "table2_max_abs_diff": diff}


def _seed_figures(row: LeaderRow) -> dict[str, Any]:
    lr = row.learn
    out: dict[str, Any] = {"learn_injected": lr.injected.value, "learn_base": lr.base, "learn_gain": lr.gain.value,
                           "learn_p": lr.p_value, "learned": lr.learned}
    for m in METRICS:
        e = row.metric(m)
        out[m] = e.value
        out[f"{m}_ci"] = e.ci
    return out


async def _measure(cfg: Path, seeds: list[int]) -> dict[str, Any]:
    """Per seed its own row, and the row pooled over the seeds (the leaderboard over the snapshot)."""
    settings = load_settings(cfg, environ={})
    q = LeaderboardQuery(spec=settings.spec.name, cadence=settings.snapshot.cadence, strategy=STRATEGY,
                         languages=tuple(settings.spec.languages), min_questions=0)
    async with Store(url=settings.resolved_store_url) as store:
        w = await resolve_window(store, q)
        every = dataclasses.replace(q, strategy=None)
        t2 = await _table2_check(store, every, await resolve_window(store, every), w.snapshots[-1].id)
    langs = list(settings.spec.languages)
    rows = build_rows(w.data, langs, min_questions=0)
    # the row pooled over the seeds (one seed: its own row, on the first scorer, as the report orders them)
    pooled = next((r for r in rows if r.seeds), None) or next(r for r in rows if r.strategy == STRATEGY)
    single = {}
    for s in seeds:
        data = dataclasses.replace(w.data, jobs=tuple(j for j in w.data.jobs if j.seed == s))
        single[s] = next(r for r in build_rows(data, langs, min_questions=0) if r.scorer == pooled.scorer)
    out: dict[str, Any] = {"scorer": pooled.scorer, "per_seed": {str(s): _seed_figures(r) for s, r in single.items()}}
    for m in METRICS:
        e = pooled.metric(m)
        widths = [x for r in single.values() if (x := _width(r.metric(m), sampling=True)) is not None]
        out |= {f"{m}_mean": e.value, f"{m}_between_seed_std": e.seed_std, f"{m}_pooled_ci": e.ci,
                f"{m}_sampling_ci": e.sampling_ci, f"{m}_pooled_ci_width": _width(e),
                f"{m}_widest_single_ci_width": max(widths) if widths else None}
    out["learned_in_every_seed"] = pooled.learn.learned
    return out | t2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="from_dir", type=Path, help="a finished `clkt demo` folder (else one is run)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--train", default="en")
    ap.add_argument("--timeout-min", type=float, default=90.0, help="per seed's worker")
    ap.add_argument("--record", action="store_true", help="add each seed's figures to bench/results/demo-spread.json")
    ap.add_argument("--deterministic", action="store_true", help="[gpu] deterministic = true (see above)")
    ap.add_argument("--threads", type=int, help="[gpu] torch_threads (default: 1 with --deterministic, else torch's)")
    a = ap.parse_args()
    threads = a.threads or (1 if a.deterministic else None)
    figures: dict[str, Any] = {}
    src = a.from_dir
    if src is None:
        src = Path(tempfile.mkdtemp(prefix="clkt-seeds-demo-"))
        wall, _ = run_demo(src, a.timeout_min)
        figures["demo_wall_s"] = round(wall, 1)
    work = _copy_demo(src.resolve(), Path(tempfile.mkdtemp(prefix="clkt-seeds-bench-")) / "demo")
    seeds = list(range(a.seeds))
    cfg = _config(work, seeds, deterministic=a.deterministic, threads=threads)
    demo_head = spread.headline(json.loads(next(iter(sorted(src.glob("clkt-data/reports/*/metrics.json")))).read_text(
        encoding="utf-8")))
    sid, target = asyncio.run(_reset(cfg))
    walls = []
    for s in seeds:
        asyncio.run(_enqueue(cfg, sid, target, a.train, s))
        walls.append(_worker(work, cfg, a.timeout_min * 60))
    figures |= {"snapshot": sid, "target": target, "train": a.train, "seeds": seeds,
                "seed_wall_s": [round(x, 1) for x in walls], "wall_ratio": round(sum(walls) / walls[0], 3)}
    figures |= asyncio.run(_measure(cfg, seeds)) | {"deterministic": a.deterministic, "threads": threads}
    scorer = figures["scorer"]
    heads = {s: spread.seed_headline(f, scorer) for s, f in figures["per_seed"].items()}
    if "0" in heads:
        figures["seed0_vs_demo"] = [f"{k}: {v:.4f} here, {demo_head[k]:.4f} in the demo's report"
                                    for k, v in heads["0"].items() if k in demo_head and abs(v - demo_head[k]) > 1e-9]
    if a.record:
        kind = "deterministic" if a.deterministic else "seed"
        for (s, head), wall in zip(heads.items(), walls, strict=True):
            spread.append(spread.observation(f"bench/seeds.py seed {s}", kind, head, seed=int(s), threads=threads,
                                             job_wall_s=round(wall, 1)))
    goals = {"wall_ratio": f"<= {WALL_RATIO_GOAL}",
             **{f"{m}_pooled_ci_width": f">= {m}_widest_single_ci_width" for m in METRICS},
             "table2_fields_mismatched": "== 0 (and table2_cells_only_one_side == 0, table2_fields_compared > 0)"}
    met = figures["wall_ratio"] <= WALL_RATIO_GOAL
    for m in METRICS:
        p, w = figures[f"{m}_pooled_ci_width"], figures[f"{m}_widest_single_ci_width"]
        met = met and p is not None and w is not None and p >= w
    met = met and figures["table2_fields_mismatched"] == 0 and figures["table2_cells_only_one_side"] == 0 \
        and figures["table2_fields_compared"] > 0
    print(json.dumps({"bench": "seeds", "figures": figures, "goals": goals, "met": met}))


if __name__ == "__main__":
    main()
