"""The music sources as the replay server serves them, both modes: MusicBrainz's release search (a Lucene
`date:[a TO b]` window) and lookup, Deezer's editorial releases (newest first), album and tracks; the recorded
responses (`data/musicbrainz/` and `data/deezer/`, where the parsers' tests read them too; a list entry
projected from a recorded lookup where only the lookup was recorded) and the generated ones."""

from __future__ import annotations

import copy
import re
from datetime import date, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from aiohttp import web

from clkt import clock
from clkt.domains.music.facts import ReleaseFacts
from clkt.replay.catalog import _day, json_recorded
from clkt.replay.domains import DomainReplay, Item
from clkt.replay.generator import _midnight
from clkt.replay.payloads import _ids
from clkt.replay.query import parse_day, query_int

if TYPE_CHECKING:
    from clkt.replay.generator import GeneratorRoutes
    from clkt.replay.routes import ReplayRoutes, Served
    from clkt.replay.stream import Generated

__all__ = ["DEFAULT_LIMIT", "REPLAYS", "deezer_album", "deezer_release", "mb_lookup", "mb_search_entry"]

_json = partial(json_recorded, __name__.rpartition(".")[0])  # this folder's recordings: `data/<source>/<file>`

DEFAULT_LIMIT = 25  # both APIs' page when none is asked for
_MB_DATE = re.compile(r"date:\[\s*(\S+)\s+TO\s+(\S+)\s*\]", re.I)
_MB_NOT_FOUND = {"error": "Not Found", "help": "For usage, please see: https://musicbrainz.org/development/mmd"}
_DEEZER_NO_DATA = {"error": {"type": "DataException", "message": "no data", "code": 800}}
_MB_SEARCH, _MB_LOOKUP = "/musicbrainz/release", "/musicbrainz/release/{mbid}"
_DZ_RELEASES, _DZ_ALBUM = "/deezer/editorial/{id}/releases", "/deezer/album/{id}"


# --- the recorded responses --------------------------------------------------------------------

def _mb_listing(lookup: dict[str, Any]) -> dict[str, Any]:
    """Project a recorded lookup onto the search-result shape (the fields a search returns)."""
    keep = ("id", "title", "status", "status-id", "packaging", "packaging-id", "text-representation",
            "artist-credit", "release-group", "date", "country", "release-events", "barcode", "label-info")
    out = {k: copy.deepcopy(lookup[k]) for k in keep if k in lookup}
    out["score"] = 100
    out["track-count"] = sum(int(m.get("track-count") or 0) for m in lookup.get("media", []))
    out["media"] = [
        {k: m[k] for k in ("format", "disc-count", "track-count") if k in m} for m in lookup.get("media", [])
    ]
    return out


def _mb_items() -> list[Item]:
    lookup = _json("musicbrainz/release-lookup-94ad3a58.json")
    items = [Item(id=lookup["id"], occurred=_day(lookup["date"]), listing=_mb_listing(lookup), detail=lookup,
                  projected=True)]
    for r in _json("musicbrainz/release-search-rumours.json")["releases"]:
        if r["id"] != lookup["id"]:
            items.append(Item(id=r["id"], occurred=_day(r["date"]), listing=r))
    return items


def _deezer_items() -> list[Item]:
    album = _json("deezer/album-302127.json")
    items: list[Item] = []
    for r in _json("deezer/editorial-106-releases.json")["data"]:
        items.append(Item(id=str(r["id"]), occurred=_day(r["release_date"]), listing=r))
    keep = ("id", "title", "cover", "cover_small", "cover_medium", "cover_big", "cover_xl", "md5_image",
            "release_date", "tracklist", "artist", "type", "record_type")
    listing = {k: copy.deepcopy(album[k]) for k in keep if k in album}
    if isinstance(listing.get("artist"), dict):
        listing["artist"] = {k: v for k, v in listing["artist"].items() if k in ("id", "name", "tracklist", "type")}
    tracks = _json("deezer/album-302127-tracks.json")
    items.append(
        Item(id=str(album["id"]), occurred=_day(album["release_date"]), listing=listing, detail=album,
             extras={"tracks": tracks}, projected=True)
    )
    return items


def _mb_query(request: web.Request) -> tuple[date | None, date | None, int, int]:
    """(from, to, limit, offset) of a release search: its `date:[a TO b]` window (`*`: an open end)."""
    q = request.query
    m = _MB_DATE.search(q.get("query", ""))
    lo = None if not m or m.group(1) == "*" else parse_day(m.group(1))
    hi = None if not m or m.group(2) == "*" else parse_day(m.group(2))
    return lo, hi, min(max(query_int(q, "limit", DEFAULT_LIMIT), 1), 100), max(query_int(q, "offset", 0), 0)


