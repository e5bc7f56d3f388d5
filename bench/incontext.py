"""Bench: the in-context track (issue 32) on the demo snapshot, the embedded instruct target (SmolLM2 135M) two ways.

1. In process: `LocalAsker` (the generate scorer, through the target's chat template) over a copy of the snapshot,
   cut to the first `--n` test questions (every language has each question).
2. As an API target (`backend = "api"`, provider `local`) served by `transformers serve` on loopback, behind the
   bench's own rate-limiting proxy (a token bucket of `--rpm`, a second's worth at once, 429 + Retry-After beyond,
   as the fake OpenAI server limits). The served track runs in a child process, which is killed with SIGKILL once
   `--kill-at` of its calls are answered, then started again to finish.

Goals (the JSON line's `ok_*`): the two ways give the same letter on >= 98 % of the prompts; through the proxy the
achieved rate is >= 0.95 of the configured RPM with 0 x 429 (`rpm_ratio`: answered calls per minute over the
children's active spans, the restart's start-up excluded); the restart repays 0 answered calls (`repaid`: calls the
proxy answered after the restart minus the prompts whose answer was not in the call cache at the kill); in-context
accuracy in the train language above the no-context floor with exact McNemar p < 0.01 (served answers; train-
language questions, `p_train`; the questions of every language with the train-language document, `p_all`, beside).

    .venv/bin/python bench/incontext.py [--n 12] [--rpm 30] [--max-new-tokens 8] [--work DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import sqlite3
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

SNAPSHOT = Path("/tmp/demo1/snapshots/demo/2026-12-02")
MODELS_DATA = Path(os.environ.get("CLKT_TEST_MODELS_DIR") or Path(tempfile.gettempdir()) / "clkt-test-data")
EMBEDDED = "embedded:smollm2-135m-instruct"


def subset(snap: SnapshotData, n: int) -> SnapshotData:
    """The snapshot cut to its first `n` test questions (by id, in every language)."""
    first = snap.languages[0]
    keep = {r.qid for r in snap.questions_for(first, "test")[:n]}
    qs = {lang: [r for r in rows if r.split == "test" and r.qid in keep] for lang, rows in snap.questions.items()}
    return snap.model_copy(update={"questions": qs})


def load(work: Path, n: int) -> SnapshotData:
    return subset(load_snapshot_dir(work / "snapshot", verify_hashes=False), n)


def local_target() -> TargetSettings:
    return TargetSettings(name="smol-local", model=EMBEDDED, kind="instruct", cutoff=date(2024, 11, 1))


def served_target(model: str) -> TargetSettings:
    return TargetSettings(name="smol-served", model=f"local:{model}", backend="api", kind="instruct",
                          cutoff=date(2024, 11, 1))


# -- the tracks -------------------------------------------------------------------------------------
async def run_local(work: Path, args: argparse.Namespace) -> float:
    from clkt.incontext import InContextTrack, LocalAsker
    from clkt.targets.loader import cached_target
    from storage.engine import Store

    snap = load(work, args.n)
    t = local_target()
    model, tok = await asyncio.to_thread(cached_target, t, data_dir=MODELS_DATA, device="cpu")
    asker = LocalAsker(model=model, tokenizer=tok, target=t, max_new_tokens=args.max_new_tokens, batch_size=8)
    start = time.monotonic()
    async with Store(url=f"sqlite+aiosqlite:///{work / 'store.db'}") as store:
        await InContextTrack(store=store, snapshot=snap, target=t.name, asker=asker, context_langs=[args.train],
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
    upstream: str  # http://127.0.0.1:<port>
    rpm: int
    ok: int = 0
    throttled: int = 0
    ok_times: list[float] = field(default_factory=list)
    bodies: dict[str, int] = field(default_factory=dict)  # sha256 of an answered body -> answers
    _level: float = 0.0
    _last: float = 0.0
    session: ClientSession | None = None

    def admit(self) -> float:
        """0 when the bucket (a second of the limit, refilled at rpm/60 per second) holds a request, else the wait."""
        now = time.monotonic()
        burst = max(1.0, self.rpm / 60.0)
        self._level = min(burst, self._level + (now - self._last) * self.rpm / 60.0)
        self._last = now
        if self._level >= 1.0:
            self._level -= 1.0
            return 0.0
        return (1.0 - self._level) / (self.rpm / 60.0)

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        if request.method == "POST":
            wait = self.admit()
            if wait > 0:
                self.throttled += 1
                return web.json_response({"error": {"message": "rate limited", "type": "requests"}}, status=429,
                                         headers={"Retry-After": f"{max(1, round(wait))}"})
        assert self.session is not None
        async with self.session.request(request.method, self.upstream + request.path_qs, data=raw or None,
                                        headers={"Content-Type": "application/json"}) as r:
            body = await r.read()
            if request.method == "POST" and r.status == 200:
                self.ok += 1
                self.ok_times.append(time.monotonic())
                h = hashlib.sha256(raw).hexdigest()
                self.bodies[h] = self.bodies.get(h, 0) + 1
            return web.Response(body=body, status=r.status, content_type="application/json")

    async def start(self, port: int) -> web.AppRunner:
        self.session = ClientSession(timeout=ClientTimeout(total=600))
        self._last = time.monotonic()
        self._level = max(1.0, self.rpm / 60.0)  # full, as an idle account's
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
    spans: list[tuple[int, float, float]] = []  # (answered calls, first answer, last answer) per child
    first = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.PIPE)
    while proxy.ok < args.kill_at and first.returncode is None:  # noqa: ASYNC110 - polls the proxy's count
        await asyncio.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    await first.wait()
    spans.append((proxy.ok, proxy.ok_times[0], proxy.ok_times[-1]))
    in_cache, before = cached_calls(work), proxy.ok
    second = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.PIPE)
    out, _ = await second.communicate()
    after = proxy.ok - before
    if after:
        spans.append((after, proxy.ok_times[before], proxy.ok_times[-1]))
    # a rate over each child's answers: n answers span n-1 gaps of the limit
    gaps = sum(n - 1 for n, _, _ in spans)
    active = sum(b - a for _, a, b in spans)
    return {
        "killed_at": before, "cached_at_kill": in_cache, "after_restart": after,
        "repaid": after - (prompts - in_cache), "bodies_answered_twice": sum(v > 1 for v in proxy.bodies.values()),
        "achieved_rpm": round(60.0 * gaps / active, 2) if active > 0 else None,
        "child": out.decode().strip().splitlines()[-1:] if out else [],
    }


async def compare(work: Path, train: str) -> dict[str, Any]:
    from clkt.report.stats import mcnemar_exact
    from storage.engine import Store
    from storage.incontext import NO_CONTEXT, incontext_answers

    async with Store(url=f"sqlite+aiosqlite:///{work / 'store.db'}") as store, store.session() as s:
        rows = await incontext_answers(s, (await _sid(work)))
    by: dict[str, dict[tuple[int, str, str], Any]] = {}
    for r in rows:
        by.setdefault(r.target, {})[(r.qid, r.context_lang, r.lang)] = r
    loc, srv = by.get("smol-local", {}), by.get("smol-served", {})
    common = sorted(set(loc) & set(srv))
    same = sum(loc[k].letter == srv[k].letter for k in common)

    def test(langs: set[str]) -> tuple[int, int, float, float, float]:
        pairs = [(srv[(q, train, lang)].correct, srv[(q, NO_CONTEXT, lang)].correct)
                 for (q, c, lang) in srv if c == train and lang in langs and (q, NO_CONTEXT, lang) in srv]
        gained = sum(d and not f for d, f in pairs)
        lost = sum(f and not d for d, f in pairs)
        n = max(1, len(pairs))
        return gained, lost, mcnemar_exact(gained, lost), sum(d for d, _ in pairs) / n, sum(f for _, f in pairs) / n

    g, lo, p_train, acc_doc, acc_floor = test({train})
    _, _, p_all, acc_doc_all, acc_floor_all = test({lang for (_, _, lang) in srv})
    return {"prompts_compared": len(common), "same_letters": round(same / max(1, len(common)), 4),
            "train_gained": g, "train_lost": lo, "p_train": p_train, "acc_doc_train": round(acc_doc, 4),
            "acc_floor_train": round(acc_floor, 4), "p_all": p_all, "acc_doc_all": round(acc_doc_all, 4),
            "acc_floor_all": round(acc_floor_all, 4),
            "local_unparsed": sum(r.status == "unparsed" for r in loc.values()),
            "served_unparsed": sum(r.status == "unparsed" for r in srv.values())}


async def _sid(work: Path) -> str:
    return str(json.loads((work / "snapshot" / "manifest.json").read_text())["snapshot_id"])


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from clkt.targets.embedded import EMBEDDED_MODELS, ensure_converted

    work = Path(args.work or tempfile.mkdtemp(prefix="clkt-bench-incontext-"))
    if (work / "snapshot").exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    shutil.copytree(SNAPSHOT, work / "snapshot")
    snap = load(work, args.n)
    prompts = sum(len(snap.questions_for(lang, "test")) for lang in snap.languages) * 2
    local_s = await run_local(work, args)
    folder = ensure_converted(EMBEDDED_MODELS["smollm2-135m-instruct"], MODELS_DATA / "models")
    sport, pport = free_port(), free_port()
    server = start_server(folder, sport, work / "serve.log")
    proxy = Proxy(upstream=f"http://127.0.0.1:{sport}", rpm=args.rpm)
    runner = await proxy.start(pport)
    try:
        await wait_ready(f"http://127.0.0.1:{sport}", str(folder), server)
        start = time.monotonic()
        served = await run_served(work, args, proxy, f"http://127.0.0.1:{pport}/v1", str(folder), prompts)
        served_s = time.monotonic() - start
    finally:
        await runner.cleanup()
        if proxy.session is not None:
            await proxy.session.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
    cmp_ = await compare(work, args.train)
    ratio = (served["achieved_rpm"] or 0.0) / args.rpm
    figures = {"n_questions": args.n, "prompts_per_target": prompts, "train": args.train, "rpm": args.rpm,
               "concurrency": args.concurrency, "max_new_tokens": args.max_new_tokens, "local_s": round(local_s, 1),
               "served_s": round(served_s, 1), "throttled_429": proxy.throttled, "rpm_ratio": round(ratio, 3),
               **served, **cmp_}
    goals = {"same_letters": ">= 0.98", "rpm_ratio": ">= 0.95", "throttled_429": "== 0", "repaid": "== 0",
             "p_train": "< 0.01", "acc_doc_train": "> acc_floor_train"}
    met = {"same_letters": cmp_["same_letters"] >= 0.98, "rpm_ratio": ratio >= 0.95,
           "throttled_429": proxy.throttled == 0, "repaid": served["repaid"] == 0, "p_train": cmp_["p_train"] < 0.01,
           "acc_doc_train": cmp_["acc_doc_train"] > cmp_["acc_floor_train"]}
    return {"bench": "incontext", "figures": {**figures, "goals_met": met}, "goals": goals, "met": all(met.values())}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=12, help="test questions (each in every language)")
    ap.add_argument("--rpm", type=int, default=30)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--train", default="en")
    ap.add_argument("--kill-at", type=int, default=None, help="answered calls before the SIGKILL (default: a third)")
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", default=None, help="also write the JSON line here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--base-url", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--model", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


if __name__ == "__main__":
    a = parse()
    if a.child:
        asyncio.run(run_served_child(a))
        sys.exit(0)
    if a.kill_at is None:
        a.kill_at = max(1, a.n * 10 // 3)  # a third of the prompts (n questions x 5 languages x 2)
    line = json.dumps(asyncio.run(main(a)))
    print(line)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(line + "\n", encoding="utf-8")
