"""Deezer's poller lives in its domain's folder (`clkt.domains.music.source`); this name stays for its importers."""

from __future__ import annotations

from clkt.domains.music.source import DeezerSource, parse_album, parse_releases, raise_for_error

__all__ = ["DeezerSource", "parse_album", "parse_releases", "raise_for_error"]