async def _mb_recorded(routes: ReplayRoutes, request: web.Request) -> web.Response:
    if "mbid" in request.match_info:
        s = routes._find("musicbrainz", request.match_info["mbid"])
        if s is None or s.detail is None:
            return routes._json(request, _MB_NOT_FOUND, [], status=404)
        return routes._json(request, s.detail, [s])
    lo, hi, limit, offset = _mb_query(request)

    def day(s: Served) -> date | None:
        return s.occurred.date() if str(s.listing.get("date") or "") else None

    items = routes._window(routes.served["musicbrainz"], lo, hi, day)
    items.sort(key=lambda s: (s.occurred, s.id))
    chunk = items[offset: offset + limit]
    data = {"created": routes.last_modified.isoformat().replace("+00:00", "Z"), "count": len(items),
            "offset": offset, "releases": [s.listing for s in chunk]}
    return routes._json(request, data, chunk, conditional=True)


def _deezer_page(request: web.Request, total: int) -> tuple[int, int, str | None]:
    """(index, limit, the next page's URL or None) of an editorial's releases."""
    index = max(query_int(request.query, "index", 0), 0)
    limit = max(query_int(request.query, "limit", DEFAULT_LIMIT), 1)
    more = f"{request.url.origin()}/deezer/editorial/{request.match_info['id']}/releases?index={index + limit}"
    return index, limit, more if index + limit < total else None


async def _deezer_recorded(routes: ReplayRoutes, request: web.Request) -> web.Response:
    if request.path.endswith("/releases"):
        # one editorial list was recorded (106 "Electro"); it is also a true subset of 0 "All"
        if request.match_info["id"] not in ("0", "106"):
            return routes._json(request, _DEEZER_NO_DATA, [])
        items = sorted(routes.served["deezer"], key=lambda s: (s.listing.get("release_date", ""), s.id), reverse=True)
        index, limit, more = _deezer_page(request, len(items))
        chunk = items[index: index + limit]
        data: dict[str, Any] = {"data": [s.listing for s in chunk], "total": len(items)}
        if more:
            data["next"] = more
        return routes._json(request, data, chunk, conditional=True)
    s = routes._find("deezer", request.match_info["id"])
    tracks = request.path.endswith("/tracks")
    if s is None or (s.detail is None if not tracks else "tracks" not in s.extras):
        return routes._json(request, _DEEZER_NO_DATA, [])
    return routes._json(request, s.extras["tracks"] if tracks else s.detail, [s])


# --- the generated ones ------------------------------------------------------------------------

def _mbid(g: Generated, purpose: str, k: int = 0) -> str:
    n = g.rng(f"mb-{purpose}-{k}").getrandbits(128)
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _artist_credit(g: Generated, f: ReleaseFacts) -> list[dict[str, Any]]:
    out = []
    for k, a in enumerate(f.artists):
        join = " & " if k < len(f.artists) - 1 else ""
        out.append({"name": a, "joinphrase": join, "artist": {"id": _mbid(g, "artist", k), "name": a, "sort-name": a}})
    return out


def mb_search_entry(g: Generated) -> dict[str, Any]:
    """A generated release as MusicBrainz's search lists it."""
    f = g.facts_as(ReleaseFacts)
    return {
        "id": g.external_id, "score": 100, "title": f.title, "status": "Official", "date": f.release_date.isoformat(),
        "country": "XW", "artist-credit": _artist_credit(g, f), "track-count": len(f.tracks),
        "release-group": {"id": _mbid(g, "group"), "title": f.title, "primary-type": f.release_type or "Album"},
    }


def mb_lookup(g: Generated) -> dict[str, Any]:
    """A generated release as MusicBrainz's lookup answers it (recordings, artist credits, labels, group)."""
    f = g.facts_as(ReleaseFacts)
    tracks = [
        {"id": _mbid(g, "track", t.position), "position": t.position, "number": str(t.position), "title": t.title,
         "length": (t.length_s or 0) * 1000 or None,
         "recording": {"id": _mbid(g, "recording", t.position), "title": t.title, "video": False,
                       "length": (t.length_s or 0) * 1000 or None}}
        for t in f.tracks
    ]
    return {
        "id": g.external_id, "title": f.title, "status": "Official", "date": f.release_date.isoformat(),
        "country": "XW", "barcode": f"{g.rng('barcode').randint(10**11, 10**12 - 1)}",
        "artist-credit": _artist_credit(g, f),
        "label-info": [{"catalog-number": f"CLK-{g.index:05d}", "label": {"id": _mbid(g, "label"), "name": f.label}}]
        if f.label else [],
        "release-group": {"id": _mbid(g, "group"), "title": f.title, "primary-type": f.release_type or "Album"},
        "media": [{"position": 1, "format": "Digital Media", "track-count": len(tracks), "tracks": tracks}],
        "genres": [],
    }


