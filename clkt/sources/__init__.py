"""The crawlers: one module per domain API, the shared HTTP layer, and the poller service; `registry` lists the
sources once."""

from __future__ import annotations

from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window
from clkt.sources.http import Fetched, SourceClient
from clkt.sources.registry import SOURCE_TYPES, licence_of, source_licences

__all__ = [
    "SOURCE_TYPES",
    "Fetched",
    "PollPage",
    "Source",
    "SourceClient",
    "SourceLicence",
    "SourceRef",
    "Window",
    "licence_of",
    "source_licences",
]
