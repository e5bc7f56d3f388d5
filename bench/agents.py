"""Bench: the LLM agents against a fake OpenAI-compatible provider with a hard RPM limit.

Figures:
- throughput as a fraction of the provider's RPM limit, limiter set to the true limit (goal >= 0.95, 0 429s);
- the same for the provider's TPM limit (requests unlimited, tokens the binding limit);
- the limiter set to twice the true limit: the provider's x-ratelimit headers bring it down (429s counted);
The three pacing phases run while the box does other work: `LOAD_PROCS` busy processes (default one per
core) at the client's own priority, for the phase only, reported as `background_load` (how many, at what
nice, the CPU they got) with the 1-minute load average and the client's event-loop lag (how late a 10 ms
timer fired: the starvation the pacer has to absorb). Each pacing phase also reports the client's CPU per call
(`client_cpu_ms_per_call`: at 20 calls/s, 20 ms a call is 0.4 of a core, the margin a loaded 2-core box
leaves), its garbage collector's time and longest pause (`client_gc`), the schedule time each pacer left
unused (`pacer_unused_s`: behind beyond its catch-up tolerance; the binding one should be ~0) and the share of
the time the in-flight cap rather than a budget held the client back (`in_flight_cap_bound_share`; in the TPM
phase the request pacer is idle by design). The TPM phase's limit is the RPM phase's 20 calls/s in tokens
(`JUDGE_CALL_TOKENS`, the fake's count of a judge call, `tokens_per_call`), so both ask the same of the client.
The fake provider's limit is a faithful model of OpenAI's and Anthropic's (`tests.fakes.openai_server`):
a per-minute token bucket that holds the minute's limit and refills continuously, enforced also over one
second (a bucket of a second of the limit: both providers document that a minute's limit may be enforced
per second, and neither documents a shorter interval); its x-ratelimit headers report the minute's bucket
(limit, remaining, time until full), not the second's, as OpenAI's do. Not stricter (the previous
bench's bucket of 2 requests at 20/s was a tenth of a second, shorter than either provider documents)
and not looser (no more than one second of the limit is ever admitted at once).
`fraction_of_rpm` is what the provider admitted from the first request to the last answer (the goal's
figure); `fraction_of_rpm_admitted` the same over the arrivals only; `fraction_of_allowed` what it
admitted against the most its buckets could have (a second's burst + the rate over the arrivals' span).
The provider runs in its own process at a higher CPU priority (`PROVIDER_NICE`; it is another machine in
real use), so the box's load delays the client under test, not the provider's clock that admits requests.
- speedup over the reference pattern (2 threads, no limiter: sequential calls, sleep on 429);
- a kill -9 and restart of a pipeline run mid-way: provider calls repeated after the restart (goal 0
  beyond the calls that were in flight at the kill), thanks to the call cache in the store and one call per
  key at a time (two entities share a document, so their tasks may ask the same translation at once);
  `--rounds N` repeats it on fresh stores and reports the worst round (`--only kill`: only these rounds);
- tokens per accepted question of that run;
- batch mode: the same entities through the online path and through the fake OpenAI Batch API, cost per
  accepted question of the batch path against the online one (goal <= 0.55, fake server prices with the
  same prefix cache on both), tokens per accepted question per stage;
- batch mode's kill -9 (while a batch create is in flight, twice) and restart: requests submitted twice or
  run twice (goal 0), requests or entities lost (goal 0).
Ends with one JSON line. Runtime about 3-5 minutes on a quiet box; 6-10 under other work at a higher priority.

    .venv/bin/python bench/agents.py [--only pacing|batch|kill] [--load-procs N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agents.cache import MemoryCallCache  # noqa: E402
from agents.llm import LlmBackend  # noqa: E402
from clkt.config import Settings  # noqa: E402
from clkt.documents import render_document  # noqa: E402
from tests.documents.samples import ALL, ENTITY_NAMES, LIVERPOOL_SWANSEA  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

RPM = 1200  # the provider's hard limit: 20 requests/s
JUDGE_CALL_TOKENS = 530  # the fake's count of one bench judge call (prompt + max_tokens): `tokens_per_call`
TPM = RPM * JUDGE_CALL_TOKENS  # the TPM phase's limit: the RPM phase's 20 judge requests/s, in tokens
LATENCY_MS = 250.0
CALLS = 600
REF_CALLS = 100
LANGS = ["en", "fr", "ja"]
LOAD_PROCS = os.cpu_count() or 2  # busy processes beside the pacing phases (the box doing other work)
LOAD_MAX_S = 600.0  # each one exits by itself after this, whatever happens to the bench


def settings(
    base_url: str, *, rpm: int, tpm: int = 50_000_000, in_flight: int = 16, db: Path | None = None
) -> Settings:
    return Settings(
        data_dir=db.parent if db else Path(tempfile.gettempdir()),
        store_url=f"sqlite+aiosqlite:///{db}" if db else None,
        agents={
            "backend": "llm", "judge_model": "bench:judge", "generator_model": "bench:gen",
            "verifier_model": "bench:ver", "translator_model": "bench:tr", "questions_per_entity": 3,
            "providers": {"bench": {"base_url": base_url, "rpm": rpm, "tpm": tpm,
                                    "max_in_flight": in_flight, "timeout_s": 30, "max_attempts": 8}},
            "prices": {"bench:gen": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}},
        },
        spec={"languages": LANGS},
        daemon={"poll_interval_s": 0.02, "lease_s": 60.0},
    )


async def judge_many(backend: LlmBackend, n: int, tag: str) -> None:
    doc = render_document(LIVERPOOL_SWANSEA, "en")
    sem = asyncio.Semaphore(64)  # the stage workers' fan-out

    async def one(i: int) -> None:
        async with sem:
            await backend.judge(entity_name=f"{tag} entity {i}", document=doc, facts=LIVERPOOL_SWANSEA,
                                response=f"summary {i}", lang="en")

    await asyncio.gather(*(one(i) for i in range(n)))


PROVIDER_NICE = -5  # the fake provider stands for another machine: the box's load should not delay its clock


def _provider_priority() -> None:
    with contextlib.suppress(OSError):  # not permitted: the provider shares the box's CPU with everything else
        os.nice(PROVIDER_NICE)


class ServerProcess:
    """The fake provider in a subprocess; its counters come back from `GET /stats`."""

    def __init__(self, *args: str) -> None:
        self.args = args
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""

    async def __aenter__(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.openai_server", "--latency-ms", str(LATENCY_MS), *self.args],
            cwd=ROOT, stdout=subprocess.PIPE, text=True, preexec_fn=_provider_priority,
        )
        assert self.proc.stdout is not None
        line = await asyncio.to_thread(self.proc.stdout.readline)
        self.base_url = json.loads(line)["base_url"]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        try:
            await asyncio.to_thread(self.proc.wait, 5)
        except subprocess.TimeoutExpired:  # SIGINT is ignored when the bench was started in the background
            self.proc.terminate()
            await asyncio.to_thread(self.proc.wait)

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/stats", timeout=10) as r:
            stats: dict[str, Any] = json.loads(r.read())
        return stats


def fractions(st: dict[str, Any]) -> tuple[float, float]:
    """Admitted requests and tokens per second, from the first arrival to the last answer, per second."""
    span = st["ok_times"][-1] - st["times"][0] if st["ok_times"] else 0.0
    if span <= 0:
        return 0.0, 0.0
    return st["ok"] / span, st["tokens_admitted"] / span


def arrival_fractions(st: dict[str, Any], *, rpm: float | None, tpm: float | None) -> dict[str, float]:
    """Over the admitted arrivals only: the rate against the limit, and the count against the most the
    provider's buckets allowed in that span (a second's burst + the rate x the span)."""
    t = st["admit_times"]
    span = t[-1] - t[0] if len(t) > 1 else 0.0
    if span <= 0:
        return {}
    out: dict[str, float] = {}
    if rpm:
        out["fraction_of_rpm_admitted"] = round((len(t) - 1) / span * 60 / rpm, 3)
        out["fraction_of_allowed"] = round(len(t) / (rpm / 60 * (1.0 + span)), 3)
    if tpm:
        out["fraction_of_tpm_admitted"] = round(st["tokens_admitted"] / span * 60 / tpm, 3)
        out["fraction_of_allowed"] = round(st["tokens_admitted"] / (tpm / 60 * (1.0 + span)), 3)
    return out


class BackgroundLoad:
    """`n` busy processes at this process's priority while the block runs (each exits by itself after
    `LOAD_MAX_S`); `report()` says how many, at what nice, and the share of a core each one got."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen[bytes]] = []
        self.cpu_s: list[float] = []
        self.t0 = 0.0
        self.wall_s = 0.0

    def __enter__(self) -> BackgroundLoad:
        code = f"import time\nend = time.monotonic() + {LOAD_MAX_S}\nwhile time.monotonic() < end: pass"
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(self.n)]
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall_s = time.perf_counter() - self.t0
        for p in self.procs:
            self.cpu_s.append(_cpu_seconds(p.pid))
            p.kill()
            p.wait()

    def report(self) -> dict[str, Any]:
        share = [round(c / self.wall_s, 2) for c in self.cpu_s] if self.wall_s > 0 else []
        return {"busy_procs": self.n, "nice": os.nice(0), "core_share_each": share}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process, from /proc (Linux); 0 where unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class GcTime:
    """The garbage collector's time in this process while the block runs (its pauses stall the event loop)."""

    def __init__(self) -> None:
        self.total_s = 0.0
        self.max_s = 0.0
        self.collections = [0, 0, 0]
        self._t = 0.0

    def _cb(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t = time.perf_counter()
            return
        d = time.perf_counter() - self._t
        self.total_s += d
        self.max_s = max(self.max_s, d)
        self.collections[info["generation"]] += 1

    def __enter__(self) -> GcTime:
        gc.callbacks.append(self._cb)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._cb)

    def report(self, calls: int) -> dict[str, Any]:
        return {"ms_per_call": round(self.total_s / max(1, calls) * 1000, 2), "max_pause_ms": round(self.max_s * 1000, 1),
                "collections_by_generation": self.collections}


