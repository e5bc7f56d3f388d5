"""A year of clkt: the real daemon (`clkt run`, one process, a config file) against the living upstream (the replay
server's generator mode) for `--months` consecutive simulated months on a simulated calendar (`[daemon]
clock_start` + `clock_speed`), with the embedded target, a second target (`embedded:smollm2-135m-instruct`)
added at `--add-target-month` by a restart with the new config (a day after that month began), and small GPU
jobs (1 epoch, 1 train language, 128 tokens, 1 torch thread) from `--gpu-from-month` on, switched on by a restart in the middle
of the month before (so that the snapshot frozen as that month begins gets jobs, and jobs run in that month and
every one after it; a restart costs a few simulated days of the clock, never at a month's end).

Why the GPU is switched on late: a GPU job of the 270M target on 2 CPU cores takes minutes of real time, and a
simulated month lasts three minutes at 14,400x; jobs all year (12 snapshots x up to 2 targets) would take more
real time than the 40 minutes the whole year has, so they run in the last two months (the issue's minimum).

Per simulated month it prints: the snapshot and when it froze after its period closed, its entities and
questions, the daemon's RSS, the store's and the data directory's size (the embedded models' folder left out),
tasks pending and failed, GPU jobs, the entities carried into its snapshot from earlier months. Goals (issue 19, 50):
every month's snapshot frozen exactly once, within a
simulated day after its period closed; no entity in two snapshots; RSS at the last month <= 1.15x month 3, or,
once a target was added, x the first whole month with both targets (`rss_last_over_month3` is printed too: a
target's weights stay loaded, growth with the configuration, not with time); store bytes per entity (the pages
the data uses, not SQLite's journal) flat within 20 % from month 3 on; the data directory within its budget
(what the retention defaults keep: the store, the exports, the reports and one adapter per GPU job); 0 failed
and 0 stuck tasks (leased past their lease, or claimable for a simulated day in a queue whose workers hold
nothing); the added target has `ready` rows (`storage.targets`) with its exclusions recorded for the months before
it came, and results for the GPU months. Ends with one JSON line; the load (`os.getloadavg`) is reported beside
the times. After the last month it waits (`--wait-jobs-min`) for the GPU jobs of every GPU month's snapshot
but the last; the clock goes on meanwhile, so later months may freeze too (they are not counted). The added
target's jobs of earlier snapshots (queued once it is ready for them while the GPU is on: its catch-up) are
counted (`catch_up_jobs`), not waited for. At the end no entity of a closed month is lost (`entities_lost`: expired,
or ready, probed clean by every target and ready before the last freeze, yet in no snapshot; those that became ready
since wait for the next snapshot: `entities_waiting_end`, reported), and the whole year takes at most 40 minutes.

    python bench/year.py [--months 12] [--speed 14400] [--rate 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support.year import GEMMA, SMOLLM, SOURCES, Daemon, Plan, StoreView, dir_bytes, month_start, write_config

MB = 2**20
WALL_GOAL_MIN = 40.0  # issue 50: the year holds on a machine that is not idle


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--months", type=int, default=12)
    ap.add_argument("--start", default="2026-01-01", help="the first simulated day (UTC)")
    ap.add_argument("--speed", type=float, default=14_400.0, help="simulated seconds per real second")
    ap.add_argument("--rate", type=float, default=1.5, help="new entities per source per simulated week")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--languages", default="en,fr")
    ap.add_argument("--sources", default=",".join(SOURCES), help="the sources polled (the others are disabled)")
    ap.add_argument("--probe-tokens", type=int, default=16, help="the length of a target's probe answer")
    ap.add_argument("--add-target-month", type=int, default=6, help="0: no second target")
    ap.add_argument("--gpu-from-month", type=int, default=11, help="0: no GPU jobs")
    ap.add_argument("--wait-jobs-min", type=float, default=10.0,
                    help="at most this many real minutes after the year for the GPU jobs of every GPU month's snapshot but the last")
    ap.add_argument("--max-wall-min", type=float, default=60.0, help="give up after this many real minutes")
    ap.add_argument("--job-budget-mb", type=float, default=20.0,
                    help="what retention keeps of a committed GPU job: its best epoch's adapter (15 MB for the 270M target)")
    ap.add_argument("--models", type=Path, default=Path(os.environ.get("CLKT_TEST_MODELS_DIR") or "/tmp/clkt-test-data") / "models",
                    help="converted embedded models to reuse (linked into the data dir, not counted in its size)")
    ap.add_argument("--keep", type=Path, default=None, help="work here and keep it (default: a temporary folder)")
    return ap.parse_args()


class Year:
    def __init__(self, a: argparse.Namespace, work: Path) -> None:
        self.a = a
        self.work = work
        self.data = work / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        if a.models.is_dir() and not (self.data / "models").exists():
            (self.data / "models").symlink_to(a.models.resolve(), target_is_directory=True)
        d0 = datetime.fromisoformat(a.start).replace(tzinfo=UTC)
        self.first = (d0.year, d0.month)
        self.start = d0
        self.end = self.month_end(a.months)
        self.store = StoreView(self.data / "clkt.db")
        self.rows: list[dict[str, Any]] = []
        self.restarts: list[dict[str, Any]] = []
        self.daemon: Daemon | None = None
        self.phase = 0
        self.waited_for_jobs_s = 0.0
        self.t0 = time.monotonic()

    def month_begin(self, m: int) -> datetime:
        return month_start(self.first[0], self.first[1] + m - 1)

    def month_end(self, m: int) -> datetime:
        return self.month_begin(m + 1)

    def gpu_switch(self) -> datetime:
        """When the GPU is switched on: the middle of the month before `--gpu-from-month`."""
        m = self.a.gpu_from_month
        return self.month_begin(m) if m <= 1 else self.month_begin(m - 1) + timedelta(days=14)

    def label(self, m: int) -> str:
        return self.month_begin(m).strftime("%Y-%m")

    def plan(self, clock_start: datetime) -> Plan:
        a = self.a
        targets = [GEMMA] + ([SMOLLM] if a.add_target_month and clock_start >= self.month_begin(a.add_target_month) else [])
        gpu = bool(a.gpu_from_month) and clock_start >= self.gpu_switch()
        return Plan(data_dir=self.data, clock_start=clock_start, speed=a.speed, generator_start=self.start, rate=a.rate,
                    seed=a.seed, targets=tuple(targets), gpu=gpu, languages=tuple(a.languages.split(",")),
                    sources=tuple(a.sources.split(",")), probe_tokens=a.probe_tokens)

    def launch(self, clock_start: datetime) -> None:
        self.phase += 1
        plan = self.plan(clock_start)
        cfg = write_config(plan, self.work / f"clkt-{self.phase}.toml")
        self.daemon = Daemon(config=cfg, data_dir=self.data, log=self.work / "daemon.log")
        t = time.monotonic()
        self.daemon.start()
        self.restarts.append({"phase": self.phase, "clock_start": clock_start.isoformat(),
                              "targets": [x["name"] for x in plan.targets], "gpu": plan.gpu,
                              "start_s": round(time.monotonic() - t, 1)})
        print(f"phase {self.phase}: daemon up from {clock_start:%Y-%m-%d %H:%M} (targets "
              f"{', '.join(x['name'] for x in plan.targets)}; gpu {'on' if plan.gpu else 'off'})", file=sys.stderr)

    def restart(self, last_seen: datetime, seen_real: float) -> None:
        assert self.daemon is not None
        rc = self.daemon.stop()
        # the clock went on while the daemon stopped: pick up where it was, never earlier than the store's last write
        now = last_seen + timedelta(seconds=(time.monotonic() - seen_real) * self.a.speed)
        stored = self.store.latest_time()
        start = max(now, stored or now) + timedelta(minutes=1)
        self.restarts[-1]["stop_rc"] = rc
        self.launch(start.replace(microsecond=0))

    def sample(self, m: int, now: datetime) -> None:
        assert self.daemon is not None
        snaps = [s for s in self.store.snapshots() if s["period"] == self.label(m)]
        frozen = [s for s in snaps if s["status"] == "frozen"]
        snap = frozen[0] if frozen else None
        tasks = self.store.tasks()
        row = {
            "month": m, "period": self.label(m), "snapshot": snap["id"] if snap else None,
            "snapshot_rows": len(snaps),
            "froze_after_close_h": round((snap["built_at"] - self.month_end(m)).total_seconds() / 3600, 2)
            if snap and snap["built_at"] else None,
            "entities": snap["entities"] if snap else 0, "questions": snap["questions"] if snap else 0,
            "carried_in": self.store.carried_by_period().get(self.label(m), 0),
            "rss_mb": round(self.daemon.rss_bytes() / MB, 1), "store_mb": round(self.store.bytes() / MB, 2),
            "store_data_mb": round(self.store.logical_bytes() / MB, 2),
            "data_dir_mb": round(dir_bytes(self.data, skip=("models",)) / MB, 2),
            "store_entities": self.store.entities(),
            "tasks_pending": tasks.get("pending", 0) + tasks.get("leased", 0), "tasks_failed": tasks.get("failed", 0),
            "gpu_jobs": self.store.gpu_jobs(), "sim_now": now.strftime("%Y-%m-%d %H:%M"),
            "wall_s": round(time.monotonic() - self.t0, 1), "load_1m": round(os.getloadavg()[0], 2),
        }
        row["store_bytes_per_entity"] = round(row["store_data_mb"] * MB / max(1, row["store_entities"]))
        row["data_dir_bytes_per_entity"] = round(row["data_dir_mb"] * MB / max(1, row["store_entities"]))
        self.rows.append(row)
        print(f"{row['period']}  {row['snapshot'] or '-':34s} froze +{row['froze_after_close_h']}h  "
              f"entities {row['entities']:4d} (carried in {row['carried_in']:3d})  questions {row['questions']:5d}  RSS {row['rss_mb']:7.1f} MB  "
              f"store {row['store_mb']:7.2f} MB  data {row['data_dir_mb']:8.2f} MB  tasks pending "
              f"{row['tasks_pending']:4d} failed {row['tasks_failed']}  gpu {row['gpu_jobs']}  "
              f"(wall {row['wall_s']:.0f} s, load {row['load_1m']})", file=sys.stderr)

    def run(self) -> dict[str, Any]:
        a = self.a
        self.launch(self.start)
        pending_restarts = []
        if a.add_target_month > 1:
            pending_restarts.append(self.month_begin(a.add_target_month) + timedelta(days=1))
        if a.gpu_from_month > 1:
            pending_restarts.append(self.gpu_switch())
        pending_restarts.sort()
        sampled = 0
        last_seen, seen_real = self.start, time.monotonic()
        final_now = self.start
        while sampled < a.months:
            if time.monotonic() - self.t0 > a.max_wall_min * 60:
                raise RuntimeError(f"the year did not finish within {a.max_wall_min} real minutes")
            assert self.daemon is not None
            if self.daemon.proc is not None and self.daemon.proc.poll() is not None:
                raise RuntimeError(f"the daemon died (rc {self.daemon.proc.returncode}); see {self.daemon.log_path}")
            now = self.daemon.now()
            if now is None:
                time.sleep(0.5)
                continue
            last_seen, seen_real, final_now = now, time.monotonic(), now
            while sampled < a.months and now >= self.month_end(sampled + 1) + timedelta(days=1):
                sampled += 1
                self.sample(sampled, now)
            if pending_restarts and now >= pending_restarts[0]:
                pending_restarts.pop(0)
                self.restart(last_seen, seen_real)
                continue
            time.sleep(0.5)
        self.wait_for_last_jobs()
        assert self.daemon is not None
        final_now = self.daemon.now() or final_now
        stuck = self.store.stuck(final_now, grace=timedelta(days=1))
        self.restarts[-1]["stop_rc"] = self.daemon.stop()
        return self.figures(stuck, open_month=final_now.strftime("%Y-%m"))

    def wait_for_last_jobs(self) -> None:
        """The jobs of every GPU month's snapshot but the last (frozen as the year ends, its jobs run after it)
        finish. The added target's catch-up jobs of earlier snapshots (queued once it is ready for them, while the
        GPU is on) are not waited for: they are counted apart (`catch_up_jobs`)."""
        if not self.a.gpu_from_month:
            return
        deadline = time.monotonic() + self.a.wait_jobs_min * 60
        first, last = self.label(max(1, self.a.gpu_from_month - 1)), self.label(self.a.months)
        while time.monotonic() < deadline and self.store.open_jobs(before_period=last, from_period=first):
            time.sleep(2.0)
        self.waited_for_jobs_s = round(time.monotonic() - (deadline - self.a.wait_jobs_min * 60), 1)

    def entity_figures(self, open_month: str) -> dict[str, Any]:
        """Where the entities of the closed months are at the end: none lost (expired, or eligible at the last freeze
        and in no snapshot), the waiting ones (the next snapshot takes them), and how many each month's snapshot
        carried in from earlier months."""
        a = self.a
        targets = [GEMMA] + ([SMOLLM] if a.add_target_month else [])
        left = self.store.unplaced(open_month=open_month, targets=[(t["name"], t["model"]) for t in targets])
        return {"entities_lost": left["lost"], "entities_lost_detail": left, "entities_waiting_end": left["waiting"],
                "open_month": open_month, "carried_by_month": self.store.carried_by_period()}

    def figures(self, stuck: int, *, open_month: str) -> dict[str, Any]:
        a, rows = self.a, self.rows
        snaps = self.store.snapshots()
        by_period: dict[str, list[dict[str, Any]]] = {}
        for s in snaps:
            by_period.setdefault(s["period"], []).append(s)
        months = [self.label(m) for m in range(1, a.months + 1)]
        once = all(len(by_period.get(p, [])) == 1 and by_period[p][0]["status"] == "frozen" for p in months)
        late = [r["froze_after_close_h"] for r in rows]
        on_time = all(x is not None and 0 <= x <= 24 for x in late)
        third = rows[2] if len(rows) >= 3 else rows[-1]
        last = rows[-1]
        added = a.add_target_month
        # memory is compared like with like: month 3, or once a target joined (its weights stay loaded: growth with
        # the configuration, not with time) the first whole month with both targets loaded
        after_add = rows[added] if added and added >= 3 and len(rows) > added else third
        per_entity = [r["store_bytes_per_entity"] for r in rows[2:]] or [last["store_bytes_per_entity"]]
        flat = max(abs(x / per_entity[0] - 1) for x in per_entity)
        tasks = self.store.tasks()
        jobs = self.store.gpu_jobs()
        kept_budget_mb = (self.store.bytes() + dir_bytes(self.data / "snapshots") + dir_bytes(self.data / "reports")) / MB \
            + a.job_budget_mb * sum(jobs.values()) + 10.0  # + the daemon's own small files
        late_target = SMOLLM["name"]
        st = self.store.snapshot_targets(late_target)
        excl = self.store.exclusions(late_target)
        ids = {r["period"]: r["snapshot"] for r in rows}
        before = [ids.get(self.label(m)) for m in range(1, added)] if added else []
        ready_before = sum(1 for s in before if s and st.get(s, ("", 0))[0] == "ready")
        recorded_before = sum(1 for s in before if s and s in st and st[s][1] == excl.get(s, 0))
        gpu_months = [self.label(m) for m in range(max(1, a.gpu_from_month - 1), a.months + 1)] if a.gpu_from_month else []
        results = self.store.results_of(late_target) if added else {}
        results_last = sum(1 for p in gpu_months if results.get(ids.get(p) or "", 0) > 0)
        first_results = self.store.results_of(GEMMA["name"])
        jobs_done_months = sum(1 for p in gpu_months if first_results.get(ids.get(p) or "", 0) > 0)
        figures = {
            "months": rows, "restarts": self.restarts, "speed": a.speed, "rate_per_source_per_week": a.rate,
            "wall_min": round((time.monotonic() - self.t0) / 60, 1),
            "snapshots": sum(1 for p in months if any(s["status"] == "frozen" for s in by_period.get(p, []))),
            "frozen_once": once, "froze_after_close_h_max": max((x for x in late if x is not None), default=None),
            "entities_in_two_snapshots": self.store.entities_in_two_snapshots(),
            "rss_last_over_month3": round(last["rss_mb"] / max(1e-9, third["rss_mb"]), 3),
            "rss_month": after_add["month"],
            "rss_last_over_same_targets": round(last["rss_mb"] / max(1e-9, after_add["rss_mb"]), 3),
            "store_bytes_per_entity_max_dev_from_month3": round(flat, 3),
            "data_dir_mb": last["data_dir_mb"], "data_budget_mb": round(kept_budget_mb, 1),
            "tasks": tasks, "gpu_jobs": jobs, "stuck": stuck,
            "late_target_ready_months_before": ready_before, "late_target_exclusions_recorded_before": recorded_before,
            "late_target_months_before": len(before), "late_target_results_gpu_months": results_last,
            "gpu_months": len(gpu_months), "gpu_months_with_results": jobs_done_months,
            "waited_for_jobs_s": self.waited_for_jobs_s, "load_1m_end": round(os.getloadavg()[0], 2),
            # the added target's jobs of snapshots frozen before the GPU months (queued as it became ready for them)
            "catch_up_jobs": self.store.jobs_by_period(before_period=gpu_months[0]) if gpu_months else {},
            **self.entity_figures(open_month),
        }
        goals = {
            "snapshots": f"== {a.months}", "frozen_once": True, "froze_after_close_h_max": "<= 24",
            "entities_in_two_snapshots": "== 0", "rss_last_over_same_targets": "<= 1.15",
            "store_bytes_per_entity_max_dev_from_month3": "<= 0.20", "data_dir_mb": "<= data_budget_mb",
            "tasks.failed": "== 0", "stuck": "== 0", "wall_min": f"<= {WALL_GOAL_MIN:g}", "entities_lost": "== 0",
        }
        met = {
            "snapshots": figures["snapshots"] == a.months, "frozen_once": once, "froze_after_close_h_max": on_time,
            "entities_in_two_snapshots": figures["entities_in_two_snapshots"] == 0,
            "rss_last_over_same_targets": figures["rss_last_over_same_targets"] <= 1.15,
            "store_bytes_per_entity_max_dev_from_month3": flat <= 0.20,
            "data_dir_mb": last["data_dir_mb"] <= kept_budget_mb,
            "tasks.failed": tasks.get("failed", 0) == 0 and jobs.get("failed", 0) == 0, "stuck": stuck == 0,
            "wall_min": figures["wall_min"] <= WALL_GOAL_MIN, "entities_lost": figures["entities_lost"] == 0,
        }
        if added:
            goals.update({"late_target_ready_months_before": f"== {len(before)}",
                          "late_target_exclusions_recorded_before": f"== {len(before)}",
                          "late_target_results_gpu_months": f">= {min(2, len(gpu_months))}"})
            met.update({"late_target_ready_months_before": ready_before == len(before),
                        "late_target_exclusions_recorded_before": recorded_before == len(before),
                        "late_target_results_gpu_months": results_last >= min(2, len(gpu_months))})
        if a.gpu_from_month:
            goals["gpu_months_with_results"] = ">= 2"
            met["gpu_months_with_results"] = jobs_done_months >= 2
        figures["goals_met"] = met
        return {"bench": "year", "figures": figures, "goals": goals, "met": all(met.values())}


def main() -> None:
    a = _args()
    if a.keep is not None:
        a.keep.mkdir(parents=True, exist_ok=True)
        out = Year(a, a.keep).run()
    else:
        with tempfile.TemporaryDirectory(prefix="clkt-year-") as d:
            out = Year(a, Path(d)).run()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
