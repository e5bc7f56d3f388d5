"""Fake OpenAI Batch API and Anthropic Message Batches on 127.0.0.1 (aiohttp), with their life cycle.

OpenAI: `POST /v1/files` (multipart, purpose=batch), `GET /v1/files/{id}/content`, `DELETE /v1/files/{id}`,
`POST /v1/batches` (input_file_id, endpoint `/v1/responses`, metadata), `GET /v1/batches` (list, newest
first), `GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`. Results are Responses API objects (a function
call answering the output tool) in an output file; errored lines in an error file.
Anthropic: `POST /v1/messages/batches`, `GET /v1/messages/batches` (list), `GET /v1/messages/batches/{id}`,
`GET /v1/messages/batches/{id}/results` (JSONL), `POST /v1/messages/batches/{id}/cancel`.

Life cycle: a batch is `in_progress` for `polls_to_end` status reads, then ends. `plan` (a list consumed one
per created batch) makes a batch end otherwise: `{"expire_after": k}` runs k requests then expires,
`{"error_ids": n}` answers the first n requests with a 500 error line (partial failure), `{"cancel": true}`
cancels it, `{"refuse": true}` answers the create with a 400 (no batch), `{"invalid": n}` answers the first n requests with tool arguments that fail validation.
Answers come from `tests.fakes.llm_responder` (valid for every agent role); an OpenAI request without an output tool (an
API target's prompt) is answered in text by `text_reply`. Usage: prompt tokens ~ 4
characters of the prompt's text (instructions/system and messages) per token; the longest prefix of a request shared with an earlier request of the same model
(in 4-character tokens, at least `cache_min_tokens`) is reported as cached input, as providers' prefix
caches do.

Counters (`stats`): batches created, each custom_id's submissions, requests run, tokens.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.llm_responder import respond, role_of_schema

__all__ = ["BatchServerStats", "FakeBatchProvider", "prompt_text", "shared_prefix_tokens"]


def prompt_text(contents: list[Any]) -> str:
    """The text of a prompt's parts (strings, or lists of text blocks), as the fakes count its tokens."""
    out: list[str] = []
    for c in contents:
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out.extend(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return "\n".join(out)


def shared_prefix_tokens(text: str, earlier: list[str], min_tokens: int) -> int:
    """The longest prefix (in ~4-character tokens) `text` shares with an earlier prompt; 0 under `min_tokens`."""
    best = 0
    for e in earlier:
        n = 0
        for a, b in zip(e, text, strict=False):  # the common prefix: the shorter one ends it
            if a != b:
                break
            n += 1
        best = max(best, n // 4)
    return best if best >= min_tokens else 0


@dataclass
class BatchServerStats:
    batches_created: int = 0
    submissions: Counter[str] = field(default_factory=Counter)  # custom_id -> batches it was sent in
    runs: Counter[str] = field(default_factory=Counter)  # custom_id -> times the model answered it
    status_polls: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    creates_received: int = 0  # create calls (including ones the client never saw answered)

    @property
    def resubmitted(self) -> int:
        """Requests the model answered more than once (paid twice)."""
        return sum(n - 1 for n in self.runs.values() if n > 1)


@dataclass
class _Batch:
    id: str
    kind: str  # openai | anthropic
    requests: list[dict[str, Any]]
    created_at: float
    metadata: dict[str, str] | None
    input_file_id: str | None
    plan: dict[str, Any]
    polls: int = 0
    status: str = "in_progress"
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # custom_id -> result
    output_file_id: str | None = None
    error_file_id: str | None = None


class FakeBatchProvider:
    # at close, a request still in its handler (a scripted slow reply the client gave up on) is cancelled after
    # this long instead of aiohttp's 60 s of grace: a test's teardown does not wait out a reply nobody reads
    SHUTDOWN_TIMEOUT_S = 0.1

    def __init__(self, *, polls_to_end: int = 1, cache_min_tokens: int = 64, create_delay_s: float = 0.0) -> None:
        self.polls_to_end = polls_to_end
        self.cache_min_tokens = cache_min_tokens
        self.create_delay_s = create_delay_s  # a slow create: lets a test kill the client mid-submission
        self.plan: list[dict[str, Any]] = []
        # a request without an output tool (an API target's plain prompt) is answered in text: this, of its prompt
        self.text_reply: Callable[[str], str] = lambda _prompt: "A"
        self.stats = BatchServerStats()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self._prefixes: dict[str, list[str]] = {}  # model -> earlier prompts (prefix cache)
        app = web.Application(client_max_size=256 * 1024 * 1024)
        r = app.router
        r.add_post("/v1/files", self._file_create)
        r.add_get("/v1/files/{id}/content", self._file_content)
        r.add_delete("/v1/files/{id}", self._file_delete)
        r.add_post("/v1/batches", self._openai_create)
        r.add_get("/v1/batches", self._openai_list)
        r.add_get("/v1/batches/{id}", self._openai_get)
        r.add_post("/v1/batches/{id}/cancel", self._openai_cancel)
        r.add_post("/v1/messages/batches", self._anthropic_create)
        r.add_get("/v1/messages/batches", self._anthropic_list)
        r.add_get("/v1/messages/batches/{id}", self._anthropic_get)
        r.add_get("/v1/messages/batches/{id}/results", self._anthropic_results)
        r.add_post("/v1/messages/batches/{id}/cancel", self._anthropic_cancel)
        self.app = app
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def __aenter__(self) -> FakeBatchProvider:
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=self.SHUTDOWN_TIMEOUT_S)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- the model ----------------------------------------------------------------------------------
    def _usage(self, model: str, prompt: str, completion: str) -> tuple[int, int, int]:
        tokens = max(1, len(prompt) // 4)
        cached = shared_prefix_tokens(prompt, self._prefixes.setdefault(model, []), self.cache_min_tokens)
        self._prefixes[model].append(prompt)
        out = max(1, len(completion) // 4)
        self.stats.input_tokens += tokens
        self.stats.cached_tokens += cached
        self.stats.output_tokens += out
        return tokens, min(cached, tokens), out

    def _answer(self, schema: dict[str, Any], prompt: str, invalid: bool) -> dict[str, Any]:
        args = respond(role_of_schema(schema.get("properties", {})), prompt)
        if invalid:
            if "questions" in args:
                for q in args["questions"]:
                    q["evidence"] = "a sentence that is not in the document"
            elif "known" in args:
                args = {**args, "known": True, "matched_facts": []}
        return args

    def _run_openai(self, custom_id: str, body: dict[str, Any], invalid: bool) -> dict[str, Any]:
        self.stats.runs[custom_id] += 1
        tool = next((t for t in body.get("tools") or [] if t.get("type") == "function"), None)
        items = body.get("input", [])
        prompt_parts = [str(body.get("instructions") or "")]
        for it in items if isinstance(items, list) else [items]:
            content = it.get("content") if isinstance(it, dict) else it
            if isinstance(content, list):
                prompt_parts.extend(str(c.get("text", "")) for c in content if isinstance(c, dict))
            elif content is not None:
                prompt_parts.append(str(content))
        user = "\n".join(prompt_parts[1:])
        text = prompt_text([body.get("instructions") or "", *(
            it.get("content") if isinstance(it, dict) else it for it in (items if isinstance(items, list) else [items]))])
        output: dict[str, Any]
        if tool is None:
            arguments = self.text_reply(user)
            output = {"type": "message", "id": f"msg_{uuid.uuid4().hex[:12]}", "role": "assistant",
                      "status": "completed", "content": [{"type": "output_text", "text": arguments, "annotations": []}]}
        else:
            arguments = json.dumps(self._answer(tool.get("parameters", {}), user, invalid), ensure_ascii=False)
            output = {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:12]}",
                      "call_id": f"call_{uuid.uuid4().hex[:12]}", "name": tool["name"], "arguments": arguments,
                      "status": "completed"}
        inp, cached, out = self._usage(body.get("model", "fake"), text, arguments)
        return {
            "id": f"resp_{uuid.uuid4().hex[:16]}", "object": "response", "created_at": int(time.time()),
            "status": "completed", "model": body.get("model", "fake"),
            "output": [output],
            "parallel_tool_calls": False, "tool_choice": "required", "tools": [], "temperature": 0.0, "top_p": 1.0,
            "usage": {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached},
                      "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": inp + out},
        }

    def _run_anthropic(self, custom_id: str, params: dict[str, Any], invalid: bool) -> dict[str, Any]:
        self.stats.runs[custom_id] += 1
        tool = params["tools"][0]
        texts: list[str] = []
        for m in params.get("messages", []):
            c = m.get("content")
            if isinstance(c, str):
                texts.append(c)
            else:
                texts.extend(str(p.get("text", "")) for p in c if isinstance(p, dict) and p.get("type") == "text")
        args = self._answer(tool.get("input_schema", {}), "\n".join(texts), invalid)
        system = params.get("system") or ""
        text = prompt_text([system, *(m.get("content") for m in params.get("messages", []))])
        inp, cached, out = self._usage(params.get("model", "fake"), text, json.dumps(args))
        return {
            "id": f"msg_{uuid.uuid4().hex[:16]}", "type": "message", "role": "assistant",
            "model": params.get("model", "fake"),
            "content": [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:12]}", "name": tool["name"],
                         "input": args}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": inp - cached, "output_tokens": out, "cache_read_input_tokens": cached,
                      "cache_creation_input_tokens": 0},
        }

    def _advance(self, b: _Batch) -> None:
        """One status read: in progress for `polls_to_end` reads, then the batch runs and ends."""
        self.stats.status_polls += 1
        if b.status not in ("in_progress", "validating"):
            return
        b.polls += 1
        if b.polls < self.polls_to_end:
            return
        plan = b.plan
        runs = len(b.requests) if "expire_after" not in plan else int(plan["expire_after"])
        if plan.get("cancel"):
            runs = 0
        for i, req in enumerate(b.requests):
            cid = req["custom_id"]
            if i >= runs:
                continue
            if i < int(plan.get("error_ids", 0)):
                b.results[cid] = {"error": True}
                continue
            invalid = i < int(plan.get("invalid", 0))
            if b.kind == "openai":
                b.results[cid] = {"response": self._run_openai(cid, req["body"], invalid)}
            else:
                b.results[cid] = {"message": self._run_anthropic(cid, req["params"], invalid)}
        b.status = "cancelled" if plan.get("cancel") else "expired" if "expire_after" in plan else "completed"
        if b.kind == "openai":
            out_lines, err_lines = [], []
            for req in b.requests:
                cid = req["custom_id"]
                res = b.results.get(cid)
                if res is None:
                    continue
                if "error" in res:
                    err_lines.append({"id": f"req_{cid[:8]}", "custom_id": cid, "response": {
                        "status_code": 500, "request_id": "x",
                        "body": {"error": {"message": "The server had an error", "type": "server_error"}}},
                        "error": None})
                else:
                    out_lines.append({"id": f"req_{cid[:8]}", "custom_id": cid, "response": {
                        "status_code": 200, "request_id": "x", "body": res["response"]}, "error": None})
            if out_lines:
                b.output_file_id = self._store_file(out_lines)
            if err_lines:
                b.error_file_id = self._store_file(err_lines)

    def _store_file(self, lines: list[dict[str, Any]]) -> str:
        fid = f"file-{uuid.uuid4().hex[:20]}"
        self.files[fid] = "\n".join(json.dumps(x, ensure_ascii=False) for x in lines).encode()
        return fid

    # -- OpenAI --------------------------------------------------------------------------------------
    async def _file_create(self, request: web.Request) -> web.Response:
        data = await request.post()
        f = data["file"]
        content = f.file.read() if isinstance(f, web.FileField) else bytes(str(f), "utf-8")
        fid = f"file-{uuid.uuid4().hex[:20]}"
        self.files[fid] = content
        return web.json_response({"id": fid, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                                  "filename": getattr(f, "filename", "batch.jsonl"), "purpose": "batch",
                                  "status": "processed"})

    async def _file_content(self, request: web.Request) -> web.Response:
        fid = request.match_info["id"]
        if fid not in self.files:
            return web.json_response({"error": {"message": "no such file"}}, status=404)
        return web.Response(body=self.files[fid], content_type="application/octet-stream")

    async def _file_delete(self, request: web.Request) -> web.Response:
        fid = request.match_info["id"]
        self.files.pop(fid, None)
        return web.json_response({"id": fid, "object": "file", "deleted": True})

    def _openai_obj(self, b: _Batch) -> dict[str, Any]:
        done = sum(1 for r in b.results.values() if "error" not in r)
        failed = sum(1 for r in b.results.values() if "error" in r)
        return {
            "id": b.id, "object": "batch", "endpoint": "/v1/responses", "errors": None,
            "input_file_id": b.input_file_id, "completion_window": "24h", "status": b.status,
            "output_file_id": b.output_file_id, "error_file_id": b.error_file_id, "created_at": int(b.created_at),
            "request_counts": {"total": len(b.requests), "completed": done, "failed": failed},
            "metadata": b.metadata,
        }

    async def _openai_create(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.stats.creates_received += 1
        if self.create_delay_s:
            await asyncio.sleep(self.create_delay_s)  # the fake's configured latency (not a wait)
        if self.plan and self.plan[0].get("refuse"):
            self.plan.pop(0)
            return web.json_response({"error": {"message": "model not available for batch", "type":
                                                "invalid_request_error"}}, status=400)
        fid = body.get("input_file_id")
        if fid not in self.files:
            return web.json_response({"error": {"message": f"no file {fid}", "type": "invalid_request_error"}},
                                     status=400)
        reqs = [json.loads(line) for line in self.files[fid].decode().splitlines() if line.strip()]
        if body.get("endpoint") != "/v1/responses" or any(r.get("url") != "/v1/responses" for r in reqs):
            return web.json_response({"error": {"message": "endpoint mismatch", "type": "invalid_request_error"}},
                                     status=400)
        b = _Batch(id=f"batch_{uuid.uuid4().hex[:20]}", kind="openai", requests=reqs, created_at=time.time(),
                   metadata=body.get("metadata"), input_file_id=fid, plan=self.plan.pop(0) if self.plan else {})
        self._created(b)
        return web.json_response(self._openai_obj(b))

    def _created(self, b: _Batch) -> None:
        self.batches[b.id] = b
        self.stats.batches_created += 1
        for r in b.requests:
            self.stats.submissions[r["custom_id"]] += 1

    async def _openai_list(self, request: web.Request) -> web.Response:
        data = [self._openai_obj(b) for b in sorted(self.batches.values(), key=lambda b: -b.created_at)
                if b.kind == "openai"]
        return web.json_response({"object": "list", "data": data, "has_more": False,
                                  "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None})

    async def _openai_get(self, request: web.Request) -> web.Response:
        b = self.batches.get(request.match_info["id"])
        if b is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        self._advance(b)
        return web.json_response(self._openai_obj(b))

    async def _openai_cancel(self, request: web.Request) -> web.Response:
        b = self.batches[request.match_info["id"]]
        if b.status == "in_progress":
            b.status = "cancelled"
        return web.json_response(self._openai_obj(b))

    # -- Anthropic -----------------------------------------------------------------------------------
    def _anthropic_obj(self, b: _Batch) -> dict[str, Any]:
        ended = b.status != "in_progress"
        counts = {"processing": 0 if ended else len(b.requests), "succeeded": 0, "errored": 0, "canceled": 0,
                  "expired": 0}
        if ended:
            for req in b.requests:
                res = b.results.get(req["custom_id"])
                kind = ("errored" if "error" in res else "succeeded") if res else (
                    "canceled" if b.status == "cancelled" else "expired")
                counts[kind] += 1
        created = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(b.created_at)) + f".{int(b.created_at % 1 * 1e6):06d}Z"
        return {
            "id": b.id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts, "created_at": created, "expires_at": created,
            "ended_at": created if ended else None, "archived_at": None, "cancel_initiated_at": None,
            "results_url": f"{self.anthropic_url}/v1/messages/batches/{b.id}/results" if ended else None,
        }

    async def _anthropic_create(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.stats.creates_received += 1
        if self.create_delay_s:
            await asyncio.sleep(self.create_delay_s)  # the fake's configured latency (not a wait)
        if self.plan and self.plan[0].get("refuse"):
            self.plan.pop(0)
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": "model not available for batch"}},
                                     status=400)
        b = _Batch(id=f"msgbatch_{uuid.uuid4().hex[:20]}", kind="anthropic", requests=body["requests"],
                   created_at=time.time(), metadata=None, input_file_id=None,
                   plan=self.plan.pop(0) if self.plan else {})
        self._created(b)
        return web.json_response(self._anthropic_obj(b))

    async def _anthropic_list(self, request: web.Request) -> web.Response:
        data = [self._anthropic_obj(b) for b in sorted(self.batches.values(), key=lambda b: -b.created_at)
                if b.kind == "anthropic"]
        return web.json_response({"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None})

    async def _anthropic_get(self, request: web.Request) -> web.Response:
        b = self.batches.get(request.match_info["id"])
        if b is None:
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "no batch"}},
                                     status=404)
        self._advance(b)
        return web.json_response(self._anthropic_obj(b))

    async def _anthropic_results(self, request: web.Request) -> web.Response:
        b = self.batches[request.match_info["id"]]
        lines = []
        for req in b.requests:
            cid = req["custom_id"]
            res = b.results.get(cid)
            if res is None:
                result: dict[str, Any] = {"type": "canceled" if b.status == "cancelled" else "expired"}
            elif "error" in res:
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": "Internal server error"}}}
            else:
                result = {"type": "succeeded", "message": res["message"]}
            lines.append(json.dumps({"custom_id": cid, "result": result}, ensure_ascii=False))
        return web.Response(body="\n".join(lines).encode(), content_type="application/x-jsonl")

    async def _anthropic_cancel(self, request: web.Request) -> web.Response:
        b = self.batches[request.match_info["id"]]
        if b.status == "in_progress":
            b.status = "cancelled"
        return web.json_response(self._anthropic_obj(b))