class LoopLag:
    """How late a 10 ms timer fires on this event loop (the starvation a loaded box inflicts)."""

    def __init__(self, limiter: Any = None) -> None:
        self.lags: list[float] = []
        self.limiter = limiter
        self.samples = 0
        self.cap_bound = 0  # samples where callers waited for the in-flight cap while neither pacer held any
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.01)
            self.lags.append(time.perf_counter() - t - 0.01)
            if self.limiter is not None:
                self.samples += 1
                lim = self.limiter
                self.cap_bound += lim.concurrency.waiting > 0 and lim.requests.waiting == 0 and lim.tokens.waiting == 0

    async def __aenter__(self) -> LoopLag:
        self._task = asyncio.create_task(self._run(), name="bench-loop-lag")
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def report(self) -> dict[str, float]:
        lags = sorted(self.lags) or [0.0]
        pick = lambda q: round(lags[min(len(lags) - 1, int(q * len(lags)))] * 1000, 1)  # noqa: E731
        return {"p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": round(lags[-1] * 1000, 1)}

    def cap_bound_share(self) -> float:
        """The share of the time the in-flight cap, not the budget, held the client back."""
        return round(self.cap_bound / max(1, self.samples), 3)


async def phase_limited(
    *, limiter_rpm: int, limiter_tpm: int, server: list[str], tag: str, load_procs: int
) -> dict[str, Any]:
    from pydantic_ai.models import override_allow_model_requests

    async with ServerProcess("--retry-after", "1", "--rate-headers", *server) as proc:
        s = settings(proc.base_url, rpm=limiter_rpm, tpm=limiter_tpm)
        backend = LlmBackend(agents=s.agents, languages=s.spec.languages, secret=s.secret, cache=MemoryCallCache())
        with BackgroundLoad(load_procs) as load:
            async with LoopLag(backend.factory.limiters["bench"]) as lag:
                gc_t = GcTime()
                t0 = time.perf_counter()
                cpu0 = time.process_time()
                with override_allow_model_requests(True), gc_t:
                    await judge_many(backend, CALLS, tag)
                wall = time.perf_counter() - t0
                cpu = time.process_time() - cpu0
            loadavg = os.getloadavg()[0]
        st = proc.stats()
    lim = backend.factory.limiters["bench"]
    req_s, tok_s = fractions(st)
    provider_rpm = float(server[server.index("--rpm") + 1]) if "--rpm" in server else None
    provider_tpm = float(server[server.index("--tpm") + 1]) if "--tpm" in server else None
    return {"ok": st["ok"], "wall_s": round(wall, 2), "calls_per_s": round(st["ok"] / wall, 2),
            "fraction_of_rpm": round(req_s * 60 / RPM, 3), "fraction_of_tpm": round(tok_s * 60 / TPM, 3),
            **arrival_fractions(st, rpm=provider_rpm, tpm=provider_tpm),
            "tokens_per_call": round(st["tokens_admitted"] / max(1, st["ok"]), 1),
            "http_429": int(st["status"].get("429", 0)), "client_cpu_ms_per_call": round(cpu / CALLS * 1000, 2),
            "client_gc": gc_t.report(CALLS),
            "pacer_unused_s": {"requests": round(lim.requests.unused_s, 2), "tokens": round(lim.tokens.unused_s, 2)},
            "final_in_flight_limit": round(lim.concurrency.limit, 1), "retries": lim.stats.retried,
            "quota_waits": lim.requests.quota_waits + lim.tokens.quota_waits,
            "event_loop_lag": lag.report(), "in_flight_cap_bound_share": lag.cap_bound_share(),
            "background_load": load.report(), "loadavg_1m": round(loadavg, 2)}


