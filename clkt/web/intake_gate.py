"""Who may upload a pack to `POST /packs`, how often and how many at once (`clkt.web.intake`).

Every submitter has a token of their own. At rest only its sha256 is kept: `[http] intake_tokens_file` holds one
`NAME sha256:HEX` line per submitter (`hash_token` and `token_line` write one; `#` starts a comment); the operator's
token in `[http] intake_token_env` is one more submitter, `operator`, hashed when it is read. A token is found by
comparing its sha256 with each in constant time (`hmac.compare_digest`). The token itself is never logged, stored
or shown: a refusal names the submitter, or nobody.

Per submitter, uploads pass through the crawlers' own leaky bucket (`clkt.sources._limiter.RequestLimiter`: a unit
leaks only once its upload is answered) at `rate_per_hour` with `burst`, and at most `concurrent` are read at once;
past either the upload is refused at once (429 with `Retry-After`), never queued: a sender cannot make the daemon hold
its connections. All submitters together have at most `total_concurrent` uploads in hand (503 past it).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from clkt.errors import UserError
from clkt.sources._limiter import RequestLimiter

__all__ = ["GateRefusal", "IntakeGate", "IntakeLimits", "Submitters", "hash_token", "read_tokens_file", "token_line"]

_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.@-]{0,63})\s+sha256:([0-9a-f]{64})$")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_line(name: str, token: str) -> str:
    """The line of `[http] intake_tokens_file` that lets `name` upload with `token`."""
    line = f"{name} sha256:{hash_token(token)}"
    if not _LINE.match(line):
        raise UserError(f"{name!r} is not a submitter name (letters, digits, _ . @ -; at most 64)")
    return line


def read_tokens_file(path: Path) -> dict[str, str]:
    """The file's submitters: name by token sha256; `UserError` naming the first line that is not `NAME sha256:HEX`."""
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"[http] intake_tokens_file {path} cannot be read ({type(e).__name__})") from e
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.match(line)
        if m is None:
            raise UserError(f"[http] intake_tokens_file {path}:{n}: not 'NAME sha256:HEX' (64 lower-case hex digits)")
        if m.group(1) in out.values():
            raise UserError(f"[http] intake_tokens_file {path}:{n}: submitter {m.group(1)} is named twice")
        out[m.group(2)] = m.group(1)
    return out


@dataclass(frozen=True)
class Submitters:
    """The submitters' token hashes (sha256 hex -> name)."""

    by_hash: Mapping[str, str]

    @classmethod
    def of(cls, *, operator_token: str | None = None, tokens_file: Path | None = None) -> Submitters:
        by = dict(read_tokens_file(tokens_file)) if tokens_file is not None else {}
        if operator_token:
            by[hash_token(operator_token)] = "operator"
        return cls(by)

    def who(self, authorization: str) -> str | None:
        """The submitter whose token the `Authorization: Bearer` header carries, None for any other header."""
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            return None
        got = hash_token(value.strip()).encode()
        found: str | None = None
        for h, name in self.by_hash.items():
            if hmac.compare_digest(got, h.encode()):
                found = name
        return found


@dataclass(frozen=True, kw_only=True)
class IntakeLimits:
    rate_per_hour: float = 30.0
    burst: int = 5
    concurrent: int = 1  # per submitter
    total_concurrent: int = 4
    read_timeout_s: float = 30.0  # the longest wait for the next bytes of a body
    upload_timeout_s: float = 600.0  # a whole body


class GateRefusal(Exception):
    def __init__(self, status: int, message: str, *, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s


@dataclass
class IntakeGate:
    limits: IntakeLimits
    _buckets: dict[str, RequestLimiter] = field(default_factory=dict)
    _busy: int = 0

    def _bucket(self, who: str) -> RequestLimiter:
        if who not in self._buckets:
            self._buckets[who] = RequestLimiter(rate_per_s=self.limits.rate_per_hour / 3600.0, burst=self.limits.burst)
        return self._buckets[who]

    @contextlib.asynccontextmanager
    async def admit(self, who: str) -> AsyncIterator[None]:
        """Hold one upload slot of `who` (`GateRefusal` at once when none is free, nothing queued)."""
        lim = self.limits
        bucket = self._bucket(who)
        if bucket.in_flight >= lim.concurrent:
            raise GateRefusal(429, f"submitter {who} has {lim.concurrent} upload(s) in hand already; send one at a time",
                              retry_after_s=5)
        if bucket.level() + 1 > lim.burst:
            wait = max(1, int((bucket.level() + 1 - lim.burst) * 3600.0 / lim.rate_per_hour) + 1)
            raise GateRefusal(429, f"submitter {who} passed {lim.rate_per_hour:g} uploads an hour (burst {lim.burst})",
                              retry_after_s=wait)
        if self._busy >= lim.total_concurrent:
            raise GateRefusal(503, f"{lim.total_concurrent} uploads are being read; try again shortly", retry_after_s=5)
        self._busy += 1
        try:
            async with bucket:
                yield
        finally:
            self._busy -= 1
