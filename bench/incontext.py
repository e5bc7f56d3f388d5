"""Bench: the in-context track (issue 32) on the demo snapshot, in two parts, one per embedded target.

The issue asks it of "the embedded target"; the project embeds two, and each goal needs a different one:

A. "The document helps" (in-context accuracy in the train language above the no-context floor, exact McNemar p
   < 0.01): the embedded BASE target gemma-3-270m, in process, scored as the track scores a local base target
   (`clkt.incontext.askers.incontext_scorer`: option-loglik-norm, as its parametric jobs), on every test
   question of the train language (`--questions` to cut them), each with the entity's train-language document
   and without it. SmolLM2-135M-instruct cannot carry this goal: on the demo snapshot it did not read the
   document (0.17 right with it, 0.25 without), while gemma-3-270m answered 41/42 with it and 10/42 without.
B. The server goals: the embedded INSTRUCT target SmolLM2-135M-instruct (the one that answers chat prompts with a
   letter, as an API target does; `transformers serve` serves it), two ways over the first `--n` test questions
   (every language has each; asked without a document and with the train-language one):
   1. in process: `LocalAsker` (the generate scorer through the target's chat template);
   2. as an API target (`backend = "api"`, provider `local`) served by `transformers serve` on loopback behind the
      bench's rate-limiting proxy, in a child process that is SIGKILLed once `--kill-at` of its calls are
      answered, then started again to finish.
   The proxy models a provider's request limit as the fake OpenAI server does (`tests.fakes.openai_server`,
   after what OpenAI and Anthropic document): a bucket holding the minute's limit, refilled continuously, and the
   limit also enforced per second (a bucket of a second of the limit, at least one request, refilled at least
   a request a second); 429 + Retry-After beyond. The old proxy refilled its one-request bucket only once per
   interval under 60 RPM (a full 20 s between any two requests at 3 RPM): stricter than either provider
   documents, and a restarted client could not meet it without knowing when the killed one last sent.
   The configured RPM is `--rpm-fraction` (0.6) of the server's measured capacity unless `--rpm` is given: a
   calibration sends `2 x --concurrency` prompts of the track straight to the server (`--concurrency` at once,
   after one warm-up call) and counts answers per minute. The limit must be what binds, not the server: the
   achieved rate is compared with the configured one.

Goals (the JSON line's `goals`, `figures.goals_met`): the two ways of part B give the same letter on >= 98 % of
the prompts; through the proxy the achieved rate is >= 0.95 of the configured RPM with 0 x 429 (`rpm_ratio`:
requests the proxy admitted per minute over each child's span of admissions, the restart's start-up excluded);
the restart repays 0 answered calls (`repaid`: calls the proxy answered after the restart minus the prompts whose
answer was not in the call cache at the kill); part A's accuracy with the document above the floor with p < 0.01.

    .venv/bin/python bench/incontext.py (--demo DIR | --snapshot DIR) [--questions N] [--n 12] [--rpm R] [--work DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from aiohttp import ClientSession, ClientTimeout, web  # noqa: E402

from clkt.config import ProviderSettings, TargetSettings  # noqa: E402
from clkt.snapshots.layout import SnapshotData, load_snapshot_dir  # noqa: E402

MODELS_DATA = Path(os.environ.get("CLKT_TEST_MODELS_DIR") or Path(tempfile.gettempdir()) / "clkt-test-data")
SMOL = "smollm2-135m-instruct"
GEMMA = "gemma-3-270m"
CUTOFF = date(2024, 11, 1)


def find_snapshot(given: str | None, demo: str | None) -> Path:
    """`--snapshot`, else the single frozen snapshot under the demo folder `--demo`; one line naming what is wrong."""
    if given:
        path = Path(given)
        if not (path / "manifest.json").is_file():
            raise SystemExit(f"--snapshot {given}: no manifest.json there (give a frozen snapshot's directory)")
        return path
    if not demo:
        raise SystemExit("give --demo DIR (a finished `clkt demo` folder) or --snapshot DIR (a frozen snapshot)")
    root = Path(demo)
    if not root.is_dir():
        raise SystemExit(f"--demo {demo}: no such folder")
    found = sorted(p.parent for p in root.glob("**/manifest.json") if "snapshot_id" in p.read_text("utf-8"))
    if len(found) != 1:
        what = "none" if not found else f"{len(found)}: {', '.join(map(str, found))}"
        raise SystemExit(f"no single demo snapshot under {root} ({what}); give --snapshot DIR")
    return found[0]


def subset(snap: SnapshotData, n: int | None, langs: list[str] | None = None) -> SnapshotData:
    """The snapshot cut to its first `n` test questions (by id, in every language; all when None), and to `langs`."""
    langs = langs or snap.languages
    first = snap.questions_for(langs[0], "test")
    keep = {r.qid for r in (first if n is None else first[:n])}
    qs = {lang: [r for r in snap.questions[lang] if r.split == "test" and r.qid in keep] for lang in langs}
    manifest = snap.manifest.model_copy(update={"languages": langs})
    return snap.model_copy(update={"questions": qs, "manifest": manifest})


def load(work: Path, n: int | None, langs: list[str] | None = None) -> SnapshotData:
    return subset(load_snapshot_dir(work / "snapshot", verify_hashes=False), n, langs)


def local_target(name: str, model: str, kind: str) -> TargetSettings:
    return TargetSettings(name=name, model=f"embedded:{model}", kind=kind, cutoff=CUTOFF)  # type: ignore[arg-type]


def served_target(model: str) -> TargetSettings:
    return TargetSettings(name="smol-served", model=f"local:{model}", backend="api", kind="instruct", cutoff=CUTOFF)


# -- the tracks -------------------------------------------------------------------------------------
async def run_local(work: Path, args: argparse.Namespace, *, target: TargetSettings, snap: SnapshotData) -> float:
    """The target's track in process, with the scorer the product gives it; its wall seconds."""
    from clkt.config import GpuSettings
    from clkt.incontext import InContextTrack, LocalAsker, incontext_scorer
    from clkt.targets.loader import cached_target
    from storage.engine import Store

    model, tok = await asyncio.to_thread(cached_target, target, data_dir=MODELS_DATA, device="cpu")
    asker = LocalAsker(model=model, tokenizer=tok, target=target, max_new_tokens=args.max_new_tokens, batch_size=8,
                       scorer=incontext_scorer(target, GpuSettings()))
    start = time.monotonic()
    async with Store(url=f"sqlite+aiosqlite:///{work / 'store.db'}") as store:
        await InContextTrack(store=store, snapshot=snap, target=target.name, asker=asker, context_langs=[args.train],
                             max_new_tokens=args.max_new_tokens).run()
    return time.monotonic() - start


