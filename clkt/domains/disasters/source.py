"""The disasters pollers: USGS earthquakes (the domain's first source) and GDACS alerts (its second).

USGS: FDSN event query by time window and minimum magnitude, then the event detail (PAGER alert level, felt
reports, tsunami flag). Eligibility: an earthquake (`type` "earthquake") with a magnitude and a location.

GDACS: the RSS feed of current alerts (floods, cyclones, volcanoes, droughts, wildfires). The feed is one page,
fetched with ETag / If-Modified-Since. Each `<item>` becomes a flat typed mapping (the payload) and then
`DisasterFacts`. Earthquakes are skipped by default (`skip_types`), because USGS covers them: the same quake from
two sources would be one fact counted twice. Eligibility: impact figures (the population exposed, or a death toll).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar
from xml.etree import ElementTree as ET

from clkt.domains.disasters.facts import DisasterFacts, QuakeFacts
from clkt.domains.disasters.settings import GdacsSettings, UsgsSettings
from clkt.errors import PayloadError
from clkt.facts import Domain, EntityRecord
from clkt.sources._parse import (
    Items,
    arr,
    bounded,
    each,
    guard,
    obj,
    opt_float,
    opt_int,
    opt_str,
    plausible_year,
    req_float,
    req_int,
    req_str,
    xml_feed,
)
from clkt.sources.base import (
    PollPage,
    Source,
    SourceLicence,
    SourceRef,
    Window,
    record_of_listing,
    skipped_of,
)

__all__ = ["EVENT_TYPES", "GdacsSource", "UsgsSource", "item_to_payload", "parse_item", "parse_quake",
           "parse_quake_list", "parse_rss"]

def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds")


@guard
def parse_quake_list(payload: object) -> Items[SourceRef]:
    p = obj(payload, "feature collection")

    def one(x: object) -> SourceRef:
        f = obj(x, "feature")
        props = obj(f.get("properties") or {}, "properties")
        return SourceRef(external_id=req_str(f, "id"), name=opt_str(props, "title") or "")

    return each(arr(p, "features"), "feature", one)


def _pager_alert(props: dict[str, object]) -> str | None:
    products = props.get("products")
    if not isinstance(products, dict):
        return None
    for p in products.get("losspager") or []:
        if isinstance(p, dict) and isinstance(p.get("properties"), dict):
            level = opt_str(p["properties"], "alertlevel")
            if level:
                return level
    return None


@guard
def parse_quake(payload: object) -> EntityRecord:
    f = obj(payload, "feature")
    event_id = req_str(f, "id")
    props = dict(obj(f.get("properties"), "properties"))
    kind = opt_str(props, "type") or "earthquake"
    if kind != "earthquake":
        raise PayloadError("not_earthquake", f"{event_id}: {kind}")
    if props.get("mag") is None:
        raise PayloadError("no_magnitude", event_id)
    mag = bounded(req_float(props, "mag"), "mag", -2.0, 10.5)
    ms = req_int(props, "time")
    try:
        when = plausible_year(datetime.fromtimestamp(ms / 1000, tz=UTC), "time")
    except (OverflowError, OSError, ValueError):
        raise PayloadError("bad_date", f"time={ms}") from None
    geom = obj(f.get("geometry"), "geometry")
    coords = arr(geom, "coordinates", required=True)
    if len(coords) < 3:
        raise PayloadError("missing_field", "geometry.coordinates (lon, lat, depth)")
    c = {"lon": coords[0], "lat": coords[1], "depth": coords[2]}
    lon = bounded(req_float(c, "lon"), "longitude", -180.0, 180.0)
    lat = bounded(req_float(c, "lat"), "latitude", -90.0, 90.0)
    depth = bounded(req_float(c, "depth"), "depth", -15.0, 800.0)
    place = opt_str(props, "place") or f"{lat:.2f}, {lon:.2f}"
    title = opt_str(props, "title") or f"M {mag:g} - {place}"
    tsunami = opt_int(props, "tsunami")
    felt = opt_int(props, "felt")
    facts = QuakeFacts(
        title=title, place=place, time_utc=when, magnitude=mag, mag_type=opt_str(props, "magType"), depth_km=depth,
        latitude=lat, longitude=lon, alert=opt_str(props, "alert") or _pager_alert(props), tsunami=bool(tsunami),
        felt=felt if felt is not None and felt >= 0 else None, mmi=bounded(opt_float(props, "mmi"), "mmi", 0, 12),
        cdi=bounded(opt_float(props, "cdi"), "cdi", 0, 12),
        significance=opt_int(props, "sig"),
    )
    return EntityRecord(
        source=UsgsSource.name, external_id=event_id, domain=Domain.disasters, name=f"{title} ({when.date().isoformat()})",
        occurred_at=when, payload=dict(f), facts=facts,
    )


class UsgsSource(Source[UsgsSettings]):
    name: ClassVar[str] = "usgs"
    domain: ClassVar[Domain] = Domain.disasters
    kind: ClassVar[str] = "quake"
    licence: ClassVar[SourceLicence] = SourceLicence(
        provider="U.S. Geological Survey Earthquake Hazards Program, https://earthquake.usgs.gov",
        terms="USGS-authored data are in the U.S. public domain; please credit the USGS.",
    )

    async def poll(self, window: Window, page: int) -> PollPage:
        limit = self.settings.options.page_size
        params = {
            "format": "geojson", "eventtype": "earthquake", "orderby": "time-asc",
            "starttime": _iso(window.start), "endtime": _iso(window.end),
            "minmagnitude": self.settings.options.min_magnitude, "limit": limit, "offset": (page - 1) * limit + 1,
        }
        got = await self.client.get_json("query", params=params, cache=True)
        parsed: Items[SourceRef] = Items() if got.data is None else parse_quake_list(got.data)
        refs = [r.model_copy(update={"redated_from": got.original_dates.get(r.external_id)}) for r in parsed]
        served = len(parsed) + len(parsed.skipped)
        return PollPage(refs=refs, next_page=page + 1 if served >= limit else None, not_modified=got.not_modified,
                        skipped=skipped_of(parsed))

    async def fetch(self, ref: SourceRef) -> EntityRecord:
        got = await self.client.get_json("query", params={"format": "geojson", "eventid": ref.external_id})
        if got.data is None:
            raise PayloadError("not_found", f"event {ref.external_id}: HTTP {got.status}")
        rec = parse_quake(got.data)
        return rec.model_copy(update={"redated_from": got.original_dates.get(rec.external_id)})


# --- GDACS ----------------------------------------------------------------------------------------

NS = {
    "gdacs": "http://www.gdacs.org",
    "geo": "http://www.w3.org/2003/01/geo/wgs84_pos#",
    "glide": "http://glidenumber.net",
    "dc": "http://purl.org/dc/elements/1.1/",
}
EVENT_TYPES = {"EQ": "Earthquake", "TC": "Tropical cyclone", "FL": "Flood", "VO": "Volcanic eruption",
               "DR": "Drought", "WF": "Wildfire", "TS": "Tsunami"}
_FIELDS = ("title", "description", "link", "pubDate", "guid")
_GDACS_FIELDS = ("eventtype", "eventid", "episodeid", "alertlevel", "alertscore", "fromdate", "todate", "country",
                 "iso3", "iscurrent", "eventname", "glide")


_YEAR4 = re.compile(r"\b\d{4}\b")


def _rfc822(s: str, key: str) -> datetime:
    # email.utils reads a 2-digit year as 19xx/20xx ("0000" would become 2000): require four digits
    if not _YEAR4.search(s):
        raise PayloadError("bad_date", f"{key}={s[:40]!r} has no four-digit year")
    try:
        dt = parsedate_to_datetime(s)
    except (TypeError, ValueError, IndexError, OverflowError):
        raise PayloadError("bad_date", f"{key}={s[:40]!r}") from None
    return plausible_year((dt if dt.tzinfo else dt.replace(tzinfo=UTC)).astimezone(UTC), key)


def item_to_payload(el: ET.Element) -> dict[str, Any]:
    """One RSS `<item>` as a flat JSON-able mapping (the stored payload)."""
    out: dict[str, Any] = {}
    for f in _FIELDS:
        v = el.findtext(f)
        if v is not None:
            out[f] = v.strip()
    for f in _GDACS_FIELDS:
        v = el.findtext(f"gdacs:{f}", namespaces=NS)
        if v is not None:
            out[f] = v.strip()
    for f in ("severity", "population"):
        node = el.find(f"gdacs:{f}", NS)
        if node is not None:
            out[f] = {"value": node.get("value"), "unit": node.get("unit"), "text": (node.text or "").strip()}
    lat, lon = el.findtext("geo:Point/geo:lat", namespaces=NS), el.findtext("geo:Point/geo:long", namespaces=NS)
    if lat is not None and lon is not None:
        out["point"] = {"lat": lat.strip(), "long": lon.strip()}
    return out


@guard
def parse_rss(data: object) -> Items[SourceRef]:
    if not isinstance(data, ET.Element):
        raise PayloadError("bad_type", "the GDACS feed is not XML")

    def one(el: ET.Element) -> SourceRef:
        payload = item_to_payload(el)
        guid = payload.get("guid") or ""
        if not guid:
            raise PayloadError("missing_field", "guid")
        when = payload.get("fromdate") or payload.get("pubDate")
        return SourceRef(external_id=guid, name=payload.get("title", ""), listing=payload,
                         occurred_at=_rfc822(when, "fromdate") if when else None)

    return each(list(data.iter("item")), "item", one)


@guard
def parse_item(payload: object, *, skip_types: frozenset[str] = frozenset({"EQ"})) -> EntityRecord:
    p = obj(payload, "gdacs item")
    guid = req_str(p, "guid")
    etype = req_str(p, "eventtype")
    if etype in skip_types:
        raise PayloadError("covered_by_other_source", f"{guid}: {etype} events come from USGS")
    when = _rfc822(req_str(p, "fromdate"), "fromdate")
    country = opt_str(p, "country") or "unknown country"
    pop = p.get("population")
    affected = opt_int(obj(pop, "population"), "value") if pop is not None else None
    if affected is None or affected < 0:
        raise PayloadError("no_impact", f"{guid}: no population figure")
    kind = EVENT_TYPES.get(etype, etype)
    name = opt_str(p, "eventname")
    label = f"{kind} {name}" if name else f"{kind} in {country}"
    iscurrent = opt_str(p, "iscurrent")
    facts = DisasterFacts(
        name=f"{label} ({when.date().isoformat()})", disaster_type=kind, country=country,
        countries=[c.strip() for c in country.split(",") if c.strip()], date=when.date(),
        status="ongoing" if iscurrent == "true" else "past" if iscurrent == "false" else None,
        glide=opt_str(p, "glide"), alert=opt_str(p, "alertlevel"), affected=affected,
        summary=opt_str(p, "description"),
    )
    return EntityRecord(
        source=GdacsSource.name, external_id=guid, domain=Domain.disasters, name=facts.name, occurred_at=when,
        payload=dict(p), facts=facts,
    )


class GdacsSource(Source[GdacsSettings]):
    name: ClassVar[str] = "gdacs"
    domain: ClassVar[Domain] = Domain.disasters
    kind: ClassVar[str] = "disaster"
    licence: ClassVar[SourceLicence] = SourceLicence(
        provider="Global Disaster Alert and Coordination System (GDACS), https://www.gdacs.org",
        terms=(
            "GDACS data, subject to the GDACS terms of use (free use with attribution to GDACS, a cooperation "
            "framework of the UN and the European Commission)."
        ),
    )
    paged: ClassVar[bool] = False

    async def poll(self, window: Window, page: int) -> PollPage:
        got = await self.client.get("xml/rss.xml", decode=xml_feed, cache=True)
        if got.data is None:
            raise PayloadError("not_found", got.url)
        parsed = parse_rss(got.data)
        refs = [
            r.model_copy(update={"redated_from": got.original_dates.get(r.external_id)}) for r in parsed
            if r.occurred_at is not None and window.start <= r.occurred_at < window.end
        ]
        return PollPage(refs=refs, next_page=None, not_modified=got.not_modified, skipped=skipped_of(parsed))

    async def fetch(self, ref: SourceRef) -> EntityRecord:
        skip = frozenset(str(x) for x in self.settings.options.skip_types)
        return record_of_listing(ref, lambda entry: parse_item(entry, skip_types=skip))


SOURCES = (UsgsSource, GdacsSource)
