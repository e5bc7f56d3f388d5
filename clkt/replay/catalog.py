"""The recorded items the replay server serves, from each domain folder's package data
(`clkt/domains/<name>/data/<source>/`, read by its `replay.py` through `read_recorded`).

Each source gets a list of `Item`s: the recorded list entry (`listing`), the recorded detail response
(`detail`, None when no detail was recorded: the detail route then answers 404 like the real API) and
the item's original date. Where a list entry had to be *projected* from a recorded detail (the item was
recorded only as a detail), `projected` is True; see each folder's `data/README.md`. Nothing here is invented.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from clkt.replay.domains import Item, domain_replays
from clkt.sources.registry import SOURCE_TYPES

__all__ = ["SOURCES", "Catalog", "Item", "json_recorded", "load_catalog", "read_recorded"]

SOURCES = tuple(SOURCE_TYPES)  # the sources (`clkt.sources.registry`), each with its recorded items here


@dataclass(frozen=True)
class Catalog:
    items: dict[str, list[Item]]

    def source(self, name: str) -> list[Item]:
        return self.items.get(name, [])

    def find(self, source: str, item_id: str) -> Item | None:
        for it in self.source(source):
            if it.id == item_id:
                return it
        return None


def read_recorded(package: str, path: str) -> str:
    """A recorded response of the domain package `package`: its `data/<path>` (`<source>/<file>`), a BOM dropped."""
    return resources.files(package).joinpath("data", *path.split("/")).read_text(encoding="utf-8-sig")


def json_recorded(package: str, path: str) -> Any:
    """`read_recorded`, parsed as JSON."""
    return json.loads(read_recorded(package, path))


def _day(s: str) -> datetime:
    parts = [int(p) for p in s.split("-")] + [1, 1]
    return datetime(parts[0], parts[1] or 1, parts[2] or 1, tzinfo=UTC)


@cache
def load_catalog() -> Catalog:
    items = {source: replay.items() for source, replay in domain_replays().items()}
    return Catalog(
        items={s: items[s] for s in sorted(items, key=lambda s: SOURCES.index(s) if s in SOURCES else len(SOURCES))},
    )
