"""TheSportsDB's poller lives in its domain's folder (`clkt.domains.sports.source`); this name stays for its
importers."""

from __future__ import annotations

from clkt.domains.sports.source import (
    FINISHED,
    NOT_FINISHED,
    TheSportsDbSource,
    _periods,
    parse_event,
    parse_events,
)

__all__ = ["FINISHED", "NOT_FINISHED", "TheSportsDbSource", "_periods", "parse_event", "parse_events"]