def reference_pattern(base_url: str, n: int) -> dict[str, Any]:
    """2 threads, no limiter: each sends its calls one after another; on 429 it sleeps Retry-After."""
    body = json.dumps({"model": "judge", "messages": [{"role": "user", "content": "x"}]}).encode()
    done = [0]
    lock = threading.Lock()

    def worker(k: int) -> None:
        for _ in range(k):
            while True:
                req = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"})
                try:
                    urllib.request.urlopen(req, timeout=30).read()
                    break
                except urllib.error.HTTPError as e:
                    time.sleep(float(e.headers.get("Retry-After", "1")))
            with lock:
                done[0] += 1

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(n // 2,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"ok": done[0], "wall_s": round(wall, 2), "calls_per_s": round(done[0] / wall, 2)}


async def phase_reference() -> dict[str, Any]:
    async with FakeOpenAI(rpm=RPM, latency_ms=LATENCY_MS, retry_after_s=1) as server:
        return await asyncio.to_thread(reference_pattern, server.base_url, REF_CALLS)


# -- kill and restart ----------------------------------------------------------------------------
async def seed(db: Path, base_url: str) -> int:
    from storage.engine import Store
    from tests.pipeline._harness import add_entity

    n = 0
    async with Store(url=f"sqlite+aiosqlite:///{db}") as store:
        for rep in range(2):
            for key, facts in ALL.items():
                domain = {"match": "sports", "film": "movies", "release": "music"}.get(facts.kind, "disasters")
                await add_entity(store, facts, f"{ENTITY_NAMES[key]} #{rep}", domain=domain, external_id=f"{key}-{rep}")
                n += 1
    return n


async def child(db: Path, base_url: str) -> None:
    """One 'daemon' run of the four stages on `db` until every entity is final."""
    from pydantic_ai.models import override_allow_model_requests

    from clkt.pipeline.stage_worker import StageWorker
    from storage.engine import Store
    from storage.llm_cache import SqlCallCache
    from tests.pipeline._harness import answers, running, settle

    StageWorker.IDLE_SLEEP_S = 0.02
    StageWorker.RETRY_BASE_S = 0.05
    s = settings(base_url, rpm=60_000, in_flight=8, db=db)
    async with Store(url=s.resolved_store_url) as store:
        backend = LlmBackend(agents=s.agents, languages=s.spec.languages, secret=s.secret, cache=SqlCallCache(store))
        with override_allow_model_requests(True):
            async with running(s, store, backend, answers()) as _:
                n = len(await _statuses(store))
                await settle(store, n, timeout=300)


async def _statuses(store: Any) -> dict[int, Any]:
    from tests.pipeline._harness import statuses

    return await statuses(store)


def _spawn(db: Path, base_url: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, __file__, "--child", str(db), base_url], cwd=ROOT)


