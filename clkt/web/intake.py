"""`POST /packs`: a result pack uploaded to the daemon's endpoint, taken in as `clkt submit PACK` takes a file.

Served only when an intake token is configured (`[http] intake_token_env` names the environment variable that
holds it); every upload carries it as `Authorization: Bearer <token>` (compared in constant time): without it, or
with another, the answer is 401 and nothing is read. The body is the pack as one `.tar.gz` archive (`clkt
evaluate --out pack.tar.gz`), at most `[http] intake_max_bytes` (413 past it, counted while reading); it is
spooled to a private temporary folder, read and verified (`clkt.packs.pack.read_pack`: the safe extraction, every
file against the manifest) and checked against this store and stored once (`clkt.packs.intake.submit_pack`). A
refused pack is 400 with its one line, and the store as it was; an accepted one is 200 with what `clkt submit`
prints, as JSON (`stored` false: the same pack was submitted before, nothing changed).

    curl -H "Authorization: Bearer $CLKT_INTAKE_TOKEN" --data-binary @pack.tar.gz http://HOST:8765/packs
    clkt submit --url http://HOST:8765 pack.tar.gz      # the same, the token read from $CLKT_INTAKE_TOKEN
"""

from __future__ import annotations

import asyncio
import hmac
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from clkt.errors import UserError
from clkt.packs.intake import submit_pack
from clkt.packs.pack import read_pack
from storage.engine import Store

__all__ = ["INTAKE_PATH", "IntakeConfig", "add_intake"]

INTAKE_PATH = "/packs"


@dataclass(frozen=True, kw_only=True)
class IntakeConfig:
    store: Store
    token: str
    buffer_days: int  # the spec's temporal buffer (the window rule)
    max_bytes: int


_KEY = web.AppKey("clkt_intake", IntakeConfig)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _authorized(request: web.Request, token: str) -> bool:
    got = request.headers.get("Authorization", "")
    scheme, _, value = got.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


async def _spool(request: web.Request, dest: Path, limit: int) -> int | None:
    """The body written to `dest`; its size, or None when it passes `limit` bytes."""
    if request.content_length is not None and request.content_length > limit:
        return None
    size = 0
    with dest.open("wb") as fh:
        async for chunk in request.content.iter_chunked(1 << 16):
            size += len(chunk)
            if size > limit:
                return None
            fh.write(chunk)
    return size


async def upload(request: web.Request) -> web.Response:
    cfg = request.app[_KEY]
    if not _authorized(request, cfg.token):
        return _error(401, "an upload needs the intake token (Authorization: Bearer <token>)")
    tmp = Path(tempfile.mkdtemp(prefix="clkt-upload-"))
    try:
        size = await _spool(request, tmp / "pack.tar.gz", cfg.max_bytes)
        if size is None:
            return _error(413, f"the pack passes the upload limit of {cfg.max_bytes:,} bytes ([http] intake_max_bytes)")
        if size == 0:
            return _error(400, "an empty upload: send the pack as one .tar.gz archive (curl --data-binary @pack.tar.gz)")
        try:
            pack = await asyncio.to_thread(read_pack, tmp / "pack.tar.gz")
            got = await submit_pack(cfg.store, pack, buffer_days=cfg.buffer_days)
        except UserError as e:
            return _error(400, str(e).replace(str(tmp / "pack.tar.gz"), "the upload"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return web.json_response({
        "pack_sha256": got.pack_sha256, "snapshot_id": got.snapshot_id, "target": got.target, "stored": got.stored,
        "claims_match": got.claims_match, "claims_note": got.claims_note, "flags_fixed": got.flags_fixed,
        "metrics": got.metrics.model_dump(mode="json") if got.metrics is not None else None,
    })


def add_intake(app: web.Application, cfg: IntakeConfig) -> str:
    """`POST /packs` on `app` (whose guards must let POST through on the path returned)."""
    app[_KEY] = cfg
    app.router.add_post(INTAKE_PATH, upload)
    return INTAKE_PATH
