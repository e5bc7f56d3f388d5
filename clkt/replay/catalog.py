"""The recorded items the replay server serves, loaded from the package data (`clkt/replay/data/`).

Each source gets a list of `Item`s: the recorded list entry (`listing`), the recorded detail response
(`detail`, None when no detail was recorded: the detail route then answers 404 like the real API) and
the item's original date. Where a list entry had to be *projected* from a recorded detail (the item was
recorded only as a detail), `projected` is True; see `data/README.md`. Nothing here is invented.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import cache
from importlib import resources
from typing import Any
from xml.etree import ElementTree as ET

from clkt.domains.disasters.source import GdacsSource, UsgsSource
from clkt.replay.domains import Item, domain_replays
from clkt.sources.registry import SOURCE_TYPES

__all__ = ["GDACS_NS", "SOURCES", "Catalog", "Item", "load_catalog"]

SOURCES = tuple(SOURCE_TYPES)  # the sources (`clkt.sources.registry`), each with its recorded items here
GDACS_NS = {"gdacs": "http://www.gdacs.org"}
_ITEM_RE = re.compile(r"<item>.*?</item>", re.S)


@dataclass(frozen=True)
class Catalog:
    items: dict[str, list[Item]]
    gdacs_head: str
    gdacs_tail: str

    def source(self, name: str) -> list[Item]:
        return self.items.get(name, [])

    def find(self, source: str, item_id: str) -> Item | None:
        for it in self.source(source):
            if it.id == item_id:
                return it
        return None


def _read(path: str) -> str:
    return resources.files("clkt.replay").joinpath("data", path).read_text(encoding="utf-8-sig")


def _json(path: str) -> Any:
    return json.loads(_read(path))


def _day(s: str) -> datetime:
    parts = [int(p) for p in s.split("-")] + [1, 1]
    return datetime(parts[0], parts[1] or 1, parts[2] or 1, tzinfo=UTC)


def _usgs() -> list[Item]:
    items: list[Item] = []
    seen: set[str] = set()
    for f in (
        "usgs/fdsnws-query-19940601-19941006-m8.json",
        "usgs/fdsnws-query-20110311-m8.8.json",
        "usgs/fdsnws-query-20170101-20170111-maxmag0.1.json",
    ):
        for feat in _json(f)["features"]:
            if feat["id"] in seen:
                continue
            seen.add(feat["id"])
            t = datetime.fromtimestamp(feat["properties"]["time"] / 1000, tz=UTC)
            items.append(Item(id=feat["id"], occurred=t, listing=feat, detail=feat))
    det = _json("usgs/fdsnws-event-ci3144585.json")
    listing = copy.deepcopy(det)
    listing["properties"].pop("products", None)
    listing["properties"]["detail"] = "query?eventid=ci3144585&format=geojson"
    t = datetime.fromtimestamp(det["properties"]["time"] / 1000, tz=UTC)
    items.append(Item(id=det["id"], occurred=t, listing=listing, detail=det, projected=True))
    return items


def _gdacs() -> tuple[list[Item], str, str]:
    raw = _read("gdacs/rss.xml")
    blocks = _ITEM_RE.findall(raw)
    first = raw.index(blocks[0])
    last = raw.rindex(blocks[-1]) + len(blocks[-1])
    head, tail = raw[:first], raw[last:]
    root = ET.fromstring(raw.encode("utf-8"))
    items: list[Item] = []
    for block, el in zip(blocks, root.iter("item"), strict=True):
        guid = (el.findtext("guid") or "").strip()
        fromdate = el.findtext("gdacs:fromdate", namespaces=GDACS_NS) or el.findtext("pubDate") or ""
        occurred = parsedate_to_datetime(fromdate).astimezone(UTC)
        items.append(Item(id=guid, occurred=occurred, listing=block))
    return items, head, tail


@cache
def load_catalog() -> Catalog:
    gdacs, head, tail = _gdacs()
    items = {
        UsgsSource.name: _usgs(), GdacsSource.name: gdacs,
        **{source: replay.items() for source, replay in domain_replays().items()},
    }
    return Catalog(
        items={s: items[s] for s in sorted(items, key=lambda s: SOURCES.index(s) if s in SOURCES else len(SOURCES))},
        gdacs_head=head,
        gdacs_tail=tail,
    )
