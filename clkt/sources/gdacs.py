"""GDACS's poller lives in its domain's folder (`clkt.domains.disasters.source`); this name stays for its importers."""

from __future__ import annotations

from clkt.domains.disasters.source import EVENT_TYPES, GdacsSource, item_to_payload, parse_item, parse_rss

__all__ = ["EVENT_TYPES", "GdacsSource", "item_to_payload", "parse_item", "parse_rss"]