async def phase_kill_restart() -> dict[str, Any]:
    from storage.engine import Store
    from storage.llm_cache import cost_summary

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        async with FakeOpenAI(latency_ms=50) as server:
            n = await seed(db, server.base_url)
            first = _spawn(db, server.base_url)
            kill_after = 60
            # polls a child process and the fake server's counter (nothing to wait on as an event)
            while server.stats.ok < kill_after and first.poll() is None:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
            ok_at_kill = server.stats.ok
            first.send_signal(signal.SIGKILL)
            await asyncio.to_thread(first.wait)
            # in flight at the kill: every request the dead daemon sent that was not answered by then, also
            # those still in the server's socket or not yet admitted when it died (the server's own in-flight
            # count misses those: a race that counted one of them as repeated after the restart)
            await asyncio.sleep(1.0)  # the server reads and answers what the dead daemon had sent
            sent_by_first = server.stats.calls
            in_flight_at_kill = sent_by_first - ok_at_kill
            ok_before = server.stats.ok
            async with Store(url=f"sqlite+aiosqlite:///{db}") as store, store.session() as s:
                cached_at_kill = (await cost_summary(s)).calls
            second = _spawn(db, server.base_url)
            rc = await asyncio.to_thread(second.wait)
            repeated = sum(c - 1 for c in server.stats.bodies.values() if c > 1)
            async with Store(url=f"sqlite+aiosqlite:///{db}") as store:
                async with store.session() as s:
                    summary = await cost_summary(s)
                ready = sum(1 for v in (await _statuses(store)).values() if v.value == "ready")
        answered_not_stored = max(0, ok_at_kill - cached_at_kill)
        return {
            "entities": n, "ready": ready, "restart_rc": rc, "calls_before_kill": ok_before,
            "calls_total": server.stats.ok, "in_flight_at_kill": in_flight_at_kill,
            "answered_but_unstored_at_kill": answered_not_stored,
            "repeated_requests": repeated,
            "repeated_after_restart": max(0, repeated - max(0, sent_by_first - cached_at_kill)),  # sent, not stored
            "accepted_questions": summary.accepted_questions,
            "tokens_per_accepted_question": round(summary.tokens_per_accepted_question or 0.0, 1),
            "cost_per_accepted_question_usd": round(summary.cost_per_accepted_question_usd or 0.0, 6),
        }


