"""A fake OpenAI-compatible server on 127.0.0.1 (aiohttp): scripted replies, 429 with Retry-After, 500s,
slow replies, a hard RPM limit with a latency distribution, and counters.

Routes: `POST /v1/chat/completions` (tool-call answers for the agents, text for chat probes),
`POST /v1/completions` (base-model probes), `GET /stats`, `POST /script` (append scripted replies),
`POST /reset`. A scripted reply is a JSON object: `{"status": 429, "retry_after": 1}`, `{"status": 500}`,
`{"delay_s": 3}` (then the default answer), `{"args": {...}}` (the tool arguments to return) or
`{"text": "..."}`. Without a script the answer comes from `tests.fakes.llm_responder` (valid for every
agent role). A model or server without tool calling: `json_in_text` (prose to a request with tools, the answer's JSON as
text to one with its schema written in the prompt), `refuse_tools` (a 400 to any request with tools). `record_requests` keeps
every request body.

Limits, modelled on what OpenAI and Anthropic document: a per-minute limit is a token bucket that holds
the minute's limit and refills continuously at limit/60 per second (Anthropic: "continuously replenished
up to your maximum limit"; OpenAI's `x-ratelimit-reset-*` is the time until the bucket is full again), and
it may also be enforced over a shorter interval (both give the example of a minute's limit enforced per
second): a second bucket holding `burst` requests (default: one second of the limit, at least one request)
or `token_burst_s` seconds of TPM, refilled at the same rate; under 60 RPM the default bucket of one request
refills in a second (the minute's limit enforced per second admits one request in any second; neither provider
documents a shorter interval, nor that a limit under 60 RPM is enforced as one request per interval). A
request is admitted when both buckets hold its cost: 1 for requests, its prompt tokens + `max_tokens` for
tokens. Otherwise it gets 429 with `Retry-After` (whole seconds) and `retry-after-ms` (the exact wait), as OpenAI sends them. With `rate_headers`, every answer
carries OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`: the minute's limit, what its
bucket holds after this request, and the time until it is full (the short interval is not reported, as
neither provider reports it).

Standalone: `python -m tests.fakes.openai_server --port 8099 --rpm 600 --latency-ms 200`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.llm_responder import respond, role_of_schema

__all__ = ["FakeOpenAI", "ServerStats"]


def _schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The output schema a chat request writes in one of its messages (pydantic-ai's prompted output puts it in the
    instructions), if any."""
    decoder = json.JSONDecoder()
    for m in body.get("messages", []):
        text = m.get("content")
        if not isinstance(text, str):
            continue
        for i, ch in enumerate(text):
            if ch != "{":
                continue
            try:
                obj, _ = decoder.raw_decode(text, i)
            except ValueError:
                continue
            if isinstance(obj, dict) and "properties" in obj:
                return obj
    return None

_RATE_HEADERS = web.RequestKey("rate_headers", dict)  # an admitted request's x-ratelimit-* headers


@dataclass
class ServerStats:
    calls: int = 0
    ok: int = 0
    status: dict[int, int] = field(default_factory=dict)
    in_flight: int = 0
    max_in_flight: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_admitted: int = 0  # the TPM bucket's count of admitted requests
    times: list[float] = field(default_factory=list)  # monotonic arrival time of every request
    ok_times: list[float] = field(default_factory=list)
    admit_times: list[float] = field(default_factory=list)  # when each request the limits admitted arrived
    bodies: Counter[str] = field(default_factory=Counter)  # sha256 of each request body -> times seen
    requests: list[dict[str, Any]] = field(default_factory=list)  # every request body, parsed (`record_requests`)

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls, "ok": self.ok, "status": {str(k): v for k, v in self.status.items()},
            "max_in_flight": self.max_in_flight, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "tokens_admitted": self.tokens_admitted,
            "times": self.times, "ok_times": self.ok_times, "admit_times": self.admit_times,
            "repeated_requests": sum(n - 1 for n in self.bodies.values() if n > 1),
        }


