"""Bench: hostile packs sent through `POST /packs` to a running daemon (`run_daemon.py`, the real process).

At least N packs (default 1,000) mutated from one honest pack of the tiny snapshot (`bench/support/intake_mutations.py`:
truncations, bit flips, huge and nested headers, every tar member type, unicode and overlong names, duplicate
members, manifest, letter and metric lies, foreign snapshots, zip and other containers) are uploaded one after the
other to a daemon started on a store holding that snapshot (its crawlers and GPU queue off, its upload rate limit
raised so every pack is read). Before and after each pack the store (every table the idle daemon does not itself
write) and the data folder are read; the daemon's RSS is sampled every 20 ms.

Goals: 0 packs accepted that should not be; 0 daemon crashes or restarts (and no 5xx); the daemon's peak RSS
within 1.2x of its idle RSS (after the honest pack); p95 of a refusal's round trip < 1 s; the store and the data
folder unchanged by every refused pack. Ends with one JSON line, also appended to bench/results/intake_fuzz.json.

    .venv/bin/python bench/intake_fuzz.py            # 1,000 packs, a few minutes
    .venv/bin/python bench/intake_fuzz.py --n 50 --no-save
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.support.intake_mutations import Case, cases, honest_files  # noqa: E402
from clkt.packs.archive import archive_bytes  # noqa: E402
from tests.packs._packs import make_store  # noqa: E402

TOKEN = "fuzz-token-0123456789abcdef"
SOURCES = ("tmdb", "musicbrainz", "deezer", "thesportsdb", "usgs", "gdacs")
RESULTS = ROOT / "bench" / "results" / "intake_fuzz.json"
_VOLATILE_FILES = ("clkt.db", "clkt.db-wal", "clkt.db-shm", "clkt.db.lock", "daemon.json", "daemon.log")


def write_config(root: Path) -> Path:
    cfg = root / "clkt.toml"
    text = cfg.read_text(encoding="utf-8")
    text += ('[http]\nport = 0\npages = false\nintake_token_env = "CLKT_INTAKE_TOKEN"\nintake_rate_per_hour = 100000\n'
             'intake_burst = 1000\nintake_concurrent = 4\n[gpu]\nenabled = false\n')
    text += "".join(f"[sources.{s}]\nenabled = false\n" for s in SOURCES)
    cfg.write_text(text, encoding="utf-8")
    return cfg


def start_daemon(root: Path, cfg: Path) -> tuple[subprocess.Popen[bytes], int]:
    (root / "tmp").mkdir(exist_ok=True)  # the intake's temporary folders: here, not beside other programs'
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CLKT_INTAKE_TOKEN": TOKEN, "TMPDIR": str(root / "tmp")}
    proc = subprocess.Popen([sys.executable, str(ROOT / "run_daemon.py"), "--config", str(cfg)], cwd=ROOT, env=env,
                            stdout=(root / "daemon.log").open("wb"), stderr=subprocess.STDOUT)
    info = root / "daemon.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the daemon exited with {proc.returncode}: {(root / 'daemon.log').read_text()[-2000:]}")
        if info.exists():
            port = int(json.loads(info.read_text())["http_port"])
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                    if r.status == 200:
                        return proc, port
            except OSError:
                pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the daemon did not come up in 120 s")


def post(port: int, body: bytes) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/packs", data=body, method="POST",
                                 headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/gzip"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, {"error": raw[:200].decode("utf-8", "replace")}
    except OSError as e:
        return 0, {"error": f"{type(e).__name__}: {e}"}


class RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def rss(self) -> int:
        try:
            text = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return 0
        return int(text.split("VmRSS:")[1].split()[0]) * 1024

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(0.02)


def dump(db: Path, skip: frozenset[str] = frozenset()) -> dict[str, str]:
    """Every table's rows, hashed (tables in `skip` left out)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out = {}
        for n in names:
            if n not in skip:
                rows = con.execute(f'SELECT * FROM "{n}"').fetchall()
                out[n] = hashlib.sha256(repr(sorted(map(repr, rows))).encode()).hexdigest()
        return out
    finally:
        con.close()


def folder(root: Path) -> dict[str, int]:
    """The data folder's files and folders (but the store's and the daemon's own files) and their sizes, the
    daemon's temporary folder (`root/tmp`) with them."""
    return {p.relative_to(root).as_posix(): p.stat().st_size if p.is_file() else -1 for p in root.rglob("*")
            if p.name not in _VOLATILE_FILES}


@dataclass
class Tally:
    statuses: Counter[int] = field(default_factory=Counter)
    families: Counter[str] = field(default_factory=Counter)
    refusal_s: list[float] = field(default_factory=list)
    bad_accepts: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    accepted_ok: int = 0
    accepted_same: Counter[str] = field(default_factory=Counter)
    relabelled: int = 0


def judge(case: Case, status: int, got: dict[str, Any], honest: dict[str, Any], t: Tally) -> None:
    """A 200 is allowed for a metric lie taken in with `claims_match` false, and for any mutation whose files came
    out byte for byte the honest pack's (a flip in a gzip header's time or a tar block's padding, a regular file of
    type 7, data after the archive's end): its sha256, `stored` false; and for a bit flip inside the manifest's free
    text (its time, a name): a new pack of the honest letters, its metrics the honest pack's, its claims matching.
    Every other 200 is a bad accept."""
    if status != 200:
        return
    honest_sha, honest_metrics = honest["pack_sha256"], honest["metrics"]
    if got.get("pack_sha256") == honest_sha and got.get("stored") is False:
        t.accepted_same[case.family] += 1
    elif case.family.startswith("bitflip") and got.get("claims_match") is True and got.get("metrics") == honest_metrics:
        t.relabelled += 1  # a flip inside the manifest's free text (a time, a name): the honest letters, a new pack
    elif case.expect == "claims" and got.get("claims_match") is False:
        t.accepted_ok += 1
    else:
        t.bad_accepts.append(f"{case.family}: {json.dumps(got)[:200]}")