async def kill_restart_rounds(rounds: int) -> dict[str, Any]:
    """`rounds` kill-and-restart runs, each on a fresh store: the first round's figures, and over all rounds the
    calls repeated beyond what each kill made unavoidable (goal 0 in every round)."""
    runs = [await phase_kill_restart() for _ in range(rounds)]
    out = dict(runs[0])
    out.update({
        "rounds": rounds,
        "repeated_after_restart": max(r["repeated_after_restart"] for r in runs),
        "repeated_after_restart_per_round": [r["repeated_after_restart"] for r in runs],
        "in_flight_at_kill_per_round": [r["in_flight_at_kill"] for r in runs],
        "answered_but_unstored_at_kill_per_round": [r["answered_but_unstored_at_kill"] for r in runs],
        "ready": min(r["ready"] for r in runs),
    })
    return out


# -- batch mode --------------------------------------------------------------------------------------
PRICE = {"input_per_mtok": 0.15, "cached_input_per_mtok": 0.075, "output_per_mtok": 0.60, "batch_discount": 0.5}
BATCH_MODELS = {"judge_model": "openai:judge", "generator_model": "openai:gen", "verifier_model": "openai:ver",
                "translator_model": "openai:tr"}


def pipeline_settings(base_url: str, *, mode: str, db: Path) -> Settings:
    return Settings(
        data_dir=db.parent, store_url=f"sqlite+aiosqlite:///{db}",
        agents={
            "backend": "llm", "mode": mode, "questions_per_entity": 3, **BATCH_MODELS,
            "providers": {"openai": {"base_url": base_url, "rpm": 60_000, "tpm": 50_000_000, "max_in_flight": 8}},
            "prices": {m: PRICE for m in BATCH_MODELS.values()},
            "batch": {"flush_after_s": 0.3, "poll_interval_s": 0.1},
        },
        spec={"languages": LANGS},
        daemon={"poll_interval_s": 0.02, "lease_s": 5.0},
    )


