"""USGS and GDACS as the replay server serves them, both modes: the FDSN event query (a time window, magnitude bounds,
orders, `limit`/`offset`, one event by `eventid`) and the GDACS RSS feed (one page); the recorded responses (this
folder's `data/usgs/` and `data/gdacs/`) and the generated ones.

Recorded: USGS event ci3144585 was recorded only as a detail; its list entry is projected from it (the detail minus
`products`). The GDACS items keep their raw `<item>` text, re-dated as text, and the feed's own head and tail move with
its newest item. Generated: a USGS query answers the entities that occurred in its window (the real default start:
30 days back; more than `SEARCH_LIMIT` matches is the real API's 400); a GDACS feed lists the last
`GDACS_FEED_DAYS` days of alerts (at most `GDACS_FEED_MAX`); an alert's event type is drawn from its index and the
stream's seed, and is part of its id.
"""

from __future__ import annotations

import copy
import math
import re
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from functools import cache
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree as ET
from xml.sax.saxutils import escape, quoteattr

from aiohttp import web

from clkt import clock
from clkt.domains.disasters.facts import DisasterFacts, QuakeFacts
from clkt.replay.catalog import json_recorded, read_recorded
from clkt.replay.domains import DomainReplay, Item, StreamKey
from clkt.replay.generator import GENERATOR_HEADER
from clkt.replay.query import parse_time, query_int
from clkt.replay.redate import shift_text

if TYPE_CHECKING:
    from clkt.replay.generator import GeneratorRoutes
    from clkt.replay.routes import ReplayRoutes, Served
    from clkt.replay.stream import Generated

__all__ = ["GDACS_FEED_DAYS", "GDACS_FEED_MAX", "GDACS_NS", "REPLAYS", "SEARCH_LIMIT", "USGS_DEFAULT_DAYS",
           "gdacs_item", "gdacs_type", "usgs_feature"]

USGS, GDACS = "usgs", "gdacs"
_PACKAGE = __name__.rsplit(".", 1)[0]
SEARCH_LIMIT = 20000  # the real API refuses a query that matches more
USGS_DEFAULT_DAYS = 30  # the real API's default start: 30 days before now
GDACS_FEED_DAYS = 7
GDACS_FEED_MAX = 100
GDACS_NS = {"gdacs": "http://www.gdacs.org"}
_ITEM_RE = re.compile(r"<item>.*?</item>", re.S)
_YEAR_TAG = re.compile(r"(<gdacs:year>)(\d{4})(</gdacs:year>)")
_USGS_FILES = ("usgs/fdsnws-query-19940601-19941006-m8.json", "usgs/fdsnws-query-20110311-m8.8.json",
               "usgs/fdsnws-query-20170101-20170111-maxmag0.1.json")
_USGS_NOT_FOUND = "Error 404: Not Found\n\nUnknown eventid\n"
_GDACS_TYPES = ("FL", "TC", "DR", "WF", "FL", "TC")
_GDACS_NAMES = {"FL": "Flood", "TC": "Tropical cyclone", "DR": "Drought", "WF": "Forest fire"}
GDACS_HEAD = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    '<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:geo="http://www.w3.org/2003/01/geo/wgs84_pos#" '
    'xmlns:gdacs="http://www.gdacs.org" xmlns:glide="http://glidenumber.net" xmlns:atom="http://www.w3.org/2005/Atom">\n'
    "  <channel>\n    <title>GDACS RSS information (clkt replay: generated, fictional alerts)</title>\n"
    "    <link>https://www.gdacs.org/</link>\n    <description>Near real-time alerts about natural disaster with a "
    "potential humanitarian impact</description>\n    "
)
GDACS_TAIL = "\n  </channel>\n</rss>\n"


# --- the recorded responses --------------------------------------------------------------------

