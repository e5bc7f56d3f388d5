"""`clkt submit --url URL PACK`: a result pack uploaded to a clkt service's `POST /packs` (`clkt.web.intake`).

The body is the pack as one `.tar.gz`: an archive is sent as it is; a folder is read and verified first
(`clkt.packs.pack.read_pack`) and its files archived exactly as `clkt evaluate --out pack.tar.gz` writes them
(`clkt.packs.archive.archive_bytes`), so both forms are one pack (its identity is its manifest's sha256). The token
travels only in the `Authorization: Bearer` header: it is never part of a message, a log line or the URL.

One POST per try with a timeout; a 5xx, a connection error or a timeout is tried again (tenacity, exponential
backoff, `TRIES` tries), a 4xx never is. The service's verdict comes back as an `Intake` (what `clkt submit PACK`
prints); a refusal (401 token, 413 too large, 400 the verifier's one line, anything else) and a service that cannot
be reached are each one line (`UserError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import ValidationError
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from clkt import clock
from clkt.errors import UserError
from clkt.packs.archive import archive_bytes, is_archive
from clkt.packs.format import MANIFEST_FILE
from clkt.packs.intake import Intake
from clkt.packs.metrics import PackMetrics
from clkt.packs.pack import read_pack

__all__ = ["BACKOFF_S", "CONNECT_TIMEOUT_S", "TIMEOUT_S", "TRIES", "post_pack", "upload_body"]

TRIES = 4  # tries of one upload (5xx, connection errors and timeouts only)
BACKOFF_S = 0.5  # the first wait between tries; doubled each time
TIMEOUT_S = 600.0  # one try, whole: the service verifies the pack before it answers
CONNECT_TIMEOUT_S = 15.0


class _Retryable(Exception):
    """A 5xx answer: tried again."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class _Answer:
    status: int
    reason: str  # the service's one line (its JSON `error`, else the start of its text)
    data: dict[str, Any] | None


def upload_body(path: Path) -> bytes:
    """The pack at `path` as the bytes of one `.tar.gz` (see the module docstring)."""
    if not path.exists():
        raise UserError(f"no pack at {path}")
    if path.is_file():
        if not is_archive(path):
            raise UserError(f"{path} is neither a pack folder nor a .tar.gz archive of one")
        return path.read_bytes()
    pack = read_pack(path)  # every file against the manifest, nothing extra: what is archived is what was checked
    names = [MANIFEST_FILE, *pack.manifest.files]
    return archive_bytes({name: (path / name).read_bytes() for name in names})


async def _answer(resp: aiohttp.ClientResponse) -> _Answer:
    text = await resp.text(errors="replace")
    data: Any = None
    try:
        data = await resp.json(content_type=None)
    except ValueError:
        data = None
    data = data if isinstance(data, dict) else None
    said = data.get("error") if data is not None else None
    reason = said if isinstance(said, str) else " ".join(text.split())[:200] or resp.reason or ""
    return _Answer(resp.status, reason, data)


def _refusal(url: str, got: _Answer, *, size: int, token_env: str) -> UserError:
    if got.status == 401:
        return UserError(f"{url} refused the upload (HTTP 401): {got.reason}; the token is read from ${token_env} "
                         "(--token-env names another variable)")
    if got.status == 413:
        return UserError(f"{url} refused the upload (HTTP 413): the pack's {size:,} bytes are too large: {got.reason}")
    if got.status in (404, 405):
        return UserError(f"{url} takes no upload (HTTP {got.status}: {got.reason}); the service needs [http] "
                         "intake_token_env naming a set variable")
    return UserError(f"{url} refused the pack (HTTP {got.status}): {got.reason}")


def _verdict(url: str, data: dict[str, Any] | None) -> Intake:
    try:
        if data is None:
            raise ValueError("not a JSON object")
        metrics = data.get("metrics")
        return Intake(pack_sha256=str(data["pack_sha256"]), snapshot_id=str(data["snapshot_id"]),
                      target=str(data["target"]), stored=bool(data["stored"]), claims_match=bool(data["claims_match"]),
                      claims_note=str(data.get("claims_note") or ""), flags_fixed=int(data.get("flags_fixed") or 0),
                      metrics=PackMetrics.model_validate(metrics) if metrics is not None else None,
                      open_answers=int(data.get("open_answers") or 0))
    except (KeyError, TypeError, ValueError, ValidationError) as e:
        raise UserError(f"{url} answered HTTP 200 but not with a clkt intake verdict ({type(e).__name__})") from None


async def _try(http: aiohttp.ClientSession, url: str, body: bytes, token: str) -> _Answer:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"}
    async with http.post(url, data=body, headers=headers, allow_redirects=False) as resp:
        got = await _answer(resp)
    if got.status >= 500:
        raise _Retryable(got.status, got.reason)
    return got


async def post_pack(url: str, body: bytes, *, token: str, token_env: str, tries: int | None = None,
                    backoff_s: float | None = None) -> Intake:
    """Upload `body` (`upload_body`) to `url` (the service's `POST /packs`); the service's verdict. `tries` and
    `backoff_s` default to `TRIES` and `BACKOFF_S`, read at the call."""
    tries = TRIES if tries is None else tries
    backoff_s = BACKOFF_S if backoff_s is None else backoff_s
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S, sock_connect=CONNECT_TIMEOUT_S)
    retrying = AsyncRetrying(
        stop=stop_after_attempt(tries), wait=wait_exponential(multiplier=backoff_s, max=backoff_s * 16),
        retry=retry_if_exception_type((aiohttp.ClientConnectionError, TimeoutError, _Retryable)),
        reraise=True, sleep=clock.sleep,
    )
    try:
        async with aiohttp.ClientSession(timeout=timeout) as http:
            got: _Answer = await retrying(_try, http, url, body, token)
    except _Retryable as e:
        raise UserError(f"{url} failed the upload {tries} times (HTTP {e.status}: {e.reason})") from None
    except (aiohttp.ClientError, TimeoutError) as e:
        why = "timed out" if isinstance(e, TimeoutError) else type(e).__name__
        raise UserError(f"{url} could not be reached ({why}, {tries} tries)") from None
    if got.status != 200:
        raise _refusal(url, got, size=len(body), token_env=token_env)
    return _verdict(url, got.data)
