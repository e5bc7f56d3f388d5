"""Chaos harness shared by `tests/test_chaos.py` (short, CI) and `bench/chaos.py` (long).

Runs the real daemon (`run_daemon.py`) as a subprocess against the bundled replay server with faults on
(429, 5xx, timeouts, truncated JSON, HTML error pages) and, for the LLM path, against the fake
OpenAI-compatible server (which counts every request body it sees). One run is left alone; the other is
killed with SIGKILL at random moments and restarted, many times. Then the invariants are compared.
At the root of tests/ beside `test_chaos.py` (cross-cutting: the whole daemon), and imported by `bench/chaos.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[1]
def _period() -> str:
    """The month holding most of the replay's re-dating window (the 28 days up to today)."""
    today = datetime.now(UTC).date()
    day = today if today.day >= 15 else today - timedelta(days=today.day)
    return f"{day.year:04d}-{day.month:02d}"


PERIOD = _period()
FAULTS = {
    "seed": 7,
    "rules": [
        {"kind": "429", "rate": 0.08, "retry_after_s": 0.3},
        {"kind": "500", "rate": 0.08},
        {"kind": "503", "rate": 0.04, "retry_after_s": 0.2},
        {"kind": "truncated", "rate": 0.06},
        {"kind": "html", "rate": 0.04},
        {"kind": "slow", "rate": 0.02, "delay_s": 2.5},
    ],
}
SOURCES = ("tmdb", "musicbrainz", "deezer", "thesportsdb", "usgs", "gdacs")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}