def _usgs_items() -> list[Item]:
    items: list[Item] = []
    seen: set[str] = set()
    for f in _USGS_FILES:
        for feat in json_recorded(_PACKAGE, f)["features"]:
            if feat["id"] in seen:
                continue
            seen.add(feat["id"])
            t = datetime.fromtimestamp(feat["properties"]["time"] / 1000, tz=UTC)
            items.append(Item(id=feat["id"], occurred=t, listing=feat, detail=feat))
    det = json_recorded(_PACKAGE, "usgs/fdsnws-event-ci3144585.json")
    listing = copy.deepcopy(det)
    listing["properties"].pop("products", None)
    listing["properties"]["detail"] = "query?eventid=ci3144585&format=geojson"
    t = datetime.fromtimestamp(det["properties"]["time"] / 1000, tz=UTC)
    items.append(Item(id=det["id"], occurred=t, listing=listing, detail=det, projected=True))
    return items


@cache
def _gdacs_feed() -> tuple[tuple[Item, ...], str, str]:
    """The recorded feed's items (each its raw `<item>` text) and the text before and after them."""
    raw = read_recorded(_PACKAGE, "gdacs/rss.xml")
    blocks = _ITEM_RE.findall(raw)
    first = raw.index(blocks[0])
    last = raw.rindex(blocks[-1]) + len(blocks[-1])
    root = ET.fromstring(raw.encode("utf-8"))  # our own recording
    items: list[Item] = []
    for block, el in zip(blocks, root.iter("item"), strict=True):
        guid = (el.findtext("guid") or "").strip()
        fromdate = el.findtext("gdacs:fromdate", namespaces=GDACS_NS) or el.findtext("pubDate") or ""
        items.append(Item(id=guid, occurred=parsedate_to_datetime(fromdate).astimezone(UTC), listing=block))
    return tuple(items), raw[:first], raw[last:]


def _gdacs_items() -> list[Item]:
    return list(_gdacs_feed()[0])


def _gdacs_year(xml: str, occurred: datetime) -> str:
    """A re-dated item's `<gdacs:year>`: the year it now occurred in."""
    return _YEAR_TAG.sub(lambda m: f"{m.group(1)}{occurred.year}{m.group(3)}", xml)


def _magnitudes(q: Any) -> tuple[float | None, float | None]:
    try:
        return (float(q["minmagnitude"]) if "minmagnitude" in q else None,
                float(q["maxmagnitude"]) if "maxmagnitude" in q else None)
    except ValueError:
        raise web.HTTPBadRequest(text="Bad minmagnitude/maxmagnitude") from None


def _paging(q: Any) -> tuple[int, int]:
    """(limit, offset) of a query; offsets count from 1, as the API's do."""
    limit, offset = query_int(q, "limit", SEARCH_LIMIT), query_int(q, "offset", 1)
    if limit < 1 or limit > SEARCH_LIMIT or offset < 1:
        raise web.HTTPBadRequest(text="Bad limit/offset")
    return limit, offset


def _in_bounds(mag: float | None, lo: float | None, hi: float | None) -> bool:
    return not ((lo is not None and (mag is None or mag < lo)) or (hi is not None and (mag is None or mag > hi)))


def _collection(request: web.Request, features: list[Any], *, generated_ms: int, title: str, limit: int,
                offset: int) -> dict[str, Any]:
    return {
        "type": "FeatureCollection",
        "metadata": {"generated": generated_ms, "url": str(request.url), "title": title, "status": 200,
                     "api": "1.12.3", "limit": limit, "offset": offset, "count": len(features)},
        "features": features,
    }


async def _usgs_recorded(routes: ReplayRoutes, request: web.Request) -> web.Response:
    q = request.query
    if "eventid" in q:
        s = routes._find(USGS, q["eventid"])
        if s is None or s.detail is None:
            return web.Response(status=404, text=_USGS_NOT_FOUND, headers=routes._headers([]))
        return routes._json(request, s.detail, [s])
    start, end = parse_time(q.get("starttime")), parse_time(q.get("endtime"))
    minmag, maxmag = _magnitudes(q)
    limit, offset = _paging(q)
    items = [s for s in routes.served[USGS] if not ((start and s.occurred < start) or (end and s.occurred > end))
             and _in_bounds(s.listing["properties"].get("mag"), minmag, maxmag)]
    order = q.get("orderby", "time")
    if order.startswith("magnitude"):
        items.sort(key=lambda s: (s.listing["properties"].get("mag") or 0, s.id), reverse=order == "magnitude")
    else:
        items.sort(key=lambda s: (s.occurred, s.id), reverse=order == "time")
    chunk = items[offset - 1: offset - 1 + limit]
    data = _collection(request, [s.listing for s in chunk], generated_ms=int(routes.last_modified.timestamp() * 1000),
                       title="USGS Earthquakes", limit=limit, offset=offset)
    return routes._json(request, data, chunk, conditional=True)