async def run_served_child(args: argparse.Namespace) -> None:
    """The child: the served target's track (killed and restarted by the parent); prints its counts."""
    from clkt.config import AgentSettings
    from clkt.incontext import ApiAsker, InContextTrack
    from clkt.targets.api import ApiTargets
    from storage.engine import Store
    from storage.llm_cache import SqlCallCache

    work = Path(args.work)
    snap = load(work, args.n)
    provider = ProviderSettings(base_url=args.base_url, rpm=args.rpm, max_attempts=3, timeout_s=300,
                                max_in_flight=args.concurrency)
    agents = AgentSettings.model_validate({"providers": {"local": provider}})
    t = served_target(args.model)
    async with Store(url=f"sqlite+aiosqlite:///{work / 'store.db'}") as store:
        api = ApiTargets.build(agents=agents, secret=lambda _e: None, cache=SqlCallCache(store))
        asker = ApiAsker(api=api, target=t, max_new_tokens=args.max_new_tokens, concurrency=args.concurrency)
        counts = await InContextTrack(store=store, snapshot=snap, target=t.name, asker=asker,
                                      context_langs=[args.train], max_new_tokens=args.max_new_tokens).run()
    print(json.dumps({"child": {"asked": counts.asked, "already": counts.already, "unparsed": counts.unparsed}}))


