"""The source interface: poll a time window page by page for references, fetch one reference in full.

A `Source` declares its domain and talks to its API only through its `SourceClient` (politeness, retries
and the breaker live there). `poll(window, page)` returns typed `SourceRef`s and the next page number
(None at the end of the window); `fetch(ref)` returns the `EntityRecord` with typed facts, or raises
`PayloadError(reason)` when the record is malformed, not found or fails the domain's eligibility rules
(a finished match with a final score, a released film with credits, a release with a track list, a
quake with a magnitude, a disaster with impact figures). Pages are numbered from 1.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, model_validator

from clkt.config import SourceSettings
from clkt.errors import ConfigError, PayloadError
from clkt.facts import Domain, EntityRecord
from clkt.sources.http import SourceClient

__all__ = [
    "PollPage", "Source", "SourceLicence", "SourceRef", "Window", "is_loopback", "record_of_listing", "skipped_of",
]

S = TypeVar("S", bound=SourceSettings)


class Window(BaseModel):
    """A half-open time window [start, end) in aware UTC."""

    model_config = ConfigDict(frozen=True)

    start: datetime
    end: datetime

    @model_validator(mode="after")
    def _check(self) -> Window:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ValueError("window bounds must be timezone-aware")
        if self.end < self.start:
            raise ValueError(f"window end {self.end} is before its start {self.start}")
        return self


class SourceRef(BaseModel):
    """One entity found by `poll`, enough to fetch it (and, for list-only APIs, the record itself)."""

    model_config = ConfigDict(frozen=True)

    external_id: str
    name: str = ""
    occurred_at: datetime | None = None
    listing: dict[str, Any] | None = None  # the list entry as served, for sources without a detail call
    redated_from: datetime | None = None  # the replay server's original date, when it re-dated the item


class PollPage(BaseModel):
    model_config = ConfigDict(frozen=True)

    refs: list[SourceRef]
    next_page: int | None
    not_modified: bool = False  # the server answered 304: nothing changed since we last read this page
    skipped: tuple[tuple[str, str], ...] = ()  # (reason, detail) of the page's items that did not parse


def skipped_of(items: object) -> tuple[tuple[str, str], ...]:
    """The (reason, detail) pairs of a list parser's skipped items (`clkt.sources._parse.Items`)."""
    return tuple((e.reason, e.detail) for e in getattr(items, "skipped", ()))


def record_of_listing(ref: SourceRef, parse: Callable[[dict[str, Any]], EntityRecord]) -> EntityRecord:
    """The record of a list-only API's entry (a feed item, a list result: no detail call), parsed by `parse`, with
    the replay server's original date; `PayloadError` when the reference carries no entry."""
    if ref.listing is None:
        raise PayloadError("missing_field", f"{ref.external_id}: no list entry")
    return parse(ref.listing).model_copy(update={"redated_from": ref.redated_from})


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceLicence:
    """Who provides a source's data and on what terms: stated on every card (snapshot, Hub) holding its items."""

    provider: str  # its name and address
    terms: str


class Source(ABC, Generic[S]):
    """One API's crawler over its own settings class (`clkt.config.sources`), whose `options` are typed: its name
    (the `[sources.<name>]` table, the entities' `source`), its domain, the kind of facts it yields
    (`clkt.facts`, `clkt.documents.registry`) and its data's licence."""

    name: ClassVar[str]
    domain: ClassVar[Domain]
    kind: ClassVar[str]
    licence: ClassVar[SourceLicence]
    requires_key: ClassVar[bool] = False
    paged: ClassVar[bool] = True  # False: the window is one page (a feed); a skipped page ends the window

    def __init__(self, *, client: SourceClient, settings: S) -> None:
        self.client = client
        self.settings = settings

    def check(self) -> None:
        """Fail loudly at start when the source cannot work (a required key is missing)."""
        if self.requires_key and not self.client.api_key and not is_loopback(self.client.base_url):
            env = self.settings.api_key_env or "<api_key_env>"
            raise ConfigError(f"sources.{self.name}", f"needs an API key: set the environment variable {env}")

    @abstractmethod
    async def poll(self, window: Window, page: int) -> PollPage:
        """References to entities that occurred in `window`, page `page` (from 1)."""

    @abstractmethod
    async def fetch(self, ref: SourceRef) -> EntityRecord:
        """The full record of one reference; `PayloadError` when it must be skipped."""