def _fast_batches() -> None:
    from agents.batch import BatchedModel
    from clkt.pipeline.batches import BatchService
    from clkt.pipeline.stage_worker import StageWorker

    StageWorker.IDLE_SLEEP_S = 0.02
    StageWorker.RETRY_BASE_S = 0.05
    BatchedModel.POLL_DEFER_S = 0.1
    BatchService.TICK_S = 0.1


async def run_pipeline(s: Settings, *, batch: bool) -> None:
    """The four stage workers (+ the llm-batches service in batch mode) until every entity is final."""
    from pydantic_ai.models import override_allow_model_requests

    from clkt.pipeline.batches import BatchService
    from clkt.services import agent_backend
    from storage.engine import Store
    from tests.pipeline._harness import answers, running, settle

    _fast_batches()
    async with Store(url=s.resolved_store_url) as store:
        backend = agent_backend(s, store=store)
        with override_allow_model_requests(True):
            async with running(s, store, backend, answers()) as ctx:
                service = asyncio.create_task(BatchService().run(ctx), name="llm-batches") if batch else None
                try:
                    await settle(store, len(await _statuses(store)), timeout=600)
                finally:
                    ctx.stopping.set()
                    if service is not None:
                        await service


async def _report(db: Path) -> dict[str, Any]:
    from sqlalchemy import func, select

    from storage.engine import Store
    from storage.llm_cache import cost_summary
    from storage.models import LlmBatch, LlmBatchRequest

    async with Store(url=f"sqlite+aiosqlite:///{db}") as store:
        async with store.session() as s:
            summary = await cost_summary(s)
            unanswered = int((await s.execute(
                select(func.count()).select_from(LlmBatchRequest).where(LlmBatchRequest.state != "done"))).scalar() or 0)
            open_batches = int((await s.execute(
                select(func.count()).select_from(LlmBatch).where(LlmBatch.state != "ended"))).scalar() or 0)
        st = await _statuses(store)
    q = summary.accepted_questions
    per_stage: dict[str, dict[str, float]] = {}
    for c in summary.stages:
        d = per_stage.setdefault(c.stage, {"input": 0.0, "cached_input": 0.0, "output": 0.0})
        d["input"] += c.input_tokens / q if q else 0.0
        d["cached_input"] += c.cached_input_tokens / q if q else 0.0
        d["output"] += c.output_tokens / q if q else 0.0
    return {
        "entities": len(st), "ready": sum(1 for v in st.values() if v.value == "ready"),
        "final": sum(1 for v in st.values() if v.value in ("ready", "known", "rejected", "failed")),
        "accepted_questions": q, "calls": summary.calls, "batch_calls": summary.batch_calls,
        "cost_usd": round(summary.cost_usd, 6),
        "cost_per_accepted_question_usd": round(summary.cost_per_accepted_question_usd or 0.0, 7),
        "cached_input_share": round(summary.cached_input_tokens / max(1, summary.input_tokens), 3),
        "tokens_per_accepted_question_by_stage": {k: {kk: round(vv, 1) for kk, vv in v.items()}
                                                  for k, v in sorted(per_stage.items())},
        "unanswered_batch_requests": unanswered, "open_batches": open_batches,
    }