class FakeOpenAI:
    # at close, a request still in its handler (a scripted slow reply the client gave up on) is cancelled after
    # this long instead of aiohttp's 60 s of grace: a test's teardown does not wait out a reply nobody reads
    SHUTDOWN_TIMEOUT_S = 0.1

    def __init__(
        self,
        *,
        rpm: float | None = None,
        burst: float | None = None,
        latency_ms: float = 0.0,
        latency_sigma: float = 0.5,
        retry_after_s: float = 1.0,
        seed: int = 0,
        tpm: float | None = None,
        token_burst_s: float = 1.0,
        rate_headers: bool = False,
        prefix_cache_min_tokens: int | None = None,
        record_requests: bool = False,
        json_in_text: bool = False,
        refuse_tools: bool = False,
    ) -> None:
        self.record_requests = record_requests  # keep every request body in `stats.requests`
        # a model without tool calling: the answer's JSON written as text (tool or schema in the prompt alike)
        self.json_in_text = json_in_text
        self.refuse_tools = refuse_tools  # a server without tool calling: a request with tools gets a 400
        # with it: usage counts the prompt's text (~4 characters a token) and reports the longest prefix shared
        # with an earlier prompt as cached (prompt_tokens_details.cached_tokens), as the batch fake does
        self.prefix_cache_min_tokens = prefix_cache_min_tokens
        self._prompts: list[str] = []
        self.rpm = rpm
        self.tpm = tpm
        self.token_burst = (tpm / 60.0 * token_burst_s) if tpm else 0.0
        self._token_level = self.token_burst
        self._minute_tokens = float(tpm or 0.0)  # the per-minute buckets start full, as for an idle account
        self._minute_requests = float(rpm or 0.0)
        self.rate_headers = rate_headers
        self.burst = burst if burst is not None else (max(1.0, rpm / 60.0) if rpm else 1.0)
        # the short bucket's refill: the limit's rate; by default at least a request a second (under 60 RPM)
        self._burst_refill = (rpm or 0.0) / 60.0 if burst is not None else max((rpm or 0.0) / 60.0, 1.0)
        self.latency_ms = latency_ms
        self.latency_sigma = latency_sigma
        self.retry_after_s = retry_after_s
        self.script: list[dict[str, Any]] = []
        self.stats = ServerStats()
        self._rng = random.Random(seed)
        self._tokens = self.burst
        self._last = time.monotonic()
        self.app = web.Application()
        self.app.router.add_post("/v1/chat/completions", self._chat)
        self.app.router.add_post("/v1/completions", self._completions)
        self.app.router.add_get("/stats", self._stats)
        self.app.router.add_post("/script", self._script)
        self.app.router.add_post("/reset", self._reset)
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self, port: int = 0) -> str:
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=self.SHUTDOWN_TIMEOUT_S)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- limits ---------------------------------------------------------------------------------
    def _admit(self, cost: int) -> float:
        """0.0 when admitted (both buckets debited), else the seconds until it would be."""
        now = time.monotonic()
        dt, self._last = now - self._last, now
        if self.rpm:
            self._tokens = min(self.burst, self._tokens + dt * self._burst_refill)
            self._minute_requests = min(self.rpm, self._minute_requests + dt * self.rpm / 60.0)
        if self.tpm:
            self._token_level = min(self.token_burst, self._token_level + dt * self.tpm / 60.0)
            self._minute_tokens = min(self.tpm, self._minute_tokens + dt * self.tpm / 60.0)
        wait = 0.0
        if self.rpm and min(self._tokens, self._minute_requests) < 1.0:
            wait = max((1.0 - self._tokens) / self._burst_refill, (1.0 - self._minute_requests) / (self.rpm / 60.0))
        if self.tpm:
            cost = min(cost, int(self.token_burst))  # a request larger than the bucket waits for a full one
            if (level := min(self._token_level, self._minute_tokens)) < cost:
                wait = max(wait, (cost - level) / (self.tpm / 60.0))
        if wait > 0:
            return wait
        if self.rpm:
            self._tokens -= 1.0
            self._minute_requests -= 1.0
        if self.tpm:
            self._token_level -= cost
            self._minute_tokens -= cost
        self.stats.tokens_admitted += cost
        return 0.0

    def _rate_headers(self) -> dict[str, str]:
        if not self.rate_headers:
            return {}
        h: dict[str, str] = {}
        if self.rpm:
            h["x-ratelimit-limit-requests"] = f"{self.rpm:.0f}"
            h["x-ratelimit-remaining-requests"] = f"{max(0, int(self._minute_requests))}"
            h["x-ratelimit-reset-requests"] = f"{(self.rpm - self._minute_requests) / (self.rpm / 60.0) * 1000:.0f}ms"
        if self.tpm:
            h["x-ratelimit-limit-tokens"] = f"{self.tpm:.0f}"
            h["x-ratelimit-remaining-tokens"] = f"{max(0, int(self._minute_tokens))}"
            h["x-ratelimit-reset-tokens"] = f"{(self.tpm - self._minute_tokens) / (self.tpm / 60.0) * 1000:.0f}ms"
        return h

    def _latency(self) -> float:
        if self.latency_ms <= 0:
            return 0.0
        mu = math.log(self.latency_ms / 1000) - self.latency_sigma**2 / 2  # mean = latency_ms
        return self._rng.lognormvariate(mu, self.latency_sigma)

    # -- handlers -------------------------------------------------------------------------------
    async def _common(self, request: web.Request) -> tuple[dict[str, Any], dict[str, Any] | None, web.Response | None]:
        raw = await request.read()
        body = json.loads(raw)
        st = self.stats
        st.calls += 1
        st.bodies[hashlib.sha256(raw).hexdigest()] += 1
        if self.record_requests:
            st.requests.append(body)
        if self.refuse_tools and body.get("tools"):
            st.status[400] = st.status.get(400, 0) + 1
            err = {"error": {"message": '"auto" tool choice requires --enable-auto-tool-choice to be set',
                             "type": "BadRequestError", "code": 400}}
            return body, None, web.json_response(err, status=400)
        st.times.append(time.monotonic())
        step = self.script.pop(0) if self.script else None
        if step and step.get("status"):
            code = int(step["status"])
            st.status[code] = st.status.get(code, 0) + 1
            headers = {"Retry-After": str(step["retry_after"])} if "retry_after" in step else {}
            err = {"error": {"message": f"scripted {code}", "type": "rate_limit_exceeded" if code == 429 else "server_error",
                             "code": "rate_limit_exceeded" if code == 429 else None}}
            return body, step, web.json_response(err, status=code, headers=headers)
        cost = self._prompt_tokens(body) + int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        wait = self._admit(cost)
        if wait > 0:
            st.status[429] = st.status.get(429, 0) + 1
            err = {"error": {"message": "Rate limit reached for requests", "type": "requests",
                             "code": "rate_limit_exceeded"}}
            headers = {"Retry-After": f"{self.retry_after_s:g}", **self._rate_headers()}
            if self.rate_headers:
                headers["retry-after-ms"] = f"{wait * 1000:.0f}"
            return body, step, web.json_response(err, status=429, headers=headers)
        request[_RATE_HEADERS] = self._rate_headers()  # the buckets as this request left them
        st.admit_times.append(st.times[-1])
        return body, step, None

    @staticmethod
    def _prompt_tokens(body: dict[str, Any]) -> int:
        """The fake's token count of a request: ~4 characters of its messages (or prompt) per token."""
        if "messages" in body:
            return max(1, len(json.dumps(body["messages"], ensure_ascii=False)) // 4)
        return max(1, len(str(body.get("prompt", ""))) // 4)

    async def _chat(self, request: web.Request) -> web.Response:
        body, step, early = await self._common(request)
        if early is not None:
            return early
        st = self.stats
        st.in_flight += 1
        st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            # the fake's configured latency (scripted, or drawn from its distribution), not a wait
            await asyncio.sleep(float(step.get("delay_s", 0)) if step else self._latency())
            prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "user")
            tools = body.get("tools") or []
            message: dict[str, Any]
            if step and "text" in step:
                message, finish = {"role": "assistant", "content": step["text"]}, "stop"
            elif self.json_in_text and tools:  # a model without tool calling ignores the tools: prose
                message, finish = {"role": "assistant", "content": "The response seems to know the match."}, "stop"
            elif self.json_in_text and (schema := _schema_of(body)) is not None:  # the schema in the prompt: JSON
                args = respond(role_of_schema(schema.get("properties", {})), prompt)
                message, finish = {"role": "assistant", "content": json.dumps(args, ensure_ascii=False)}, "stop"
            elif tools:
                fn = tools[0]["function"]
                args = step["args"] if step and "args" in step else respond(
                    role_of_schema(fn["parameters"].get("properties", {})), prompt
                )
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"call_{st.calls}", "type": "function",
                     "function": {"name": fn["name"], "arguments": json.dumps(args, ensure_ascii=False)}}
                ]}
                finish = "tool_calls"
            else:
                message, finish = {"role": "assistant", "content": "I have no information about that."}, "stop"
            completion = json.dumps(message, ensure_ascii=False)
            if self.prefix_cache_min_tokens is not None:  # count what the model wrote, as the batch fake does
                calls = message.get("tool_calls") or []
                written = calls[0]["function"]["arguments"] if calls else str(message.get("content") or "")
                usage = self._cached_usage(body, written)
            else:
                usage = self._usage(json.dumps(body.get("messages", []), ensure_ascii=False), completion)
            st.ok += 1
            st.ok_times.append(time.monotonic())
            st.status[200] = st.status.get(200, 0) + 1
            return web.json_response({
                "id": f"chatcmpl-{st.calls}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
            }, headers=request.get(_RATE_HEADERS) or {})
        finally:
            st.in_flight -= 1

    async def _completions(self, request: web.Request) -> web.Response:
        body, step, early = await self._common(request)
        if early is not None:
            return early
        await asyncio.sleep(float(step.get("delay_s", 0)) if step else self._latency())  # its latency, not a wait
        text = step["text"] if step and "text" in step else " I have no information about that."
        self.stats.ok += 1
        self.stats.status[200] = self.stats.status.get(200, 0) + 1
        return web.json_response({
            "id": f"cmpl-{self.stats.calls}", "object": "text_completion", "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
            "usage": self._usage(str(body.get("prompt", "")), text),
        })

    def _usage(self, prompt: str, completion: str) -> dict[str, int]:
        p, c = max(1, len(prompt) // 4), max(1, len(completion) // 4)
        self.stats.prompt_tokens += p
        self.stats.completion_tokens += c
        return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}

    def _cached_usage(self, body: dict[str, Any], completion: str) -> dict[str, Any]:
        from tests.fakes.batch_server import prompt_text, shared_prefix_tokens

        text = prompt_text([m.get("content") for m in body.get("messages", [])])
        cached = shared_prefix_tokens(text, self._prompts, self.prefix_cache_min_tokens or 0)
        self._prompts.append(text)
        u: dict[str, Any] = self._usage(text, completion)
        u["prompt_tokens_details"] = {"cached_tokens": min(cached, u["prompt_tokens"])}
        return u

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats.as_dict())

    async def _script(self, request: web.Request) -> web.Response:
        steps = await request.json()
        self.script.extend(steps if isinstance(steps, list) else [steps])
        return web.json_response({"queued": len(self.script)})

    async def _reset(self, request: web.Request) -> web.Response:
        self.script.clear()
        self.stats = ServerStats()
        return web.json_response({"ok": True})


async def _serve(args: argparse.Namespace) -> None:
    server = FakeOpenAI(rpm=args.rpm, burst=args.burst, tpm=args.tpm, token_burst_s=args.token_burst_s,
                        latency_ms=args.latency_ms,
                        retry_after_s=args.retry_after, rate_headers=args.rate_headers)
    url = await server.start(args.port)
    print(json.dumps({"base_url": url}), flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--rpm", type=float, default=None)
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--retry-after", type=float, default=1.0)
    ap.add_argument("--burst", type=float, default=None)
    ap.add_argument("--tpm", type=float, default=None)
    ap.add_argument("--token-burst-s", type=float, default=1.0)
    ap.add_argument("--rate-headers", action="store_true")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(ap.parse_args()))


if __name__ == "__main__":
    main()
