"""The crawlers: one module per domain API, the shared HTTP layer, and the poller service; `registry` lists the
sources once (import it as `clkt.sources.registry`: it imports every domain folder's `source.py`, which imports
this package, so the package does not import it)."""

from __future__ import annotations

from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window
from clkt.sources.http import Fetched, SourceClient

__all__ = [
    "Fetched",
    "PollPage",
    "Source",
    "SourceClient",
    "SourceLicence",
    "SourceRef",
    "Window",
]