def run_cases(port: int, db: Path, data: Path, todo: list[Case], honest: dict[str, Any], skip: frozenset[str]) -> Tally:
    t = Tally()
    for case in todo:
        before = (dump(db, skip), folder(data))
        t0 = time.perf_counter()
        status, got = post(port, case.body)
        took = time.perf_counter() - t0
        t.statuses[status] += 1
        t.families[case.family] += 1
        judge(case, status, got, honest, t)
        if status != 200:
            t.refusal_s.append(took)
            after = (dump(db, skip), folder(data))
            if after != before:
                what = sorted(k for i in (0, 1) for k in set(before[i]) | set(after[i]) if before[i].get(k) != after[i].get(k))
                t.changed.append(f"{case.family}: HTTP {status}: {what[:5]}")
    return t


def _pct(xs: list[float], q: float) -> float:
    return round(statistics.quantiles(xs, n=100, method="inclusive")[int(q) - 1], 3) if len(xs) > 1 else round(xs[0], 3)


def alive(proc: subprocess.Popen[bytes], port: int) -> tuple[bool, dict[str, int]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10) as r:
            restarts = json.loads(r.read()).get("daemon", {}).get("restarts", {})
    except OSError:
        return False, {}
    return proc.poll() is None, {k: int(v) for k, v in restarts.items()}


def figures(t: Tally, *, n: int, idle: int, peak: int, up: bool, restarts: dict[str, int], wall_s: float) -> dict[str, Any]:
    return {
        "packs": n, "by_family": dict(sorted(t.families.items())), "statuses": {str(k): v for k, v in sorted(t.statuses.items())},
        "accepted_that_should_not_be": len(t.bad_accepts), "accepted_metric_lies_with_claims_refused": t.accepted_ok,
        "accepted_as_the_honest_pack_unchanged": dict(sorted(t.accepted_same.items())),
        "accepted_honest_letters_relabelled": t.relabelled,
        "refused": len(t.refusal_s), "store_or_folder_changed_by_a_refusal": len(t.changed),
        "refusal_p50_s": _pct(t.refusal_s, 50), "refusal_p95_s": _pct(t.refusal_s, 95),
        "refusal_max_s": round(max(t.refusal_s), 3), "idle_rss_mb": round(idle / 2**20, 1),
        "peak_rss_mb": round(peak / 2**20, 1), "rss_ratio": round(peak / idle, 3), "daemon_up": up,
        "service_restarts": sum(restarts.values()), "http_5xx_or_no_answer": sum(v for k, v in t.statuses.items() if k == 0 or k >= 500),
        "wall_s": round(wall_s, 1), "loadavg_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
        "examples": {"bad_accepts": t.bad_accepts[:3], "changed": t.changed[:3]},
    }


def goals_met(f: dict[str, Any]) -> dict[str, bool]:
    return {
        "accepted_that_should_not_be == 0": f["accepted_that_should_not_be"] == 0,
        "daemon up, 0 restarts, 0 5xx": f["daemon_up"] and f["service_restarts"] == 0 and f["http_5xx_or_no_answer"] == 0,
        "rss_ratio <= 1.2": f["rss_ratio"] <= 1.2,
        "refusal_p95_s < 1": f["refusal_p95_s"] < 1.0,
        "store_or_folder_changed_by_a_refusal == 0": f["store_or_folder_changed_by_a_refusal"] == 0,
    }


def idle_rss(sampler: RssSampler, samples: int = 50) -> int:
    """The daemon's largest RSS over a second of doing nothing."""
    peak = 0
    for _ in range(samples):
        peak = max(peak, sampler.rss())
        time.sleep(0.02)
    return peak


def volatile_tables(db: Path, wait_s: float = 3.0) -> frozenset[str]:
    """The tables the idle daemon writes by itself (left out of the comparisons)."""
    a = dump(db)
    time.sleep(wait_s)
    b = dump(db)
    return frozenset(k for k in a if a[k] != b.get(k))


def fuzz(n: int, seed: int, bomb_mb: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="clkt-fuzz-"))
    asyncio.run(make_store(root))
    todo = cases(n, seed=seed, bomb_bytes=bomb_mb << 20)
    proc, port = start_daemon(root, write_config(root))
    try:
        status, got = post(port, archive_bytes(honest_files()))
        assert status == 200 and got["stored"], got
        sampler = RssSampler(proc.pid)
        skip = volatile_tables(root / "clkt.db")
        idle = idle_rss(sampler)
        sampler.start()
        t0 = time.monotonic()
        t = run_cases(port, root / "clkt.db", root, todo, got, skip)
        wall = time.monotonic() - t0
        sampler.stop.set()
        up, restarts = alive(proc, port)
        f = figures(t, n=len(todo), idle=idle, peak=sampler.peak, up=up, restarts=restarts, wall_s=wall)
        f["tables_left_out"] = sorted(skip)
        return f
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bomb-mb", type=int, default=200, help="the PAX header's declared and held size")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    f = fuzz(args.n, args.seed, args.bomb_mb)
    met = goals_met(f)
    line = json.dumps({"bench": "intake_fuzz", "figures": f, "goals": {k: v for k, v in met.items()}, "met": all(met.values())})
    if not args.no_save:
        with RESULTS.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