# -- the rate-limiting proxy ------------------------------------------------------------------------
@dataclass
class Proxy:
    """A provider's request limit in front of the server (the fake OpenAI server's model: see the docstring)."""

    upstream: str  # http://127.0.0.1:<port>
    rpm: int
    ok: int = 0
    throttled: int = 0
    admit_times: list[float] = field(default_factory=list)
    bodies: dict[str, int] = field(default_factory=dict)  # sha256 of an answered body -> answers
    forwarding: int = 0  # requests sent on to the server and not yet answered
    _second: float = 0.0  # the second's bucket (a second of the limit, at least one request)
    _minute: float = 0.0  # the minute's bucket (the limit)
    _last: float = 0.0
    session: ClientSession | None = None

    @property
    def burst(self) -> float:
        return max(1.0, self.rpm / 60.0)

    def admit(self) -> float:
        """0 when both buckets hold a request (then taken), else the seconds until they would."""
        now = time.monotonic()
        dt, self._last = now - self._last, now
        rate = self.rpm / 60.0
        refill = max(rate, 1.0)  # a request a second at least: the limit enforced per second
        self._second = min(self.burst, self._second + dt * refill)
        self._minute = min(float(self.rpm), self._minute + dt * rate)
        if min(self._second, self._minute) >= 1.0:
            self._second -= 1.0
            self._minute -= 1.0
            self.admit_times.append(now)
            return 0.0
        return max((1.0 - self._second) / refill, (1.0 - self._minute) / rate)

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        if request.method == "POST":
            wait = self.admit()
            if wait > 0:
                self.throttled += 1
                return web.json_response({"error": {"message": "rate limited", "type": "requests"}}, status=429,
                                         headers={"Retry-After": f"{max(1, math.ceil(wait))}",
                                                  "retry-after-ms": f"{wait * 1000:.0f}"})
        assert self.session is not None
        self.forwarding += 1
        try:
            async with self.session.request(request.method, self.upstream + request.path_qs, data=raw or None,
                                            headers={"Content-Type": "application/json"}) as r:
                body = await r.read()
                if request.method == "POST" and r.status == 200:
                    self.ok += 1
                    h = hashlib.sha256(raw).hexdigest()
                    self.bodies[h] = self.bodies.get(h, 0) + 1
                return web.Response(body=body, status=r.status, content_type="application/json")
        finally:
            self.forwarding -= 1

    async def start(self, port: int) -> web.AppRunner:
        self.session = ClientSession(timeout=ClientTimeout(total=600))
        self._last = time.monotonic()
        self._second, self._minute = self.burst, float(self.rpm)  # full, as an idle account's
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        return runner


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(folder: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-c", "from transformers.cli.transformers import main; main()", "serve", str(folder),
           "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--log-level", "warning"]
    with log.open("wb") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


async def wait_ready(base: str, model: str, proc: subprocess.Popen[bytes], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    async with ClientSession() as s:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"transformers serve exited {proc.returncode}")
            with contextlib.suppress(Exception):
                async with s.get(f"{base}/v1/models") as r:
                    if any(m.get("id") == model for m in (await r.json()).get("data", [])):
                        return
            await asyncio.sleep(0.5)
    raise SystemExit("transformers serve not ready")


