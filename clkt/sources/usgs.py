"""USGS earthquakes (disasters): FDSN event query by time window and minimum magnitude, then the event
detail (PAGER alert level, felt reports, tsunami flag).

Eligibility: an earthquake (`type` "earthquake") with a magnitude and a location.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import ClassVar

from clkt.config import UsgsSettings
from clkt.errors import PayloadError
from clkt.facts import Domain, EntityRecord, QuakeFacts
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
)
from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window, skipped_of

__all__ = ["UsgsSource", "parse_quake", "parse_quake_list"]


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
