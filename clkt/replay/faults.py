"""Faults the replay server injects on request: for tests, chaos runs and the crawl bench.

A `FaultPlan` is a list of `FaultRule`s and a seed. A rule matches a request path with a glob (`*`,
`/musicbrainz/*`) and fires with probability `rate` (drawn from the plan's seeded RNG, so a run is
reproducible), at most `limit` times when set. A single request can also force a fault with the query
parameter `_fault=<kind>` (plus `_retry_after`, `_delay`).

Kinds: `429` (with `Retry-After`), `500`, `503`, `slow` (sleeps `delay_s` before answering, past a client
timeout), `truncated` (a 200 whose JSON is cut in half), `html` (a 502 HTML error page, as a proxy
would send), `drift` (a 200 whose JSON has fields removed, nulled, or numbers turned into strings).
"""

from __future__ import annotations

import fnmatch
import json
import random
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["HTML_ERROR_PAGE", "FaultInjector", "FaultKind", "FaultPlan", "FaultRule", "drift_json"]

HTML_ERROR_PAGE = (
    "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
    "<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
)


class FaultKind(str, Enum):
    rate_limit = "429"
    server_error = "500"
    unavailable = "503"
    slow = "slow"
    truncated = "truncated"
    html = "html"
    drift = "drift"


class FaultRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: FaultKind
    route: str = "*"  # glob on the request path, e.g. "/musicbrainz/*"
    rate: float = Field(default=1.0, ge=0.0, le=1.0)
    limit: int | None = Field(default=None, ge=0)  # fire at most this many times
    retry_after_s: float = Field(default=1.0, ge=0.0)
    delay_s: float = Field(default=5.0, ge=0.0)


class FaultPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[FaultRule] = Field(default_factory=list)
    seed: int = 0


class FaultInjector:
    """Holds the active plan, its RNG and how often each rule fired."""

    def __init__(self, plan: FaultPlan | None = None) -> None:
        self.set(plan or FaultPlan())

    def set(self, plan: FaultPlan) -> None:
        self.plan = plan
        self.rng = random.Random(plan.seed)
        self.fired = [0] * len(plan.rules)

    def choose(self, path: str, query: dict[str, str]) -> FaultRule | None:
        forced = query.get("_fault")
        if forced:
            try:
                kind = FaultKind(forced)
            except ValueError:
                return None
            return FaultRule(
                kind=kind,
                retry_after_s=float(query.get("_retry_after", 1.0)),
                delay_s=float(query.get("_delay", 5.0)),
            )
        for i, rule in enumerate(self.plan.rules):
            if not fnmatch.fnmatchcase(path, rule.route):
                continue
            if rule.limit is not None and self.fired[i] >= rule.limit:
                continue
            if rule.rate >= 1.0 or self.rng.random() < rule.rate:
                self.fired[i] += 1
                return rule
        return None

    def status(self) -> dict[str, Any]:
        return {"plan": self.plan.model_dump(mode="json"), "fired": list(self.fired)}


def drift_json(body: bytes, rng: random.Random) -> bytes:
    """Schema drift: in every object, one field goes missing, one turns null, numbers become strings."""
    try:
        data = json.loads(body)
    except ValueError:
        return body

    def walk(x: Any, depth: int) -> Any:
        if isinstance(x, list):
            return [walk(v, depth + 1) for v in x]
        if not isinstance(x, dict):
            return x
        out = {k: walk(v, depth + 1) for k, v in x.items()}
        keys = sorted(out)
        if keys and depth > 0:
            victim = rng.choice(keys)
            action = rng.randrange(3)
            if action == 0:
                out.pop(victim)
            elif action == 1:
                out[victim] = None
            elif isinstance(out[victim], (int, float)) and not isinstance(out[victim], bool):
                out[victim] = str(out[victim])
            else:
                out.pop(victim)
        for k, v in list(out.items()):
            if isinstance(v, (int, float)) and not isinstance(v, bool) and rng.random() < 0.3:
                out[k] = str(v)
        return out

    return json.dumps(walk(data, 0)).encode()