def calibration_prompts(snap: SnapshotData, train: str, k: int, max_new_tokens: int) -> list[str]:
    """`k` prompts of the served track (with the train-language document: its longest), in the track's order."""
    from clkt.incontext import DEFAULT_API_CONTEXT, build_prompt, estimate_tokens

    docs = {d.entity_id: d.text for d in snap.docs_for(train)}
    out: list[str] = []
    for lang in snap.languages:
        for row in snap.questions_for(lang, "test"):
            p = build_prompt(document=docs.get(row.entity_id), question=row.question, options=list(row.options),
                             lang=lang, cue=False, context_tokens=DEFAULT_API_CONTEXT, max_new_tokens=max_new_tokens,
                             count=estimate_tokens)
            if p.text is not None:
                out.append(p.text)
    return (out * (1 + k // max(1, len(out))))[:k]


async def calibrate(base: str, model: str, prompts: list[str], *, concurrency: int, max_new_tokens: int
                    ) -> dict[str, Any]:
    """The server's capacity in answers per minute at `concurrency` calls at once, unthrottled (one warm-up first)."""
    sem = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(s: ClientSession, prompt: str) -> None:
        body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_new_tokens,
                "temperature": 0.0}
        async with sem:
            t = time.monotonic()
            async with s.post(f"{base}/v1/chat/completions", json=body) as r:
                r.raise_for_status()
                await r.read()
            latencies.append(time.monotonic() - t)

    async with ClientSession(timeout=ClientTimeout(total=600)) as s:
        await one(s, prompts[0])  # the server loads the model on its first call
        latencies.clear()
        start = time.monotonic()
        await asyncio.gather(*(one(s, p) for p in prompts))
        wall = time.monotonic() - start
    return {"calibration_calls": len(prompts), "calibration_s": round(wall, 1),
            "median_latency_s": round(statistics.median(latencies), 2),
            "capacity_rpm": round(60.0 * len(prompts) / wall, 1)}


def child_cmd(args: argparse.Namespace, work: Path, base_url: str, model: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", "--work", str(work), "--base-url", base_url,
            "--model", model, "--n", str(args.n), "--rpm", str(args.rpm), "--train", args.train,
            "--max-new-tokens", str(args.max_new_tokens), "--concurrency", str(args.concurrency)]


def cached_calls(work: Path) -> int:
    with contextlib.closing(sqlite3.connect(work / "store.db")) as db:
        return int(db.execute("select count(*) from llm_call where stage = 'incontext'").fetchone()[0])


async def run_served(work: Path, args: argparse.Namespace, proxy: Proxy, base_url: str, model: str,
                     prompts: int) -> dict[str, Any]:
    """The served track in a child, SIGKILLed at `--kill-at` answered calls, then run again to the end."""
    cmd = child_cmd(args, work, base_url, model)
    first = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.PIPE)
    while proxy.ok < args.kill_at and first.returncode is None:  # noqa: ASYNC110 - polls the proxy's count
        await asyncio.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    await first.wait()
    # the calls in flight at the kill are answered by the server into a closed connection: the client never got
    # them (nothing cached), so asking them again repays nothing; they count before the restart, not after it
    deadline = time.monotonic() + 600
    while proxy.forwarding and time.monotonic() < deadline:  # noqa: ASYNC110 - polls the proxy's count
        await asyncio.sleep(0.05)
    in_cache, before, admitted_first = cached_calls(work), proxy.ok, len(proxy.admit_times)
    second = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.PIPE)
    out, _ = await second.communicate()
    after = proxy.ok - before
    # the rate over each child's admissions: n admissions span n-1 intervals of the limit
    spans = [proxy.admit_times[:admitted_first], proxy.admit_times[admitted_first:]]
    gaps = sum(len(t) - 1 for t in spans if len(t) > 1)
    active = sum(t[-1] - t[0] for t in spans if len(t) > 1)
    return {
        "killed_at": before, "cached_at_kill": in_cache, "after_restart": after,
        "repaid": after - (prompts - in_cache), "bodies_answered_twice": sum(v > 1 for v in proxy.bodies.values()),
        "achieved_rpm": round(60.0 * gaps / active, 2) if active > 0 else None,
        "child": out.decode().strip().splitlines()[-1:] if out else [],
    }


