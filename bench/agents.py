"""Bench: the LLM agents against a fake OpenAI-compatible provider with a hard RPM limit.

Figures:
- throughput as a fraction of the provider's RPM limit, limiter set to the true limit (goal >= 0.95, 0 429s);
- the same for the provider's TPM limit (requests unlimited, tokens the binding limit);
- the limiter set to twice the true limit: the provider's x-ratelimit headers bring it down (429s counted);
The provider runs in its own process (it is another machine in real use), so its clock and its CPU are not
the client's.
- speedup over the reference pattern (2 threads, no limiter: sequential calls, sleep on 429);
- a kill -9 and restart of a pipeline run mid-way: provider calls repeated after the restart (goal 0
  beyond the calls that were in flight at the kill), thanks to the call cache in the store;
- tokens per accepted question of that run.
Ends with one JSON line. Runtime about 1-2 minutes.

    .venv/bin/python bench/agents.py
"""

from __future__ import annotations

import argparse
import asyncio
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
TPM = 900_000  # the TPM phase's limit: about 20 judge requests/s
LATENCY_MS = 250.0
CALLS = 600
REF_CALLS = 100
LANGS = ["en", "fr", "ja"]


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


class ServerProcess:
    """The fake provider in a subprocess; its counters come back from `GET /stats`."""

    def __init__(self, *args: str) -> None:
        self.args = args
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""

    async def __aenter__(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.openai_server", "--latency-ms", str(LATENCY_MS), *self.args],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        line = await asyncio.to_thread(self.proc.stdout.readline)
        self.base_url = json.loads(line)["base_url"]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        await asyncio.to_thread(self.proc.wait)

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/stats", timeout=10) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]


def fractions(st: dict[str, Any]) -> tuple[float, float]:
    """Admitted requests and tokens per second, from the first arrival to the last answer, per second."""
    span = st["ok_times"][-1] - st["times"][0] if st["ok_times"] else 0.0
    if span <= 0:
        return 0.0, 0.0
    return st["ok"] / span, st["tokens_admitted"] / span


async def phase_limited(*, limiter_rpm: int, limiter_tpm: int, server: list[str], tag: str) -> dict[str, Any]:
    from pydantic_ai.models import override_allow_model_requests

    async with ServerProcess("--retry-after", "1", "--rate-headers", *server) as proc:
        s = settings(proc.base_url, rpm=limiter_rpm, tpm=limiter_tpm)
        backend = LlmBackend(settings=s, cache=MemoryCallCache())
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        with override_allow_model_requests(True):
            await judge_many(backend, CALLS, tag)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        st = proc.stats()
    lim = backend.factory.limiters["bench"]
    req_s, tok_s = fractions(st)
    return {"ok": st["ok"], "wall_s": round(wall, 2), "calls_per_s": round(st["ok"] / wall, 2),
            "fraction_of_rpm": round(req_s * 60 / RPM, 3), "fraction_of_tpm": round(tok_s * 60 / TPM, 3),
            "tokens_per_call": round(st["tokens_admitted"] / max(1, st["ok"]), 1),
            "http_429": int(st["status"].get("429", 0)), "client_cpu_ms_per_call": round(cpu / CALLS * 1000, 2),
            "final_in_flight_limit": round(lim.concurrency.limit, 1), "retries": lim.stats.retried,
            "loadavg_1m": round(os.getloadavg()[0], 2)}


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
    async with FakeOpenAI(rpm=RPM, burst=2, latency_ms=LATENCY_MS, retry_after_s=1) as server:
        return await asyncio.to_thread(reference_pattern, server.base_url, REF_CALLS)


# -- kill and restart ----------------------------------------------------------------------------
async def seed(db: Path, base_url: str) -> int:
    from tests.pipeline._harness import add_entity
    from storage.engine import Store

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

    from clkt.pipeline.worker import StageWorker
    from storage.engine import Store
    from storage.llm_cache import SqlCallCache
    from tests.pipeline._harness import answers, running, settle

    StageWorker.IDLE_SLEEP_S = 0.02
    StageWorker.RETRY_BASE_S = 0.05
    s = settings(base_url, rpm=60_000, in_flight=8, db=db)
    async with Store(url=s.resolved_store_url) as store:
        backend = LlmBackend(settings=s, cache=SqlCallCache(store))
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
            while server.stats.ok < kill_after and first.poll() is None:
                await asyncio.sleep(0.01)
            in_flight_at_kill = server.stats.in_flight
            first.send_signal(signal.SIGKILL)
            await asyncio.to_thread(first.wait)
            ok_before = server.stats.ok
            async with Store(url=f"sqlite+aiosqlite:///{db}") as store:
                async with store.session() as s:
                    cached_at_kill = (await cost_summary(s)).calls
            second = _spawn(db, server.base_url)
            rc = await asyncio.to_thread(second.wait)
            repeated = sum(c - 1 for c in server.stats.bodies.values() if c > 1)
            async with Store(url=f"sqlite+aiosqlite:///{db}") as store:
                async with store.session() as s:
                    summary = await cost_summary(s)
                ready = sum(1 for v in (await _statuses(store)).values() if v.value == "ready")
        answered_not_stored = max(0, ok_before - cached_at_kill)
        return {
            "entities": n, "ready": ready, "restart_rc": rc, "calls_before_kill": ok_before,
            "calls_total": server.stats.ok, "in_flight_at_kill": in_flight_at_kill,
            "answered_but_unstored_at_kill": answered_not_stored,
            "repeated_requests": repeated,
            "repeated_after_restart": max(0, repeated - answered_not_stored - in_flight_at_kill),
            "accepted_questions": summary.accepted_questions,
            "tokens_per_accepted_question": round(summary.tokens_per_accepted_question or 0.0, 1),
            "cost_per_accepted_question_usd": round(summary.cost_per_accepted_question_usd or 0.0, 6),
        }


async def main() -> None:
    t0 = time.perf_counter()
    rpm_server = ["--rpm", str(RPM), "--burst", "2"]
    tpm_server = ["--tpm", str(TPM)]
    exact = await phase_limited(limiter_rpm=RPM, limiter_tpm=50_000_000, server=rpm_server, tag="rpm")
    tpm = await phase_limited(limiter_rpm=60_000, limiter_tpm=TPM, server=tpm_server, tag="tpm")
    over = await phase_limited(limiter_rpm=RPM * 2, limiter_tpm=50_000_000, server=rpm_server, tag="rpm2x")
    ref = await phase_reference()
    kill = await phase_kill_restart()
    figures = {
        "provider_rpm": RPM,
        "latency_ms_mean": LATENCY_MS,
        "provider_tpm": TPM,
        "limited": exact,
        "tpm_limited": tpm,
        "limiter_at_2x_limit": over,
        "reference_2_threads": ref,
        "speedup_over_reference": round(exact["calls_per_s"] / ref["calls_per_s"], 2),
        "kill_restart": kill,
        "runtime_s": round(time.perf_counter() - t0, 1),
    }
    goals = {
        "fraction_of_rpm>=0.95": exact["fraction_of_rpm"] >= 0.95,
        "no_429_at_true_rpm": exact["http_429"] == 0,
        "fraction_of_tpm>=0.95": tpm["fraction_of_tpm"] >= 0.95,
        "no_429_at_true_tpm": tpm["http_429"] == 0,
        "recovers_at_2x_limit>=0.9": over["fraction_of_rpm"] >= 0.9,
        "speedup>1": figures["speedup_over_reference"] > 1,
        "0_repeated_calls_after_restart": kill["repeated_after_restart"] == 0,
        "all_entities_final_ready": kill["ready"] == kill["entities"],
    }
    print(json.dumps({"bench": "agents", "figures": figures, "goals": goals, "met": all(goals.values())}))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2, metavar=("DB", "BASE_URL"))
    args = ap.parse_args()
    if args.child:
        asyncio.run(child(Path(args.child[0]), args.child[1]))
    else:
        asyncio.run(main())
