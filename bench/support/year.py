"""Helpers of bench/year.py: the simulated year's config, the daemon process (`clkt run`), and what is read of
its store (read-only SQLite, while it runs and after)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from clkt.sources.registry import SOURCE_TYPES

ROOT = Path(__file__).resolve().parents[2]
# the year's sources (the four domains it was timed on); arXiv and Launch Library 2 stay off until it is re-timed
SOURCES = ("tmdb", "musicbrainz", "deezer", "thesportsdb", "usgs", "gdacs")
GEMMA = {"name": "gemma-3-270m", "model": "embedded:gemma-3-270m"}
SMOLLM = {"name": "smollm2-135m-instruct", "model": "embedded:smollm2-135m-instruct", "kind": "instruct"}

__all__ = ["GEMMA", "SMOLLM", "SOURCES", "Daemon", "Plan", "StoreView", "dir_bytes", "month_start", "write_config"]


def month_start(year: int, month: int) -> datetime:
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=UTC)


@dataclass(frozen=True, kw_only=True)
class Plan:
    """One phase of the year: what the config says from `clock_start` on."""

    data_dir: Path
    clock_start: datetime
    speed: float
    generator_start: datetime
    rate: float  # entities per source per simulated week
    seed: int
    targets: tuple[dict[str, str], ...]
    gpu: bool
    languages: tuple[str, ...] = ("en", "fr")
    questions_per_entity: int = 3
    sources: tuple[str, ...] = SOURCES  # the others are disabled
    probe_tokens: int = 16  # how long a target's probe answer may be
    extra: dict[str, Any] = field(default_factory=dict)


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime):
        return v.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + " }"
    return repr(v)


def write_config(plan: Plan, path: Path) -> Path:
    """The daemon's config for one phase: the living upstream, the simulated calendar, monthly snapshots that
    freeze when their month closes (quotas never fill early), small GPU jobs when `gpu`."""
    d = plan.data_dir
    sections: dict[str, dict[str, Any]] = {
        "replay": {"enabled": True, "mode": "generator", "seed": plan.seed, "entities_per_week": plan.rate,
                   "generator_start": plan.generator_start},
        "http": {"port": 0, "pages": True},
        "agents": {"backend": "template", "questions_per_entity": plan.questions_per_entity,
                   "probe_max_new_tokens": plan.probe_tokens},
        "spec": {"name": "year", "languages": list(plan.languages), "train_languages": [plan.languages[0]],
                 "strategies": ["cpt-lora"],
                 "domains": sorted({SOURCE_TYPES[n].domain.value for n in plan.sources})},
        "snapshot": {"cadence": "monthly", "allow_partial": True, "control_entities": 0, "check_interval_s": 3600.0,
                     "out_dir": str(d / "snapshots"),
                     "quotas": {"movies": 100_000, "music": 100_000, "sports": 100_000, "disasters": 100_000}},
        "gpu": {"open_answers": False,  # the year's goals are the MCQ track's; the open pass costs bench/open_answers.py's
                "enabled": plan.gpu, "devices": ["cpu"], "epochs": 1, "max_seq_len": 128, "max_new_tokens": 4,
                "eval_batch_size": 16, "torch_threads": 1, "target_modules": "all-linear", "learning_rate": 2e-3,
                "job_timeout_s": 30 * 86400.0},
        "daemon": {"clock_start": plan.clock_start, "clock_speed": plan.speed, "lease_s": 7 * 86400.0,
                   "poll_interval_s": 3600.0, "grace_period_s": 5.0, "task_timeout_s": 3600.0},
    }
    for name in SOURCE_TYPES:  # a loopback upstream: its own rate, polled four times a simulated day
        sections[f"sources.{name}"] = {"enabled": name in plan.sources, "poll_interval_s": 6 * 3600.0,
                                       "lookback_days": 3, "rate_per_s": 50.0, "burst": 20, "concurrency": 4}
    for k, v in plan.extra.items():
        sections.setdefault(k.split(":")[0], {})[k.split(":")[1]] = v
    lines = [f'data_dir = "{d}"', 'log_level = "INFO"']
    for sec, kv in sections.items():
        lines.append(f"\n[{sec}]")
        lines += [f"{k} = {_toml(v)}" for k, v in kv.items()]
    for t in plan.targets:
        lines.append("\n[[spec.targets]]")
        lines += [f"{k} = {_toml(v)}" for k, v in t.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def dir_bytes(path: Path, *, skip: tuple[str, ...] = ()) -> int:
    """Bytes of the files under `path` (symbolic links not followed), leaving out the top-level `skip` names."""
    total = 0
    if not path.exists():
        return 0
    for entry in os.scandir(path):
        if entry.name in skip or entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            total += dir_bytes(Path(entry.path))
        elif entry.is_file(follow_symlinks=False):
            total += entry.stat(follow_symlinks=False).st_size
    return total


class Daemon:
    """`clkt run --config <file>` as a subprocess (its log beside the data dir), read over its endpoint."""

    def __init__(self, *, config: Path, data_dir: Path, log: Path) -> None:
        self.config, self.data_dir, self.log_path = config, data_dir, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None

    def start(self, timeout_s: float = 180.0) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false"}
        info = self.data_dir / "daemon.json"
        info.unlink(missing_ok=True)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "clkt.cli", "run", "--config", str(self.config)],
                                     cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the daemon exited with {self.proc.returncode} at start; see {self.log_path}")
            try:
                port = json.loads(info.read_text()).get("http_port")
            except (OSError, ValueError):
                port = None
            if port:
                self.port = int(port)
                if self.status() is not None:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"the daemon did not come up within {timeout_s:.0f} s; see {self.log_path}")

    def status(self) -> dict[str, Any] | None:
        if self.port is None:
            return None
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/status", timeout=30) as r:
                data: dict[str, Any] = json.loads(r.read())
                return data
        except (OSError, ValueError):
            return None

    def now(self) -> datetime | None:
        st = self.status()
        return datetime.fromisoformat(st["generated_at"]) if st else None

    def rss_bytes(self) -> int:
        assert self.proc is not None
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def stop(self, timeout_s: float = 120.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)


class StoreView:
    """Read-only queries on the daemon's SQLite store (WAL: beside a running daemon)."""

    def __init__(self, db: Path) -> None:
        self.db = db

    def _rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            return list(con.execute(sql, args).fetchall())
        finally:
            con.close()

    def bytes(self) -> int:
        return sum(p.stat().st_size for p in self.db.parent.glob(self.db.name + "*") if p.is_file())

    def logical_bytes(self) -> int:
        """The pages the store's data uses (WAL included, free pages not): what grows with the data, whatever
        SQLite's journal holds at the moment (it checkpoints at about 4 MB and keeps the file)."""
        (count,), (free,), (size,) = (self._rows(f"PRAGMA {p}")[0] for p in ("page_count", "freelist_count", "page_size"))
        return (int(count) - int(free)) * int(size)

    def entities(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM entity")[0][0])

    def snapshots(self) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT s.id, s.period, s.status, s.built_at, s.superseded_by, "
            "(SELECT COUNT(DISTINCT entity_id) FROM snapshot_item i WHERE i.snapshot_id = s.id), "
            "(SELECT COUNT(*) FROM snapshot_item i WHERE i.snapshot_id = s.id) FROM snapshot s ORDER BY s.period, s.id")
        return [{"id": r[0], "period": r[1], "status": r[2], "built_at": _aware(r[3]), "superseded_by": r[4],
                 "entities": r[5], "questions": r[6]} for r in rows]

    def entities_in_two_snapshots(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM (SELECT entity_id FROM snapshot_item GROUP BY entity_id "
                              "HAVING COUNT(DISTINCT snapshot_id) > 1)")[0][0])

    def carried_by_period(self) -> dict[str, int]:
        """Entities carried into each period's frozen snapshot from earlier periods (`clkt.snapshots.carry`)."""
        return {str(p): int(n) for p, n in self._rows(
            "SELECT s.period, COUNT(*) FROM snapshot_entity se JOIN snapshot s ON s.id = se.snapshot_id "
            "WHERE se.carried AND s.status = 'frozen' GROUP BY s.period")}

    def unplaced(self, *, open_month: str, targets: Sequence[tuple[str, str]]) -> dict[str, int]:
        """Entities of the months before `open_month` (YYYY-MM) that no snapshot holds: `lost` (expired, or ready,
        probed clean by every one of `targets` (name, model) and ready before the last freeze: a snapshot could have
        taken them and did not) and `waiting` (ready, the others: the next snapshot that freezes takes them)."""
        last = self._rows("SELECT MAX(built_at) FROM snapshot WHERE status = 'frozen'")[0][0]
        base = ("FROM entity e WHERE strftime('%Y-%m', e.occurred_at) < ? "
                "AND NOT EXISTS (SELECT 1 FROM snapshot_entity se WHERE se.entity_id = e.id)")
        expired = int(self._rows(f"SELECT COUNT(*) {base} AND e.status = 'expired'", open_month)[0][0])
        ready = int(self._rows(f"SELECT COUNT(*) {base} AND e.status = 'ready'", open_month)[0][0])
        clean = "".join(" AND EXISTS (SELECT 1 FROM probe p WHERE p.entity_id = e.id AND p.target_model IN (?, ?) "
                        "AND NOT p.known AND p.created_at < ?)" for _ in targets)
        args: list[Any] = [open_month, last]
        for name, model in targets:
            args += [name, model, last]
        missed = int(self._rows(
            f"SELECT COUNT(*) {base} AND e.status = 'ready' AND e.updated_at < ? "
            f"AND NOT EXISTS (SELECT 1 FROM probe p WHERE p.entity_id = e.id AND p.known){clean}", *args)[0][0]) \
            if last else 0
        return {"lost": expired + missed, "expired": expired, "missed": missed, "waiting": ready - missed}

    def tasks(self) -> dict[str, int]:
        return {str(s): int(n) for s, n in self._rows("SELECT status, COUNT(*) FROM task GROUP BY status")}

    def gpu_jobs(self) -> dict[str, int]:
        return {str(s): int(n) for s, n in self._rows("SELECT status, COUNT(*) FROM gpu_job GROUP BY status")}

    def open_jobs(self, *, before_period: str, from_period: str = "") -> int:
        """GPU jobs still pending or leased of the snapshots of periods from `from_period` to before `before_period`."""
        return int(self._rows("SELECT COUNT(*) FROM gpu_job j JOIN snapshot s ON s.id = j.snapshot_id "
                              "WHERE j.status IN ('pending', 'leased') AND s.period >= ? AND s.period < ?",
                              from_period, before_period)[0][0])

    def jobs_by_period(self, *, before_period: str) -> dict[str, int]:
        """GPU jobs per status of the snapshots of periods before `before_period` (the catch-up's, for one)."""
        return {str(st): int(n) for st, n in self._rows(
            "SELECT j.status, COUNT(*) FROM gpu_job j JOIN snapshot s ON s.id = j.snapshot_id WHERE s.period < ? "
            "GROUP BY j.status", before_period)}

    def stuck(self, now: datetime, *, grace: timedelta) -> int:
        """Work nobody will do: rows leased past their lease by more than `grace` of the clock, and claimable
        rows older than `grace` in a queue whose workers hold nothing (a queue that is merely long is not stuck)."""
        at, old = _naive(now), _naive(now - grace)
        n = 0
        for table, queue in (("task", "stage"), ("gpu_job", "''")):
            n += int(self._rows(f"SELECT COUNT(*) FROM {table} WHERE status = 'leased' AND lease_expires_at < ?", old)[0][0])
            busy = {str(q) for (q,) in self._rows(f"SELECT DISTINCT {queue} FROM {table} WHERE status = 'leased' "
                                                  f"AND lease_expires_at >= ?", at)}
            for q, k in self._rows(f"SELECT {queue}, COUNT(*) FROM {table} WHERE status = 'pending' AND not_before < ? "
                                   f"AND attempts < max_attempts GROUP BY {queue}", old):
                if str(q) not in busy:
                    n += int(k)
        return n

    def results_of(self, target: str) -> dict[str, int]:
        rows = self._rows("SELECT j.snapshot_id, COUNT(r.id) FROM gpu_job j LEFT JOIN question_result r ON r.job_id = j.id "
                          "WHERE j.target_model = ? GROUP BY j.snapshot_id", target)
        return {str(s): int(n) for s, n in rows}

    def snapshot_targets(self, target: str) -> dict[str, tuple[str, int]]:
        """Snapshot id -> (status, excluded) of `target` (`storage.targets`); {} before the table has rows."""
        rows = self._rows("SELECT snapshot_id, status, excluded FROM snapshot_target WHERE target_name = ?", target)
        return {str(s): (str(st), int(x)) for s, st, x in rows}

    def exclusions(self, target: str) -> dict[str, int]:
        rows = self._rows("SELECT snapshot_id, COUNT(*) FROM snapshot_exclusion WHERE target_name = ? GROUP BY snapshot_id",
                          target)
        return {str(s): int(n) for s, n in rows}

    def latest_time(self) -> datetime | None:
        """The latest time the store recorded (the daemon's clock when it last wrote)."""
        got = [r[0] for t in ("task", "source_cursor", "entity") for r in self._rows(f"SELECT MAX(updated_at) FROM {t}")]
        times = [_aware(x) for x in got if x]
        return max((t for t in times if t is not None), default=None)


def _aware(v: Any) -> datetime | None:
    if not v:
        return None
    dt = datetime.fromisoformat(str(v))
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _naive(dt: datetime) -> str:
    return dt.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")