# -- the figures ----------------------------------------------------------------------------------------
async def answers(work: Path) -> dict[str, dict[tuple[int, str, str], Any]]:
    """The stored answers, per target: (qid, context language, language) -> row."""
    from storage.engine import Store
    from storage.incontext import incontext_answers

    sid = str(json.loads((work / "snapshot" / "manifest.json").read_text())["snapshot_id"])
    async with Store(url=f"sqlite+aiosqlite:///{work / 'store.db'}") as store, store.session() as s:
        rows = await incontext_answers(s, sid)
    by: dict[str, dict[tuple[int, str, str], Any]] = {}
    for r in rows:
        by.setdefault(r.target, {})[(r.qid, r.context_lang, r.lang)] = r
    return by


def doc_helps(rows: dict[tuple[int, str, str], Any], train: str) -> dict[str, Any]:
    """The train-language questions answered with the train-language document against without it (exact McNemar)."""
    from clkt.report.stats import mcnemar_exact
    from storage.incontext import NO_CONTEXT

    pairs = [(rows[(q, train, lang)].correct, rows[(q, NO_CONTEXT, lang)].correct)
             for (q, c, lang) in rows if c == train and lang == train and (q, NO_CONTEXT, lang) in rows]
    gained = sum(d and not f for d, f in pairs)
    lost = sum(f and not d for d, f in pairs)
    n = len(pairs)
    return {"n": n, "right_doc": sum(d for d, _ in pairs), "right_floor": sum(f for _, f in pairs),
            "acc_doc": round(sum(d for d, _ in pairs) / max(1, n), 4),
            "acc_floor": round(sum(f for _, f in pairs) / max(1, n), 4), "gained": gained, "lost": lost,
            "p": mcnemar_exact(gained, lost), "scorer": next(iter(rows.values())).scorer if rows else None}


def same_letters(loc: dict[tuple[int, str, str], Any], srv: dict[tuple[int, str, str], Any]) -> dict[str, Any]:
    common = sorted(set(loc) & set(srv))
    same = sum(loc[k].letter == srv[k].letter for k in common)
    return {"prompts_compared": len(common), "same_letters": round(same / max(1, len(common)), 4),
            "local_unparsed": sum(r.status == "unparsed" for r in loc.values()),
            "served_unparsed": sum(r.status == "unparsed" for r in srv.values())}