def deezer_release(g: Generated) -> dict[str, Any]:
    """A generated release as a Deezer editorial lists it."""
    f = g.facts_as(ReleaseFacts)
    artist_id = _ids(g, "deezer-artist", 1)[0]
    return {"id": int(g.external_id), "title": f.title, "release_date": f.release_date.isoformat(),
            "record_type": (f.release_type or "album").lower(), "explicit_lyrics": False,
            "artist": {"id": artist_id, "name": f.artists[0], "type": "artist"}, "type": "album"}


def deezer_album(g: Generated) -> dict[str, Any]:
    """A generated release as Deezer's album lookup answers it (contributors, tracks)."""
    f = g.facts_as(ReleaseFacts)
    listing = deezer_release(g)
    track_ids = _ids(g, "deezer-tracks", len(f.tracks), 10**8, 10**9)
    return {
        **listing, "upc": f"{g.rng('upc').randint(10**11, 10**12 - 1)}", "label": f.label, "nb_tracks": len(f.tracks),
        "duration": sum(t.length_s or 0 for t in f.tracks), "genres": {"data": []},
        "contributors": [{"id": listing["artist"]["id"] + k, "name": a, "role": "Main", "type": "artist"}
                         for k, a in enumerate(f.artists)],
        "tracks": {"data": [{"id": tid, "title": t.title, "duration": t.length_s or 0, "track_position": t.position,
                             "type": "track"} for tid, t in zip(track_ids, f.tracks, strict=True)]},
    }


async def _mb_generated(gen: GeneratorRoutes, request: web.Request) -> web.Response:
    if "mbid" in request.match_info:
        g = gen._find("musicbrainz", request.match_info["mbid"])
        if g is None:
            return gen._json(request, _MB_NOT_FOUND, status=404)
        return gen._json(request, mb_lookup(g))
    lo, hi, limit, offset = _mb_query(request)
    total, items = gen._page(
        "musicbrainz", _midnight(lo) if lo else gen.stream.start,
        _midnight(hi) + timedelta(days=1) if hi else clock.now(), offset=offset, limit=limit,
    )
    data = {"created": clock.now().replace(microsecond=0).isoformat().replace("+00:00", "Z"), "count": total,
            "offset": offset, "releases": [mb_search_entry(g) for g in items]}
    return gen._json(request, data, conditional=True)


async def _deezer_generated(gen: GeneratorRoutes, request: web.Request) -> web.Response:
    if request.path.endswith("/releases"):
        if not request.match_info["id"].isdigit():
            return gen._json(request, _DEEZER_NO_DATA)
        index, limit, _ = _deezer_page(request, 0)
        total, items = gen._page("deezer", gen.stream.start, clock.now(), offset=index, limit=limit, newest_first=True)
        data: dict[str, Any] = {"data": [deezer_release(g) for g in items], "total": total}
        if (more := _deezer_page(request, total)[2]) is not None:
            data["next"] = more
        return gen._json(request, data, conditional=True)
    g = gen._find("deezer", request.match_info["id"])
    if g is None:
        return gen._json(request, _DEEZER_NO_DATA)
    if request.path.endswith("/tracks"):
        tracks = deezer_album(g)["tracks"]["data"]
        return gen._json(request, {"data": tracks, "total": len(tracks)})
    return gen._json(request, deezer_album(g))


REPLAYS = (
    DomainReplay(
        source="musicbrainz", paths=(_MB_SEARCH, _MB_LOOKUP), items=_mb_items, recorded=_mb_recorded,
        generated=_mb_generated, lag_s=(0, 6 * 3600), external_id=lambda tag, i: f"c1c7{tag:04x}-0000-4000-8000-{i:012x}",
        id_pattern=re.compile(r"^c1c7(?P<tag>[0-9a-f]{4})-0000-4000-8000-(?P<i>[0-9a-f]{12})$"), id_base=16,
    ),
    DomainReplay(
        source="deezer", paths=(_DZ_RELEASES, _DZ_ALBUM, _DZ_ALBUM + "/tracks"), items=_deezer_items,
        recorded=_deezer_recorded, generated=_deezer_generated, lag_s=(0, 6 * 3600),
        external_id=lambda tag, i: str((8 * 1000 + tag) * 10**9 + i),
        id_pattern=re.compile(r"^8(?P<tag>\d{3})(?P<i>\d{9})$"),
    ),
)