def start_fake_llm(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.openai_server", "--port", "0", "--rpm", "3000"],
        stdout=subprocess.PIPE, stderr=log.open("wb"), cwd=REPO, env=_env(),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    return proc, json.loads(line)["base_url"]


def fake_reset(base_url: str) -> None:
    req = Request(base_url.removesuffix("/v1") + "/reset", data=b"{}", method="POST")
    with urlopen(req, timeout=10):
        pass


def fake_stats(base_url: str) -> dict[str, Any]:
    with urlopen(base_url.removesuffix("/v1") + "/stats", timeout=10) as r:
        return json.loads(r.read())


def _toml_faults() -> str:
    rules = ", ".join("{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in r.items()) + " }" for r in FAULTS["rules"])
    return f"{{ seed = {FAULTS['seed']}, rules = [{rules}] }}"


def write_config(root: Path, llm_url: str, *, languages: list[str], gpu: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    # the faults draw from one seeded stream in the order requests arrive, so which source they hit varies from run
    # to run: a source that drew 5 failures in a row opens its circuit, and the default 300 s pause (twice, when the
    # half-open trial draws a fault too) outlasts the drain timeouts; 20 s keeps the breaker in play within them
    sources = "\n".join(f"[sources.{s}]\npoll_interval_s = 4.0\ntimeout_s = 2.0\nbreaker_reset_s = 20.0\n" for s in SOURCES)
    target = (
        '[[spec.targets]]\nname = "gemma-3-270m"\nmodel = "embedded:gemma-3-270m"\ncutoff = 2024-08-01\n'
        if gpu else
        f'[[spec.targets]]\nname = "fake-target"\nmodel = "fake-target"\nbackend = "openai"\nbase_url = "{llm_url}"\n'
        'cutoff = 2024-01-01\nkind = "instruct"\n'
    )
    cfg = root / "clkt.toml"
    cfg.write_text(
        f"""
offline_demo = true
data_dir = "{root / 'data'}"
[replay]
redate_days = 28
faults = {_toml_faults()}
[agents]
backend = "llm"
judge_model = "fake:judge"
generator_model = "fake:generator"
verifier_model = "fake:verifier"
translator_model = "fake:translator"
questions_per_entity = 3
[agents.providers.fake]
base_url = "{llm_url}"
rpm = 3000
max_in_flight = 4
timeout_s = 10
[spec]
languages = {json.dumps(languages)}
domains = ["movies", "music", "sports", "disasters"]
{target}
[snapshot]
cadence = "monthly"
quotas = {{ movies = 50, music = 50, sports = 50, disasters = 50 }}
out_dir = "{root / 'snapshots'}"
[gpu]
enabled = {str(gpu).lower()}
epochs = 1
max_new_tokens = 4
[daemon]
lease_s = 20
poll_interval_s = 0.2
grace_period_s = 10
{sources}
"""
    )
    return cfg


def start_daemon(cfg: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(REPO / "run_daemon.py"), "--config", str(cfg)],
                            stdout=log.open("ab"), stderr=subprocess.STDOUT, cwd=REPO, env=_env())


def _q(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def progress(db: Path) -> tuple[int, ...]:
    if not db.exists():
        return (0, 0, 0, 0)
    try:
        ents = _q(db, "SELECT count(*) FROM entity")[0][0]
        open_tasks = _q(db, "SELECT count(*) FROM task WHERE status IN ('pending','leased')")[0][0]
        done = _q(db, "SELECT count(*) FROM task WHERE status IN ('done','failed')")[0][0]
        # a source's watermark is set when it has read its first whole window: a cursor alone (page > 0) is a
        # source mid-window, which an open circuit can hold still for longer than `stable_s`
        cursors = _q(db, "SELECT count(*) FROM source_cursor WHERE watermark IS NOT NULL")[0][0]
    except sqlite3.OperationalError:
        return (0, 0, 0, 0)
    return (ents, open_tasks, done, cursors)


def wait_drained(db: Path, proc: subprocess.Popen[bytes], *, timeout: float, stable_s: float = 8.0) -> None:
    """Until every source has read its first whole window, no stage work is open and nothing changed for `stable_s`."""
    last: tuple[int, ...] | None = None
    since = time.monotonic()

    def drained() -> bool:
        nonlocal last, since
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited with {proc.returncode} while draining")
        p = progress(db)
        if p != last:
            last, since = p, time.monotonic()
            return False
        return p[0] > 0 and p[1] == 0 and p[3] >= len(SOURCES) and time.monotonic() - since >= stable_s

    try:
        wait_until(drained, timeout=timeout, interval=0.5)
    except AssertionError as e:
        if proc.poll() is not None:
            raise
        raise AssertionError(f"not drained within {timeout}s: {last}") from e


def stop(proc: subprocess.Popen[bytes], timeout: float = 60, *, info: Path | None = None) -> int:
    """SIGTERM once the daemon is up (`info` = its daemon.json): a signal in the first milliseconds of a
    process, before Python runs any of our code, takes the OS default action."""
    if info is not None:

        def up() -> bool:
            if proc.poll() is not None:
                return True
            try:  # a killed predecessor leaves its daemon.json behind: wait for this process's own
                return bool(json.loads(info.read_text()).get("pid") == proc.pid)
            except (OSError, ValueError):
                return False

        with suppress(AssertionError):  # one that never says it is up still gets its SIGTERM, as before
            wait_until(up, timeout=timeout, interval=0.1)
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=timeout)


def build_snapshot(cfg: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clkt.cli", "snapshot", "build", "--period", PERIOD, "--partial",
                           "--config", str(cfg)], capture_output=True, text=True, cwd=REPO, env=_env(), timeout=300)


@dataclass
class RunResult:
    root: Path
    kills: int = 0
    kill_times: list[float] = field(default_factory=list)
    llm_calls: int = 0
    llm_repeated: int = 0
    log: Path | None = None

    @property
    def db(self) -> Path:
        return self.root / "data" / "clkt.db"


