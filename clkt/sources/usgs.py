"""USGS's poller lives in its domain's folder (`clkt.domains.disasters.source`); this name stays for its importers."""

from __future__ import annotations

from clkt.domains.disasters.source import UsgsSource, parse_quake, parse_quake_list

__all__ = ["UsgsSource", "parse_quake", "parse_quake_list"]
