"""The living upstream's entities in each API's own payload shapes (list entries and detail records).

Each function takes one `Generated` entity (`clkt.replay.stream`) and answers what the real API answers for
it, for the first domains' sources not yet in a folder (a domain folder's are its `replay.py`'s): USGS's GeoJSON
feature and one GDACS RSS `<item>`. They are exactly what `clkt.sources.<api>` parse; ids drawn for a payload
(`_ids`, which the folders' replays use too) come from the entity's own seed, so the same entity is always the same
payload.
"""

from __future__ import annotations

from datetime import timedelta
from email.utils import format_datetime
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from clkt.facts import DisasterFacts, QuakeFacts
from clkt.replay.stream import Generated

__all__ = [
    "GDACS_HEAD",
    "GDACS_TAIL",
    "gdacs_item",
    "usgs_feature",
]

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


def _day(d: Any) -> str:
    return str(d.isoformat())


def _ids(g: Generated, purpose: str, n: int, lo: int = 10_000, hi: int = 9_999_999) -> list[int]:
    r = g.rng(purpose)
    return [r.randint(lo, hi) for _ in range(n)]


# --- USGS ----------------------------------------------------------------------------------------

def usgs_feature(g: Generated) -> dict[str, Any]:
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


# --- GDACS ---------------------------------------------------------------------------------------

def gdacs_item(g: Generated, *, event_type: str) -> str:
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
