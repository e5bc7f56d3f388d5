"""`POST /packs`: a result pack uploaded to the daemon's endpoint, taken in as `clkt submit PACK` takes a file.

Served only when intake tokens are configured (`[http] intake_tokens_file`, one hashed token per submitter, and/or
the operator's in the variable `[http] intake_token_env`: `clkt.web.intake_gate`); every upload carries its
submitter's as `Authorization: Bearer <token>`: without one, or with another, the answer is 401 and nothing is read.
Per submitter a rate limit and a concurrent-upload limit hold (429, `Retry-After`), and all together a few uploads
at once (503). The body is the pack as one `.tar.gz` archive (`clkt evaluate --out pack.tar.gz`), at most
`[http] intake_max_bytes` (413 on `Content-Length`, and counted while reading); a sender that stalls between reads
or takes too long is cut off (408). It is spooled to a private temporary folder, verified in a child process with
memory and time limits (`clkt.packs.sandbox.read_pack_isolated`: the bounded extraction, every file against the
manifest), then checked against this store and stored once (`clkt.packs.intake.submit_pack`). Every refusal is one
line with its status, in the answer and in the log (the submitter's name, never the token). A
refused pack is 400 with its one line, and the store as it was; an accepted one is 200 with what `clkt submit`
prints, as JSON (`stored` false: the same pack was submitted before, nothing changed).

    curl -H "Authorization: Bearer $CLKT_INTAKE_TOKEN" --data-binary @pack.tar.gz http://HOST:8765/packs
    clkt submit --url http://HOST:8765 pack.tar.gz      # the same, the token read from $CLKT_INTAKE_TOKEN
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from clkt.errors import UserError
from clkt.packs.intake import submit_pack
from clkt.packs.sandbox import read_pack_isolated
from clkt.report.leaderboard_data import LeaderboardQuery
from clkt.web.intake_gate import GateRefusal, IntakeGate, IntakeLimits, Submitters
from storage.engine import Store

__all__ = ["INTAKE_PATH", "IntakeConfig", "add_intake"]

INTAKE_PATH = "/packs"
log = logging.getLogger("clkt.web")


@dataclass(frozen=True, kw_only=True)
class IntakeConfig:
    store: Store
    submitters: Submitters
    buffer_days: int  # the spec's temporal buffer (the window rule)
    board: LeaderboardQuery | None = None  # the default board, whose rows a taken-in pack's are computed for at once
    max_bytes: int
    limits: IntakeLimits = field(default_factory=IntakeLimits)


_KEY = web.AppKey("clkt_intake", IntakeConfig)
_GATE = web.AppKey("clkt_intake_gate", IntakeGate)


def _error(status: int, message: str, *, who: str | None = None, retry_after_s: int | None = None) -> web.Response:
    """The refusal, answered and logged as one line (the submitter's name, never the token)."""
    log.warning("POST %s refused: HTTP %d, submitter %s: %s", INTAKE_PATH, status, who or "-", message[:300])
    headers = {"Retry-After": str(retry_after_s)} if retry_after_s is not None else None
    return web.json_response({"error": message}, status=status, headers=headers)


class _TooLarge(Exception):
    pass


async def _spool(request: web.Request, dest: Path, cfg: IntakeConfig) -> int:
    """The body written to `dest`, its size; `_TooLarge` past `max_bytes` (on Content-Length, then counted),
    `TimeoutError` when the sender stalls past `read_timeout_s` or the body takes past `upload_timeout_s`."""
    limit = cfg.max_bytes
    if request.content_length is not None and request.content_length > limit:
        raise _TooLarge
    size = 0
    async with asyncio.timeout(cfg.limits.upload_timeout_s):
        with dest.open("wb") as fh:
            while True:
                async with asyncio.timeout(cfg.limits.read_timeout_s):
                    chunk = await request.content.read(1 << 16)
                if not chunk:
                    return size
                size += len(chunk)
                if size > limit:
                    raise _TooLarge
                fh.write(chunk)


async def upload(request: web.Request) -> web.Response:
    cfg = request.app[_KEY]
    who = cfg.submitters.who(request.headers.get("Authorization", ""))
    if who is None:
        return _error(401, "an upload needs the intake token of a submitter (Authorization: Bearer <token>)")
    try:
        async with request.app[_GATE].admit(who):
            return await _take(request, cfg, who)
    except GateRefusal as e:
        return _error(e.status, str(e), who=who, retry_after_s=e.retry_after_s)


async def _take(request: web.Request, cfg: IntakeConfig, who: str) -> web.Response:
    tmp = Path(tempfile.mkdtemp(prefix="clkt-upload-"))
    try:
        try:
            size = await _spool(request, tmp / "pack.tar.gz", cfg)
        except _TooLarge:
            return _error(413, f"the pack passes the upload limit of {cfg.max_bytes:,} bytes ([http] intake_max_bytes)",
                          who=who)
        except TimeoutError:
            return _error(408, f"the upload stalled past {cfg.limits.read_timeout_s:g} s between reads or took past "
                               f"{cfg.limits.upload_timeout_s:g} s in all", who=who)
        if size == 0:
            return _error(400, "an empty upload: send the pack as one .tar.gz archive (curl --data-binary @pack.tar.gz)",
                          who=who)
        try:
            pack = await asyncio.to_thread(read_pack_isolated, tmp / "pack.tar.gz", shown="the upload")
            got = await submit_pack(cfg.store, pack, buffer_days=cfg.buffer_days, board=cfg.board)
        except UserError as e:
            return _error(400, str(e).replace(str(tmp / "pack.tar.gz"), "the upload"), who=who)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("POST %s: pack %s from submitter %s (stored %s)", INTAKE_PATH, got.pack_sha256[:12], who, got.stored)
    return web.json_response({
        "pack_sha256": got.pack_sha256, "snapshot_id": got.snapshot_id, "target": got.target, "stored": got.stored,
        "claims_match": got.claims_match, "claims_note": got.claims_note, "flags_fixed": got.flags_fixed,
        "open_answers": got.open_answers, "metrics": got.metrics.model_dump(mode="json") if got.metrics is not None else None,
    })


def add_intake(app: web.Application, cfg: IntakeConfig) -> str:
    """`POST /packs` on `app` (whose guards must let POST through on the path returned)."""
    app[_KEY] = cfg
    app[_GATE] = IntakeGate(cfg.limits)
    app.router.add_post(INTAKE_PATH, upload)
    return INTAKE_PATH
