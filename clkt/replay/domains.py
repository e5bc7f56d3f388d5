"""What a domain folder's `replay.py` declares (`REPLAY`, a `DomainReplay`): its routes, its recorded items (from
its folder's `data/`), how each mode answers a request, its listing lag and its generated ids. The recorded
server, the generator and the stream mount and read every registered domain's through `domain_replays()`.

The registry is read when a server or a stream is built, not when this package is imported: a domain's
`replay.py` imports this package's modules, so importing it from here at import time would find it half-built.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, Protocol

from aiohttp import web

from clkt.domains import import_side

__all__ = ["DomainReplay", "Item", "StreamKey", "domain_replays"]

# a domain's handler: (the recorded server's `ReplayRoutes` or the generator's `GeneratorRoutes`, the request); typed
# loosely here because those modules mount the handlers (the domain's own module types its argument)
Handler = Callable[[Any, web.Request], Awaitable[web.Response]]


class StreamKey(Protocol):
    """What an id is drawn from: the stream's seed tag and its seeded draws (`clkt.replay.stream.EntityStream`)."""

    @property
    def tag(self) -> int: ...

    def unit(self, source: str, index: int, purpose: str) -> float: ...


@dataclass(frozen=True)
class Item:
    """One recorded item of a source (`clkt.replay.catalog`): its recorded list entry, its detail, its date."""

    id: str
    occurred: datetime  # original primary time, aware UTC
    listing: Any  # list-shaped JSON entry (or the raw `<item>` XML text for GDACS)
    detail: Any | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    projected: bool = False  # the list entry was projected from the recorded detail


@dataclass(frozen=True, kw_only=True)
class DomainReplay:
    """One domain's replay surface, both modes. An entity's id is `external_id(tag, index)`, or, where it needs more
    of the stream than its seed's tag (GDACS's names an event type drawn from the seed), `stream_id(stream, index)`:
    exactly one of the two is given."""

    source: str  # its source's name (the spec's `source`)
    paths: tuple[str, ...]  # its routes, each served by `recorded` (recorded mode) and `generated` (generator mode)
    items: Callable[[], list[Item]]  # its recorded items, from its folder's data
    recorded: Handler  # over a `clkt.replay.routes.ReplayRoutes`
    generated: Handler  # over a `clkt.replay.generator.GeneratorRoutes`
    lag_s: tuple[int, int]  # how long after it occurred an entity is listed: (least, most) seconds, under a day
    id_pattern: re.Pattern[str]  # an id of ours, with groups `tag` and `i`
    external_id: Callable[[int, int], str] | None = None  # (the stream's tag, the entity's index) -> its id
    stream_id: Callable[[StreamKey, int], str] | None = None  # (the stream, the entity's index) -> its id
    id_base: int = 10  # the base the two groups are written in
    # a recorded item kept as text (an XML element): what re-dating does to it beyond moving its dates, given the
    # date it now occurred at (GDACS's `<gdacs:year>`)
    retext: Callable[[str, datetime], str] | None = None

    def __post_init__(self) -> None:
        if (self.external_id is None) == (self.stream_id is None):
            raise ValueError(f"replay of {self.source!r}: give exactly one of `external_id` and `stream_id`")

    def id_in(self, stream: StreamKey, index: int) -> str:
        """The id of entity `index` of `stream`."""
        if self.stream_id is not None:
            return self.stream_id(stream, index)
        assert self.external_id is not None  # __post_init__: one of the two
        return self.external_id(stream.tag, index)

    def index_of(self, external_id: str, *, stream: StreamKey) -> int | None:
        """The index `external_id` names in `stream`, or None (another seed's, or no id of ours)."""
        m = self.id_pattern.match(external_id.strip())
        if m is None:
            return None
        got_tag, index = int(m["tag"], self.id_base), int(m["i"], self.id_base)
        if got_tag != stream.tag or self.id_in(stream, index) != external_id.strip():
            return None
        return index


@cache
def domain_replays() -> dict[str, DomainReplay]:
    """Every registered domain's replay surface by its source's name (a domain without `replay.py` has none): its
    `REPLAY`, or `REPLAYS` (one per source) for a domain of several sources."""
    out: dict[str, DomainReplay] = {}
    for module in import_side("replay"):
        for replay in getattr(module, "REPLAYS", None) or (getattr(module, "REPLAY", None),):
            if not isinstance(replay, DomainReplay):
                raise TypeError(f"{module.__name__} declares no `REPLAY` (its `DomainReplay`)")
            out[replay.source] = replay
    return out