async def _gdacs_recorded(routes: ReplayRoutes, request: web.Request) -> web.Response:
    items: list[Served] = sorted(routes.served[GDACS], key=lambda s: (s.occurred, s.id), reverse=True)
    recorded, head, tail = _gdacs_feed()
    plan = routes.plans.get(GDACS) if routes.plans else None
    if plan is not None and recorded:  # the channel's own dates move with its newest item
        delta = plan.delta(max(recorded, key=lambda it: it.occurred).id)
        head, tail = shift_text(head, delta), shift_text(tail, delta)
    xml = head + "\n    ".join(s.listing for s in items) + tail
    return routes._respond(request, xml.encode("utf-8"), "application/rss+xml", items, conditional=True)


# --- the generated ones ------------------------------------------------------------------------

def usgs_feature(g: Generated) -> dict[str, Any]:
    """A generated earthquake as the API's GeoJSON feature (list entry and detail alike)."""
    f = g.facts_as(QuakeFacts)
    ms = int(f.time_utc.timestamp() * 1000)
    return {
        "type": "Feature", "id": g.external_id,
        "properties": {
            "mag": f.magnitude, "place": f.place, "time": ms, "updated": int(g.published.timestamp() * 1000),
            "tz": None, "url": f"https://earthquake.usgs.gov/earthquakes/eventpage/{g.external_id}", "felt": f.felt,
            "cdi": None, "mmi": f.mmi, "alert": f.alert, "status": "reviewed", "tsunami": 1 if f.tsunami else 0,
            "sig": round(f.magnitude * 100), "net": "cg", "code": g.external_id[2:], "magType": f.mag_type,
            "type": "earthquake", "title": f.title,
        },
        "geometry": {"type": "Point", "coordinates": [f.longitude, f.latitude, f.depth_km]},
    }


def gdacs_type(stream: StreamKey, index: int) -> str:
    """A disaster's GDACS event type, known from its index alone (it is part of the id)."""
    return _GDACS_TYPES[math.floor(stream.unit(GDACS, index, "type") * len(_GDACS_TYPES))]


def gdacs_item(g: Generated, *, event_type: str) -> str:
    """A generated alert as one `<item>` of the feed."""
    f = g.facts_as(DisasterFacts)
    kind = _GDACS_NAMES.get(event_type, event_type)
    start = g.occurred.replace(microsecond=0)
    event_id = g.external_id[2:]
    name = f.name.split(" ")[0]  # the invented word the control split's maker named it by
    alert = (f.alert or {"past": "Green", "alert": "Orange"}.get(f.status or "", "Green")).capitalize()
    rfc = format_datetime(start, usegmt=True)
    until = format_datetime(start + timedelta(days=3), usegmt=True)
    text = (f"{alert} {kind.lower()} alert in {f.country}: {f.affected} people affected." if f.affected is not None
            else f"{alert} {kind.lower()} alert in {f.country}.")
    fields = [
        f"<title>{escape(text)}</title>", f"<description>{escape(text)}</description>",
        f"<link>https://www.gdacs.org/report.aspx?eventtype={event_type}&amp;eventid={event_id}</link>",
        f"<pubDate>{format_datetime(g.published.replace(microsecond=0), usegmt=True)}</pubDate>",
        f'<guid isPermaLink="false">{g.external_id}</guid>',
        f"<gdacs:eventtype>{event_type}</gdacs:eventtype>", f"<gdacs:eventid>{event_id}</gdacs:eventid>",
        "<gdacs:episodeid>1</gdacs:episodeid>", f"<gdacs:alertlevel>{alert}</gdacs:alertlevel>",
        f"<gdacs:fromdate>{rfc}</gdacs:fromdate>", f"<gdacs:todate>{until}</gdacs:todate>",
        f"<gdacs:country>{escape(f.country)}</gdacs:country>", "<gdacs:iscurrent>true</gdacs:iscurrent>",
        f"<gdacs:eventname>{escape(name)}</gdacs:eventname>",
        f"<gdacs:glide>{escape(f.glide or '')}</gdacs:glide>",
    ]
    if f.affected is not None:
        fields.append(f"<gdacs:population value={quoteattr(str(f.affected))} unit=\"people\">"
                      f"{f.affected} people affected</gdacs:population>")
    return "<item>\n      " + "\n      ".join(fields) + "\n    </item>"


