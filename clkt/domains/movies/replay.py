"""TMDB as the replay server serves it, both modes: discover (a release-date window, 20 a page, 500 pages at most),
a movie's details (credits and release dates appended on request), its credits, its release dates; the recorded
responses (`data/tmdb/`, where the parsers' tests read them too) and the generated ones."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import date, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from aiohttp import web

from clkt import clock
from clkt.domains.movies import SPEC
from clkt.domains.movies.facts import FilmFacts
from clkt.replay.catalog import _day, json_recorded
from clkt.replay.domains import DomainReplay, Item
from clkt.replay.generator import _midnight
from clkt.replay.payloads import _ids
from clkt.replay.query import parse_day, query_int

if TYPE_CHECKING:
    from clkt.replay.generator import GeneratorRoutes
    from clkt.replay.routes import ReplayRoutes, Served
    from clkt.replay.stream import Generated

__all__ = ["PAGE_SIZE", "REPLAY", "discover_result", "movie"]

_json = partial(json_recorded, __name__.rpartition(".")[0])  # this folder's recordings: `data/<source>/<file>`

PAGE_SIZE = 20  # TMDB's page
MAX_PAGE = 500
_DISCOVER, _MOVIE = "/tmdb/discover/movie", r"/tmdb/movie/{id:\d+}"
_GENRE_IDS = {"Action": 28, "Adventure": 12, "Animation": 16, "Comedy": 35, "Crime": 80, "Documentary": 99,
              "Drama": 18, "Family": 10751, "Fantasy": 14, "History": 36, "Horror": 27, "Music": 10402,
              "Mystery": 9648, "Romance": 10749, "Science Fiction": 878, "Thriller": 53, "War": 10752, "Western": 37}
_BAD_PAGE = {"success": False, "status_code": 22,
             "status_message": "Invalid page: Pages start at 1 and max at 500. They are expected to be an integer."}
_NOT_FOUND = {"success": False, "status_code": 34, "status_message": "The resource you requested could not be found."}
_NUMERIC_BASE = 7  # the leading digit of a generated movie id
_INDEX_DIGITS = 9


# --- the recorded responses --------------------------------------------------------------------

def _items() -> list[Item]:
    details = _json("tmdb/movie-details-550.json")
    extras = {"credits": _json("tmdb/movie-credits-550.json"), "release_dates": _json("tmdb/movie-release-dates-550.json")}
    recorded = {details["id"]: (details, extras)}
    seen: set[int] = set()
    items: list[Item] = []
    for f in ("tmdb/discover-movie.json", "tmdb/movie-now-playing.json"):
        for r in _json(f)["results"]:
            if r["id"] in seen:
                continue
            seen.add(r["id"])
            det, more = recorded.get(r["id"], (None, {}))
            items.append(Item(id=str(r["id"]), occurred=_day(r["release_date"]), listing=r, detail=det, extras=more))
    return items


def _window(request: web.Request) -> tuple[date | None, date | None, int]:
    q = request.query
    lo = parse_day(q.get("primary_release_date.gte") or q.get("release_date.gte"))
    hi = parse_day(q.get("primary_release_date.lte") or q.get("release_date.lte"))
    return lo, hi, query_int(q, "page", 1)


def _part(request: web.Request) -> str:
    """Which route `request` came by: "discover", "movie", "credits" or "release_dates"."""
    if request.path.startswith(_DISCOVER):
        return "discover"
    last = request.path.rstrip("/").rsplit("/", 1)[-1]
    return last if last in ("credits", "release_dates") else "movie"


async def _recorded(routes: ReplayRoutes, request: web.Request) -> web.Response:
    part = _part(request)
    if part == "discover":
        return _recorded_discover(routes, request)
    s = routes._find(SPEC.source, request.match_info["id"])
    if part == "movie" and s is not None and s.detail is not None:
        return routes._json(request, _recorded_movie(s, request), [s])
    if part != "movie" and s is not None and part in s.extras:
        return routes._json(request, s.extras[part], [s])
    return routes._json(request, _NOT_FOUND, [], status=404)


def _recorded_discover(routes: ReplayRoutes, request: web.Request) -> web.Response:
    lo, hi, page = _window(request)
    if not 1 <= page <= MAX_PAGE:
        return routes._json(request, _BAD_PAGE, [], status=422)
    items = routes._window(routes.served[SPEC.source], lo, hi, lambda s: parse_day(s.listing.get("release_date")))
    sort = request.query.get("sort_by", "popularity.desc")
    if sort.startswith("primary_release_date"):
        items.sort(key=lambda s: (s.listing["release_date"], s.id), reverse=sort.endswith(".desc"))
    else:
        items.sort(key=lambda s: (-float(s.listing.get("popularity") or 0), s.id))
    chunk = items[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
    data = {"page": page, "results": [s.listing for s in chunk],
            "total_pages": max(1, math.ceil(len(items) / PAGE_SIZE)), "total_results": len(items)}
    return routes._json(request, data, chunk, conditional=True)


def _recorded_movie(s: Served, request: web.Request) -> dict[str, Any]:
    data = dict(s.detail or {})
    for part in [p.strip() for p in request.query.get("append_to_response", "").split(",") if p.strip()]:
        if part in ("credits", "release_dates") and part in s.extras:
            data[part] = {k: v for k, v in s.extras[part].items() if k != "id"}
    return data


# --- the generated ones ------------------------------------------------------------------------

def discover_result(g: Generated) -> dict[str, Any]:
    """A generated film as discover lists it."""
    f = g.facts_as(FilmFacts)
    r = g.rng("tmdb-list")
    return {
        "adult": False, "id": int(g.external_id), "title": f.title, "original_title": f.title,
        "original_language": "en", "overview": f"{f.title}, a film by {', '.join(f.directors)}.",
        "release_date": f.release_date.isoformat(), "popularity": round(r.uniform(1.0, 250.0), 3),
        "vote_average": round(r.uniform(4.0, 8.5), 1), "vote_count": r.randint(0, 3000), "video": False,
        "genre_ids": [_GENRE_IDS.get(x, 18) for x in f.genres],
    }


def movie(g: Generated, *, credits: bool, release_dates: bool) -> dict[str, Any]:
    """A generated film's details, its credits and release dates appended where asked."""
    f = g.facts_as(FilmFacts)
    listing = discover_result(g)
    d: dict[str, Any] = {
        "id": listing["id"], "title": f.title, "original_title": f.title, "original_language": "en",
        "release_date": f.release_date.isoformat(), "status": "Released", "runtime": f.runtime_min,
        "genres": [{"id": _GENRE_IDS.get(x, 18), "name": x} for x in f.genres],
        "budget": f.budget_usd or 0, "revenue": f.revenue_usd or 0, "overview": listing["overview"], "tagline": "",
        "popularity": listing["popularity"], "vote_average": listing["vote_average"], "imdb_id": None,
        "production_companies": [{"id": i, "name": n, "origin_country": ""}
                                 for i, n in zip(_ids(g, "tmdb-companies", len(f.production_companies)),
                                                 f.production_companies, strict=True)],
        "production_countries": [],
    }
    if credits:
        d["credits"] = _credits(g, f)
    if release_dates:
        d["release_dates"] = {"results": [{"iso_3166_1": "US", "release_dates": [
            {"certification": "", "release_date": f"{f.release_date.isoformat()}T00:00:00.000Z", "type": 3,
             "note": ""}]}]}
    return d


