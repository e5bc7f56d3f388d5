"""The one HTTP layer of the crawlers: politeness, retries, the circuit breaker and conditional GETs.

A `SourceClient` wraps the daemon's shared `aiohttp.ClientSession` for one source:

- a leaky-bucket limiter of `rate_per_s` (times `RATE_SAFETY`, 0.97) with a bucket of `burst`, whose
  units leak only once their request is done (`clkt.sources._limiter`: what arrives at the provider within
  any window stays within its limit, however long a granted request waits for its connection), and a
  concurrency cap; both in real time, whatever clock the daemon runs on (a provider's limit is real);
- tenacity retries with jittered exponential backoff on 5xx, timeouts, connection errors and bodies
  that do not decode (truncated JSON, an HTML error page where JSON was expected);
- `429` (and `503` with `Retry-After`) pauses the whole source for `Retry-After` seconds and tries
  again without spending the retry budget; a pause longer than `MAX_RETRY_AFTER_S` raises
  `SourceBlocked` so the poller backs off instead; these pauses and the retries' backoffs are waits of the
  process's clock (`clkt.clock`: a simulated calendar makes them shorter in real time, as the poll interval);
- a circuit breaker per source (`breaker_failures`, `breaker_reset_s`), metric `breaker_open`;
- ETag / If-Modified-Since on the requests that ask for it (`cache=True`), answered from memory on 304;
- the configured User-Agent; the API key is never logged (`redact()`);
- a body larger than `max_body_bytes` is refused (`PayloadError("body_too_large")`) without reading the rest;
  JSON nested deeper than the interpreter's recursion limit does not decode, and lone surrogates become
  U+FFFD (a body with `\\uD800`-`\\uDFFF` escapes is swept, its nesting then capped at `MAX_JSON_DEPTH`),
  so a decoded body always stores and prints.

It returns `Fetched` (status, headers, decoded body). 404/410 come back as a `Fetched` with `data=None`
(the caller decides: usually a counted skip). Other 4xx raise `SourceHttpError`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar
from urllib.parse import urlencode

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy
from pydantic import SecretStr
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from clkt import clock
from clkt.config import SourceSettings
from clkt.errors import PayloadError, SourceBlocked, SourceError, SourceHttpError
from clkt.logs import redact
from clkt.sources._breaker import BreakerState, CircuitBreaker
from clkt.sources._limiter import RequestLimiter

if TYPE_CHECKING:
    from clkt.telemetry import Metrics

__all__ = ["DEFAULT_USER_AGENT", "ORIGINALS_HEADER", "Fetched", "SourceClient"]

log = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_USER_AGENT = "clkt/0.1 ( https://github.com/clkt/clkt ; crawler of a live LLM benchmark )"
ORIGINALS_HEADER = "X-Clkt-Replay-Original-Dates"  # set by the replay server when it re-dates items
_SECRET_PARAMS = ("api_key", "apikey", "key", "token", "access_token", "appname")


class _Transient(Exception):
    def __init__(self, reason: str, *, retry_after_s: float | None = None) -> None:
        self.reason = reason
        self.retry_after_s = retry_after_s
        super().__init__(reason)


class _RateLimited(Exception):
    def __init__(self, retry_after_s: float) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(f"rate limited for {retry_after_s:.1f}s")


@dataclass(frozen=True)
class Fetched(Generic[T]):
    status: int
    url: str  # redacted
    headers: Mapping[str, str]
    data: T | None
    not_modified: bool = False
    original_dates: dict[str, datetime] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        return (self.data is not None and 200 <= self.status < 300) or self.status == 304


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - clock.now().timestamp())
    except (TypeError, ValueError):
        return None


def _originals(headers: Mapping[str, str]) -> dict[str, datetime]:
    raw = headers.get(ORIGINALS_HEADER)
    if not raw:
        return {}
    try:
        return {str(k): datetime.fromisoformat(v) for k, v in json.loads(raw).items()}
    except (ValueError, AttributeError, TypeError):
        return {}


class SourceClient:
    """HTTP for one source over the shared session. Tunables are class constants tests may patch."""

    MAX_TRIES: ClassVar[int] = 4
    BACKOFF_BASE_S: ClassVar[float] = 0.5
    BACKOFF_MAX_S: ClassVar[float] = 30.0
    MAX_RETRY_AFTER_S: ClassVar[float] = 120.0
    MAX_RATE_LIMIT_WAITS: ClassVar[int] = 8
    DEFAULT_RETRY_AFTER_S: ClassVar[float] = 5.0
    CACHE_SIZE: ClassVar[int] = 256
    # stay a little under the documented rate: request timing jitters on the way to the server
    RATE_SAFETY: ClassVar[float] = 0.97

    def __init__(
        self, *, name: str, settings: SourceSettings, session: aiohttp.ClientSession,
        metrics: Metrics | None = None, api_key: SecretStr | str | None = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.session = session
        self.metrics = metrics
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        self._key = key or None
        self.base_url = settings.base_url.rstrip("/")
        self.user_agent = settings.user_agent or DEFAULT_USER_AGENT
        self.limiter = RequestLimiter(rate_per_s=settings.rate_per_s * self.RATE_SAFETY, burst=settings.burst)
        self.concurrency = asyncio.Semaphore(settings.concurrency)
        self.breaker = CircuitBreaker(
            name=name, failures=settings.breaker_failures, reset_s=settings.breaker_reset_s, on_change=self._breaker_changed,
        )
        self._blocked_until = 0.0
        self._cache: OrderedDict[str, tuple[str | None, str | None, bytes]] = OrderedDict()
        self.requests = 0
        if metrics is not None:
            metrics.breaker_open.labels(name).set(0)

    # --- public --------------------------------------------------------------------------------------

    @property
    def api_key(self) -> str | None:
        """The key, for a source to put where its API wants it. Never log it."""
        return self._key

    def url(self, path: str) -> str:
        return self.base_url + "/" + path.lstrip("/")

    def redact(self, text: str) -> str:
        if self._key:
            text = text.replace(self._key, "***")
        return redact(text)

    async def get_json(self, path: str, *, params: Mapping[str, Any] | None = None, cache: bool = False,
                       headers: Mapping[str, str] | None = None) -> Fetched[Any]:
        return await self.get(path, params=params, cache=cache, headers=headers, decode=_decode_json)

    async def get(
        self, path: str, *, decode: Callable[[bytes], T], params: Mapping[str, Any] | None = None,
        cache: bool = False, headers: Mapping[str, str] | None = None,
    ) -> Fetched[T]:
        url = self.url(path)
        query = {k: str(v) for k, v in (params or {}).items() if v is not None}
        full = url + ("?" + urlencode(query) if query else "")
        shown = self._redacted_url(url, query)
        for waits in range(self.MAX_RATE_LIMIT_WAITS + 1):
            try:
                return await self._with_retries(full, shown, dict(headers or {}), cache, decode)
            except _RateLimited as e:
                if e.retry_after_s > self.MAX_RETRY_AFTER_S or waits == self.MAX_RATE_LIMIT_WAITS:
                    raise SourceBlocked(f"{self.name}: rate limited (Retry-After {e.retry_after_s:.0f}s)",
                                        retry_after_s=e.retry_after_s) from None
                self._blocked_until = max(self._blocked_until, clock.monotonic() + e.retry_after_s)
                log.warning("source %s: rate limited on %s; pausing the source %.1fs (Retry-After)",
                            self.name, shown, e.retry_after_s)
        raise AssertionError("unreachable")

    # --- internals -----------------------------------------------------------------------------------

    async def _read_limited(self, resp: aiohttp.ClientResponse, shown: str) -> bytes:
        """The body, or `PayloadError("body_too_large")` once it passes `max_body_bytes` (nothing more is read)."""
        limit = self.settings.max_body_bytes
        declared = resp.content_length
        if declared is not None and declared > limit:
            raise PayloadError("body_too_large", f"{shown}: {declared} bytes declared, limit {limit}")
        chunks: list[bytes] = []
        size = 0
        async for chunk in resp.content.iter_chunked(64 * 1024):
            size += len(chunk)
            if size > limit:
                raise PayloadError("body_too_large", f"{shown}: over the limit of {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _redacted_url(self, url: str, query: Mapping[str, str]) -> str:
        shown = {k: ("***" if k.lower() in _SECRET_PARAMS else v) for k, v in query.items()}
        return self.redact(url + ("?" + urlencode(shown, safe="*") if shown else ""))

    def _breaker_changed(self, state: BreakerState) -> None:
        if self.metrics is not None:
            self.metrics.breaker_open.labels(self.name).set(1 if state is BreakerState.open else 0)

    def _count(self, status: str) -> None:
        self.requests += 1
        if self.metrics is not None:
            self.metrics.http_requests.labels(self.name, status).inc()

    @staticmethod
    def _wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Transient) and exc.retry_after_s is not None:
            return min(exc.retry_after_s, SourceClient.BACKOFF_MAX_S)
        return wait_random_exponential(multiplier=SourceClient.BACKOFF_BASE_S, max=SourceClient.BACKOFF_MAX_S)(state)

    async def _with_retries(self, full: str, shown: str, headers: dict[str, str], cache: bool,
                            decode: Callable[[bytes], T]) -> Fetched[T]:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.MAX_TRIES), wait=self._wait, retry=retry_if_exception_type(_Transient),
            reraise=True, sleep=clock.sleep,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._once(full, shown, headers, cache, decode)
        except _Transient as e:
            if e.reason.startswith("undecodable"):
                raise PayloadError("undecodable_body", f"{shown}: {e.reason}") from None
            raise SourceError(f"{self.name}: {shown} failed after {self.MAX_TRIES} tries: {e.reason}") from None
        raise AssertionError("unreachable")

    async def _once(self, full: str, shown: str, headers: dict[str, str], cache: bool,
                    decode: Callable[[bytes], T]) -> Fetched[T]:
        async with self.concurrency:
            pause = self._blocked_until - clock.monotonic()
            if pause > 0:
                await clock.sleep(pause)
            self.breaker.before_request()
            async with self.limiter:
                return await self._send(full, shown, headers, cache, decode)

    async def _send(self, full: str, shown: str, headers: dict[str, str], cache: bool,
                    decode: Callable[[bytes], T]) -> Fetched[T]:
        hdrs = {"User-Agent": self.user_agent, "Accept": "application/json, application/xml;q=0.9, */*;q=0.5", **headers}
        cached = self._cache.get(full) if cache else None
        if cached is not None:
            etag, last_mod, _ = cached
            if etag:
                hdrs["If-None-Match"] = etag
            if last_mod:
                hdrs["If-Modified-Since"] = last_mod
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout_s)
        t0 = time.perf_counter()
        try:
            async with self.session.get(full, headers=hdrs, timeout=timeout, allow_redirects=True) as resp:
                body = await self._read_limited(resp, shown)
                status = resp.status
                rh = CIMultiDictProxy(CIMultiDict(resp.headers))
        except PayloadError:
            self._count("too_large")
            self.breaker.release_trial()
            raise
        except TimeoutError:
            self._count("timeout")
            self.breaker.record_failure()
            raise _Transient(f"timeout after {self.settings.timeout_s:g}s") from None
        except aiohttp.ClientError as e:
            self._count("error")
            self.breaker.record_failure()
            raise _Transient(f"{type(e).__name__}: {self.redact(str(e))}") from None
        except BaseException:
            self.breaker.release_trial()
            raise
        self._count(str(status))
        log.debug("GET %s -> %d (%.0f ms)", shown, status, (time.perf_counter() - t0) * 1000)
        ra = _retry_after(rh.get("Retry-After"))
        if status == 429 or (status == 503 and ra is not None):
            self.breaker.release_trial()
            raise _RateLimited(ra if ra is not None else self.DEFAULT_RETRY_AFTER_S)
        if status >= 500 or status == 408:
            self.breaker.record_failure()
            raise _Transient(f"HTTP {status}", retry_after_s=ra)
        originals = _originals(rh)
        if status == 304 and cached is not None:
            self.breaker.record_success()
            self._cache.move_to_end(full)
            return Fetched(status=304, url=shown, headers=rh, data=decode(cached[2]), not_modified=True,
                           original_dates=originals)
        if status in (404, 410):
            self.breaker.record_success()
            return Fetched(status=status, url=shown, headers=rh, data=None, original_dates=originals)
        if status >= 400 or status == 304:
            self.breaker.record_success()
            raise SourceHttpError(status, shown, self.redact(body[:200].decode("utf-8", "replace")))
        ctype = rh.get("Content-Type", "")
        try:
            if "text/html" in ctype:
                raise ValueError(f"an HTML page where data was expected: {body[:80]!r}")
            data = decode(body)
        except Exception as e:  # noqa: BLE001 - whatever a decoder raises on a hostile body: it does not decode
            self.breaker.record_failure()
            raise _Transient(self.redact(f"undecodable body ({type(e).__name__}: {str(e)[:120]})")) from None
        self.breaker.record_success()
        if cache and (rh.get("ETag") or rh.get("Last-Modified")):
            self._cache[full] = (rh.get("ETag"), rh.get("Last-Modified"), body)
            self._cache.move_to_end(full)
            while len(self._cache) > self.CACHE_SIZE:
                self._cache.popitem(last=False)
        return Fetched(status=status, url=shown, headers=rh, data=data, original_dates=originals)


MAX_JSON_DEPTH = 64  # no API we read nests deeper than about 10
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # only an escape can carry a surrogate in valid UTF-8


def _decode_json(body: bytes) -> Any:
    try:
        data = json.loads(body)
    except RecursionError:
        raise ValueError("JSON nested deeper than the interpreter allows") from None
    # the sweep costs a walk of the whole document: only when a surrogate can be there at all
    return _clean(data, 0) if _SURROGATE_ESCAPE.search(body) else data


def _clean(x: Any, depth: int) -> Any:
    """Refuse deep nesting; replace lone surrogates (which no store or terminal accepts) with U+FFFD."""
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(x, str):
        try:
            x.encode("utf-8")
            return x
        except UnicodeEncodeError:
            return x.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(x, list):
        return [_clean(v, depth + 1) for v in x]
    if isinstance(x, dict):
        return {_clean(k, depth + 1): _clean(v, depth + 1) for k, v in x.items()}
    return x