async def phase_batch_vs_online() -> dict[str, Any]:
    """The same entities through the online path and through batch mode; the same fake prices."""
    from tests.fakes.batch_server import FakeBatchProvider

    out: dict[str, Any] = {}
    for mode in ("online", "batch"):
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "cost.db"
            if mode == "online":
                async with FakeOpenAI(latency_ms=5, prefix_cache_min_tokens=64) as server:
                    await seed(db, "")
                    await run_pipeline(pipeline_settings(server.base_url, mode=mode, db=db), batch=False)
            else:
                async with FakeBatchProvider(cache_min_tokens=64) as provider:
                    await seed(db, "")
                    await run_pipeline(pipeline_settings(provider.openai_url, mode=mode, db=db), batch=True)
                    out["batches_created"] = provider.stats.batches_created
            out[mode] = await _report(db)
    on, ba = out["online"]["cost_per_accepted_question_usd"], out["batch"]["cost_per_accepted_question_usd"]
    out["batch_cost_per_question_vs_online"] = round(ba / on, 3) if on else None
    return out


async def batch_child(db: Path, base_url: str) -> None:
    await run_pipeline(pipeline_settings(base_url, mode="batch", db=db), batch=True)


async def phase_batch_kill() -> dict[str, Any]:
    """kill -9 of a batch-mode daemon while a batch create is in flight (the provider creates it, the
    daemon never hears its id), and again while batches are being polled; then a restart to the end."""
    from tests.fakes.batch_server import FakeBatchProvider

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "kill.db"
        async with FakeBatchProvider(cache_min_tokens=64, polls_to_end=3, create_delay_s=0.3) as provider:
            await seed(db, "")
            kills = []
            for target in (1, 3):  # mid-create of the 1st batch; mid-create of the 3rd
                proc = subprocess.Popen([sys.executable, __file__, "--batch-child", str(db), provider.openai_url],
                                        cwd=ROOT)
                # polls a child process and the fake provider's counter (nothing to wait on as an event)
                while provider.stats.creates_received < target and proc.poll() is None:  # noqa: ASYNC110
                    await asyncio.sleep(0.005)
                proc.send_signal(signal.SIGKILL)
                await asyncio.to_thread(proc.wait)
                kills.append({"creates_received": provider.stats.creates_received,
                              "batches_created": provider.stats.batches_created})
                await asyncio.sleep(0.5)  # the provider finishes the create the dead daemon sent
            proc = subprocess.Popen([sys.executable, __file__, "--batch-child", str(db), provider.openai_url],
                                    cwd=ROOT)
            rc = await asyncio.to_thread(proc.wait)
            st = provider.stats
            rep = await _report(db)
            dup_submissions = sum(n - 1 for n in st.submissions.values() if n > 1)
            return {
                "kills": kills, "restart_rc": rc, "batches_created": st.batches_created,
                "requests_run": sum(st.runs.values()), "resubmitted_requests": dup_submissions,
                "requests_run_twice": st.resubmitted,
                "lost": rep["unanswered_batch_requests"] + (rep["entities"] - rep["final"]),
                **{k: rep[k] for k in ("entities", "ready", "accepted_questions", "open_batches")},
            }