def _credits(g: Generated, f: FilmFacts) -> dict[str, Any]:
    people = _ids(g, "tmdb-people", len(f.cast) + len(f.directors))
    return {
        "cast": [{"id": people[k], "name": c.name, "character": c.character or "", "order": k,
                  "known_for_department": "Acting"} for k, c in enumerate(f.cast)],
        "crew": [{"id": people[len(f.cast) + k], "name": n, "job": "Director", "department": "Directing"}
                 for k, n in enumerate(f.directors)],
    }


async def _generated(gen: GeneratorRoutes, request: web.Request) -> web.Response:
    part = _part(request)
    if part == "discover":
        return _generated_discover(gen, request)
    g = gen._find(SPEC.source, request.match_info["id"])
    if g is None:
        return gen._json(request, _NOT_FOUND, status=404)
    appended = {p.strip() for p in request.query.get("append_to_response", "").split(",")}
    answers: dict[str, Callable[[], dict[str, Any]]] = {
        "movie": lambda: movie(g, credits="credits" in appended, release_dates="release_dates" in appended),
        "credits": lambda: {"id": int(g.external_id), **movie(g, credits=True, release_dates=False)["credits"]},
        "release_dates": lambda: {"id": int(g.external_id),
                                  **movie(g, credits=False, release_dates=True)["release_dates"]},
    }
    return gen._json(request, answers[part]())


def _generated_discover(gen: GeneratorRoutes, request: web.Request) -> web.Response:
    lo, hi, page = _window(request)
    if not 1 <= page <= MAX_PAGE:
        return gen._json(request, _BAD_PAGE, status=422)
    total, items = gen._page(
        SPEC.source, _midnight(lo) if lo else gen.stream.start, _midnight(hi) + timedelta(days=1) if hi else clock.now(),
        offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE, newest_first=request.query.get("sort_by", "").endswith(".desc"),
    )
    data = {"page": page, "results": [discover_result(g) for g in items],
            "total_pages": max(1, math.ceil(total / PAGE_SIZE)), "total_results": total}
    return gen._json(request, data, conditional=True)


REPLAY = DomainReplay(
    source=SPEC.source, paths=(_DISCOVER, _MOVIE, _MOVIE + "/credits", _MOVIE + "/release_dates"), items=_items,
    recorded=_recorded, generated=_generated, lag_s=(0, 6 * 3600),
    external_id=lambda tag, i: str((_NUMERIC_BASE * 1000 + tag) * 10**_INDEX_DIGITS + i),
    id_pattern=re.compile(rf"^{_NUMERIC_BASE}(?P<tag>\d{{3}})(?P<i>\d{{{_INDEX_DIGITS}}})$"),
)