# -- the parts --------------------------------------------------------------------------------------------
async def part_a(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """gemma-3-270m in process: the document against the floor on the train language's test questions."""
    snap = load(work, args.questions, [args.train])
    seconds = await run_local(work, args, target=local_target("gemma-local", GEMMA, "base"), snap=snap)
    helps = doc_helps((await answers(work)).get("gemma-local", {}), args.train)
    return {"model": GEMMA, "seconds": round(seconds, 1), **helps}


async def part_b(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """SmolLM2 in process, then served behind the proxy (calibrated), killed and restarted."""
    from clkt.targets.embedded import EMBEDDED_MODELS, ensure_converted

    snap = load(work, args.n)
    prompts = sum(len(snap.questions_for(lang, "test")) for lang in snap.languages) * 2
    local_s = await run_local(work, args, target=local_target("smol-local", SMOL, "instruct"), snap=snap)
    folder = ensure_converted(EMBEDDED_MODELS[SMOL], MODELS_DATA / "models")
    sport, pport = free_port(), free_port()
    server = start_server(folder, sport, work / "serve.log")
    runner: web.AppRunner | None = None
    proxy: Proxy | None = None
    try:
        base = f"http://127.0.0.1:{sport}"
        await wait_ready(base, str(folder), server)
        calib = await calibrate(base, str(folder), calibration_prompts(snap, args.train, 2 * args.concurrency,
                                                                        args.max_new_tokens),
                                concurrency=args.concurrency, max_new_tokens=args.max_new_tokens)
        source = "given" if args.rpm else f"{args.rpm_fraction} x capacity"
        args.rpm = args.rpm or max(1, int(args.rpm_fraction * calib["capacity_rpm"]))
        if args.kill_at is None:
            args.kill_at = max(1, prompts // 3)
        proxy = Proxy(upstream=base, rpm=args.rpm)
        runner = await proxy.start(pport)
        start = time.monotonic()
        served = await run_served(work, args, proxy, f"http://127.0.0.1:{pport}/v1", str(folder), prompts)
        served_s = time.monotonic() - start
    finally:
        if runner is not None:
            await runner.cleanup()
        if proxy is not None and proxy.session is not None:
            await proxy.session.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
    by = await answers(work)
    ratio = (served["achieved_rpm"] or 0.0) / args.rpm
    return {"model": SMOL, "n_questions": args.n, "prompts_per_way": prompts, "concurrency": args.concurrency,
            **calib, "rpm": args.rpm, "rpm_source": source, "kill_at": args.kill_at, "local_s": round(local_s, 1),
            "served_s": round(served_s, 1), "throttled_429": proxy.throttled, "rpm_ratio": round(ratio, 3),
            **served, **same_letters(by.get("smol-local", {}), by.get("smol-served", {})),
            "served_doc_helps": doc_helps(by.get("smol-served", {}), args.train)}


GOALS = {"same_letters": ">= 0.98", "rpm_ratio": ">= 0.95", "throttled_429": "== 0", "repaid": "== 0",
         "p_doc_helps": "< 0.01", "acc_doc": "> acc_floor"}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    snapshot = find_snapshot(args.snapshot, args.demo)
    work = Path(args.work or tempfile.mkdtemp(prefix="clkt-bench-incontext-"))
    if (work / "snapshot").exists():  # a previous run of the bench there
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    shutil.copytree(snapshot, work / "snapshot")
    started = time.monotonic()
    a = await part_a(work, args) if "a" in args.parts else None
    b = await part_b(work, args) if "b" in args.parts else None
    met: dict[str, bool] = {}
    if b is not None:
        met |= {"same_letters": b["same_letters"] >= 0.98, "rpm_ratio": b["rpm_ratio"] >= 0.95,
                "throttled_429": b["throttled_429"] == 0, "repaid": b["repaid"] == 0}
    if a is not None:
        met |= {"p_doc_helps": a["p"] < 0.01, "acc_doc": a["acc_doc"] > a["acc_floor"]}
    figures = {"snapshot": str(snapshot), "train": args.train, "max_new_tokens": args.max_new_tokens,
               "wall_s": round(time.monotonic() - started, 1), "part_a_doc_helps": a, "part_b_server": b,
               "goals_met": met}
    goals = {k: v for k, v in GOALS.items() if k in met}
    return {"bench": "incontext", "figures": figures, "goals": goals, "met": all(met.values()) and len(met) == 6}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--demo", default=None, help="a finished `clkt demo` folder: its one frozen snapshot")
    ap.add_argument("--snapshot", default=None, help="a frozen snapshot's directory (instead of --demo)")
    ap.add_argument("--questions", type=int, default=None, help="part A: the first N test questions (default: all)")
    ap.add_argument("--n", type=int, default=12, help="part B: test questions (each in every language)")
    ap.add_argument("--rpm", type=int, default=None, help="part B: the proxy's limit (default: calibrated)")
    ap.add_argument("--rpm-fraction", type=float, default=0.6, help="the limit as a share of the measured capacity")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--train", default="en")
    ap.add_argument("--parts", default="ab", help="a, b or ab")
    ap.add_argument("--kill-at", type=int, default=None, help="answered calls before the SIGKILL (default: a third)")
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", default=None, help="also write the JSON line here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--base-url", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--model", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


if __name__ == "__main__":
    parsed = parse()
    if parsed.child:
        asyncio.run(run_served_child(parsed))
        sys.exit(0)
    line = json.dumps(asyncio.run(main(parsed)))
    print(line)
    if parsed.out:
        Path(parsed.out).parent.mkdir(parents=True, exist_ok=True)
        Path(parsed.out).write_text(line + "\n", encoding="utf-8")