async def main(only: str | None = None, load_procs: int = LOAD_PROCS, rounds: int = 1) -> None:
    t0 = time.perf_counter()
    figures: dict[str, Any] = {"provider_rpm": RPM, "latency_ms_mean": LATENCY_MS, "provider_tpm": TPM,
                               "tpm_phase_calls_per_s_at_limit": round(TPM / 60 / JUDGE_CALL_TOKENS, 1),
                               "calls_per_phase": CALLS, "cpu_cores": os.cpu_count(),
                               "loadavg_1m_start": round(os.getloadavg()[0], 2)}
    goals: dict[str, str] = {}  # figure -> goal as text
    results: dict[str, bool] = {}
    if only in (None, "pacing"):
        rpm_server = ["--rpm", str(RPM)]  # the short interval: one second of the limit (the default)
        tpm_server = ["--tpm", str(TPM), "--token-burst-s", "1"]
        exact = await phase_limited(limiter_rpm=RPM, limiter_tpm=50_000_000, server=rpm_server, tag="rpm",
                                    load_procs=load_procs)
        tpm = await phase_limited(limiter_rpm=60_000, limiter_tpm=TPM, server=tpm_server, tag="tpm",
                                  load_procs=load_procs)
        over = await phase_limited(limiter_rpm=RPM * 2, limiter_tpm=50_000_000, server=rpm_server, tag="rpm2x",
                                   load_procs=load_procs)
        ref = await phase_reference()
        kill = await kill_restart_rounds(rounds)
        figures.update({
            "limited": exact, "tpm_limited": tpm, "limiter_at_2x_limit": over, "reference_2_threads": ref,
            "speedup_over_reference": round(exact["calls_per_s"] / ref["calls_per_s"], 2), "kill_restart": kill,
        })
        for name, goal, ok in (
            ("limited.fraction_of_rpm", ">= 0.95", exact["fraction_of_rpm"] >= 0.95),
            ("limited.http_429", "== 0", exact["http_429"] == 0),
            ("tpm_limited.fraction_of_tpm", ">= 0.95", tpm["fraction_of_tpm"] >= 0.95),
            ("tpm_limited.http_429", "== 0", tpm["http_429"] == 0),
            ("limiter_at_2x_limit.fraction_of_rpm", ">= 0.9", over["fraction_of_rpm"] >= 0.9),
            ("speedup_over_reference", "> 1", figures["speedup_over_reference"] > 1),
            ("kill_restart.repeated_after_restart", "== 0", kill["repeated_after_restart"] == 0),
            ("kill_restart.ready", "== entities", kill["ready"] == kill["entities"]),
        ):
            goals[name], results[name] = goal, ok
    if only == "kill":
        kill = await kill_restart_rounds(rounds)
        figures["kill_restart"] = kill
        for name, goal, ok in (
            ("kill_restart.repeated_after_restart", "== 0", kill["repeated_after_restart"] == 0),
            ("kill_restart.ready", "== entities", kill["ready"] == kill["entities"]),
        ):
            goals[name], results[name] = goal, ok
    if only in (None, "batch"):
        bvo = await phase_batch_vs_online()
        bkill = await phase_batch_kill()
        figures.update({"batch_vs_online": bvo, "batch_kill_restart": bkill})
        ratio = bvo["batch_cost_per_question_vs_online"]
        for name, goal, ok in (
            ("batch_vs_online.batch_cost_per_question_vs_online", "<= 0.55", ratio is not None and ratio <= 0.55),
            ("batch_vs_online.batch.accepted_questions", "== online",
             bvo["batch"]["accepted_questions"] == bvo["online"]["accepted_questions"]),
            ("batch_kill_restart.resubmitted_requests", "== 0", bkill["resubmitted_requests"] == 0),
            ("batch_kill_restart.requests_run_twice", "== 0", bkill["requests_run_twice"] == 0),
            ("batch_kill_restart.lost", "== 0", bkill["lost"] == 0),
            ("batch_kill_restart.ready", "== entities", bkill["ready"] == bkill["entities"]),
        ):
            goals[name], results[name] = goal, ok
    figures["runtime_s"] = round(time.perf_counter() - t0, 1)
    figures["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
    figures["goals_met"] = results
    print(json.dumps({"bench": "agents", "figures": figures, "goals": goals, "met": all(results.values())}))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2, metavar=("DB", "BASE_URL"))
    ap.add_argument("--batch-child", nargs=2, metavar=("DB", "BASE_URL"))
    ap.add_argument("--only", choices=["pacing", "batch", "kill"], default=None,
                    help="pacing (with one kill-restart), batch, or only the kill-restart rounds")
    ap.add_argument("--rounds", type=int, default=1, help="kill-and-restart rounds, each on a fresh store")
    ap.add_argument("--load-procs", type=int, default=LOAD_PROCS, help="busy processes beside the pacing phases")
    args = ap.parse_args()
    if args.child:
        asyncio.run(child(Path(args.child[0]), args.child[1]))
    elif args.batch_child:
        asyncio.run(batch_child(Path(args.batch_child[0]), args.batch_child[1]))
    else:
        if args.rounds < 1:
            ap.error("--rounds must be >= 1")
        asyncio.run(main(args.only, args.load_procs, args.rounds))