def _usgs_not_found() -> web.Response:
    return web.Response(status=404, text=_USGS_NOT_FOUND, headers={"X-Clkt-Replay": "true", GENERATOR_HEADER: "true"})


async def _usgs_generated(gen: GeneratorRoutes, request: web.Request) -> web.Response:
    q = request.query
    if "eventid" in q:
        g = gen._find(USGS, q["eventid"])
        return _usgs_not_found() if g is None else gen._json(request, usgs_feature(g))
    now = clock.now()
    end = parse_time(q.get("endtime")) or now
    start = parse_time(q.get("starttime")) or (now - timedelta(days=USGS_DEFAULT_DAYS))
    minmag, maxmag = _magnitudes(q)
    limit, offset = _paging(q)
    # the end is inclusive at the API (the start too): [start, end + 1 s) at its second precision
    window_end = end + timedelta(seconds=1)
    if gen.stream.count_between(USGS, start, window_end, now=now) > SEARCH_LIMIT:
        raise web.HTTPBadRequest(text=f"Error 400: Bad Request\n\n{SEARCH_LIMIT} matching events exceeds search limit")
    features = [f for f in (usgs_feature(gen.stream.entity(USGS, i))
                            for i in gen.stream.occurred_between(USGS, start, window_end, now=now))
                if _in_bounds(f["properties"]["mag"], minmag, maxmag)]
    order = q.get("orderby", "time")
    if order.startswith("magnitude"):
        features.sort(key=lambda f: (f["properties"]["mag"], f["id"]), reverse=order == "magnitude")
    elif order == "time":
        features.reverse()  # newest first, the API's default
    data = _collection(request, features[offset - 1: offset - 1 + limit], generated_ms=int(now.timestamp() * 1000),
                       title="USGS Earthquakes (clkt replay: generated, fictional)", limit=limit, offset=offset)
    return gen._json(request, data, conditional=True)


async def _gdacs_generated(gen: GeneratorRoutes, request: web.Request) -> web.Response:
    now = clock.now()
    _, items = gen._page(GDACS, now - timedelta(days=GDACS_FEED_DAYS), now, offset=0, limit=GDACS_FEED_MAX,
                         newest_first=True)
    body = GDACS_HEAD + "\n    ".join(
        gdacs_item(g, event_type=gdacs_type(gen.stream, g.index)) for g in items) + GDACS_TAIL
    return gen._respond(request, body.encode("utf-8"), "application/rss+xml", conditional=True)


REPLAYS = (
    DomainReplay(
        source=USGS, paths=("/usgs/query",), items=_usgs_items, recorded=_usgs_recorded, generated=_usgs_generated,
        lag_s=(60, 1800),  # a quake is listed minutes after
        external_id=lambda tag, i: f"cg{tag:03d}{i:09d}", id_pattern=re.compile(r"^cg(?P<tag>\d{3})(?P<i>\d{9})$"),
    ),
    DomainReplay(
        source=GDACS, paths=("/gdacs/xml/rss.xml",), items=_gdacs_items, recorded=_gdacs_recorded,
        generated=_gdacs_generated, lag_s=(3600, 12 * 3600),  # an alert hours after the disaster began
        stream_id=lambda stream, i: f"{gdacs_type(stream, i)}{stream.tag:03d}{i:09d}",
        id_pattern=re.compile(r"^[A-Z]{2}(?P<tag>\d{3})(?P<i>\d{9})$"), retext=_gdacs_year,
    ),
)