@contextmanager
def _killed_on_failure(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """A failed wait must not leave the daemon running after the test (it outlived a failed CI run by an hour)."""
    try:
        yield
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        raise


def _kill_loop(res: RunResult, cfg: Path, *, kills: int, rng: random.Random,
               kill_window: tuple[float, float]) -> subprocess.Popen[bytes]:
    """Start the daemon, SIGKILL it `kills` times at random moments (restarting it each time); return it."""
    assert res.log is not None
    proc = start_daemon(cfg, res.log)
    t0 = time.monotonic()
    for _ in range(kills):
        time.sleep(rng.uniform(*kill_window))  # the random kill moment is what the harness tests, not a wait
        if proc.poll() is not None:
            raise AssertionError(f"daemon died by itself with {proc.returncode}; see {res.log}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        res.kills += 1
        res.kill_times.append(round(time.monotonic() - t0, 2))
        proc = start_daemon(cfg, res.log)
    return proc


def run(root: Path, llm_url: str, *, languages: list[str], kills: int, seed: int, gpu: bool = False,
        kill_window: tuple[float, float] = (0.8, 4.0), drain_timeout: float = 300.0) -> RunResult:
    cfg = write_config(root, llm_url, languages=languages, gpu=gpu)
    log = root / "daemon.log"
    rng = random.Random(seed)
    res = RunResult(root=root, log=log)
    fake_reset(llm_url)  # the fake counts repeated request bodies per run
    proc = _kill_loop(res, cfg, kills=kills, rng=rng, kill_window=kill_window)
    with _killed_on_failure(proc):
        wait_drained(res.db, proc, timeout=drain_timeout)  # GPU jobs come later: see run_gpu_phase()
        rc = stop(proc, info=res.root / "data" / "daemon.json")
    if rc != 0:
        raise AssertionError(f"daemon stop exited {rc}; see {log}")
    after = fake_stats(llm_url)
    res.llm_calls = after["ok"]
    res.llm_repeated = after["repeated_requests"]
    return res


def _wait_gpu(db: Path, proc: subprocess.Popen[bytes], *, timeout: float) -> None:
    def finished() -> bool:
        rows = _q(db, "SELECT status FROM gpu_job")
        if rows and all(r[0] in ("done", "failed") for r in rows):
            return True
        if proc.poll() is not None:
            raise AssertionError("daemon exited while GPU jobs were running")
        return False

    wait_until(finished, timeout=timeout, interval=1.0, what="GPU jobs did not finish in time")


def snapshot_files(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every exported file except build.json (the build time)."""
    out: dict[str, str] = {}
    for p in sorted((root / "snapshots").rglob("*")):
        if p.is_file() and p.name != "build.json" and "superseded" not in p.parts:
            out[str(p.relative_to(root / "snapshots"))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def store_facts(db: Path) -> dict[str, Any]:
    return {
        "entities": sorted(_q(db, "SELECT source, external_id FROM entity")),
        "entity_dups": _q(db, "SELECT source, external_id, count(*) FROM entity GROUP BY 1, 2 HAVING count(*) > 1"),
        "questions": sorted(_q(db, "SELECT e.source, e.external_id, q.slot, q.question, q.status FROM question q "
                                   "JOIN entity e ON e.id = q.entity_id")),
        "question_dups": _q(db, "SELECT entity_id, slot, count(*) FROM question GROUP BY 1, 2 HAVING count(*) > 1"),
        "translations": sorted(_q(db, "SELECT e.source, e.external_id, q.slot, t.lang, t.question FROM translation t "
                                      "JOIN question q ON q.id = t.question_id JOIN entity e ON e.id = q.entity_id")),
        "translation_dups": _q(db, "SELECT question_id, lang, count(*) FROM translation GROUP BY 1, 2 HAVING count(*) > 1"),
        "statuses": sorted(_q(db, "SELECT e.source, e.external_id, e.status FROM entity e")),
        "stale_leases": _q(db, "SELECT 'task', count(*) FROM task WHERE status = 'leased' UNION ALL "
                               "SELECT 'gpu', count(*) FROM gpu_job WHERE status = 'leased'"),
        "results": sorted(_q(db, "SELECT g.target_model, g.train_lang, e.source, e.external_id, q.slot, r.lang, r.variant, "
                                 "r.scorer, r.predicted, r.correct FROM question_result r JOIN gpu_job g ON g.id = r.job_id "
                                 "JOIN question q ON q.id = r.question_id JOIN entity e ON e.id = q.entity_id")),
    }


def run_gpu_phase(res: RunResult, *, kills: int, seed: int, timeout: float = 1800.0,
                  kill_window: tuple[float, float] = (20.0, 60.0)) -> None:
    """After a snapshot was built (GPU jobs queued), run the daemon until every GPU job is finished,
    killing it with SIGKILL `kills` times while jobs run (mid-training included)."""
    cfg = res.root / "clkt.toml"
    assert res.log is not None
    rng = random.Random(seed)
    proc = _kill_loop(res, cfg, kills=kills, rng=rng, kill_window=kill_window)
    with _killed_on_failure(proc):
        _wait_gpu(res.db, proc, timeout=timeout)
        rc = stop(proc, info=res.root / "data" / "daemon.json")
    if rc != 0:
        raise AssertionError(f"daemon stop exited {rc}; see {res.log}")
