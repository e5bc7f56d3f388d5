"""TMDB v3 (movies): discover by primary release date window, then details with credits and release dates.

Eligibility: a released film (`status` "Released" when given) with a release date and credits (a
director or a cast). Auth: a v3 key as `api_key=`, or a v4 read-access token as a Bearer header.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, ClassVar

from clkt.domains.movies.facts import CastMember, FilmFacts
from clkt.domains.movies.settings import TmdbSettings
from clkt.errors import PayloadError
from clkt.facts import Domain, EntityRecord
from clkt.sources._parse import (
    Items,
    arr,
    aware,
    bounded,
    each,
    guard,
    obj,
    opt_date,
    opt_int,
    opt_str,
    req_date,
    req_int,
    req_str,
)
from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window, skipped_of

__all__ = ["TmdbSource", "parse_discover", "parse_movie"]

MAX_CAST = 10
MAX_PAGES = 500  # TMDB serves at most 500 pages of a query


@guard
def parse_discover(payload: object) -> tuple[Items[SourceRef], int]:
    """A discover page → refs (a bad item is skipped, see `Items.skipped`) and the total number of pages."""
    p = obj(payload, "discover page")

    def one(x: object) -> SourceRef:
        r = obj(x, "discover result")
        ext = str(req_int(r, "id"))
        try:
            day = opt_date(r, "release_date")
        except PayloadError:
            day = None  # "TBA" in a listing: the details decide
        return SourceRef(external_id=ext, name=opt_str(r, "title") or "", occurred_at=aware(day) if day else None)

    return each(arr(p, "results"), "discover result", one), opt_int(p, "total_pages") or 1


def _billing_order(c: Mapping[str, Any]) -> int:
    order = opt_int(c, "order")
    return order if order is not None else 10**6


@guard
def parse_movie(payload: object) -> EntityRecord:
    d = obj(payload, "movie")
    movie_id = req_int(d, "id")
    title = req_str(d, "title")
    status = opt_str(d, "status")
    if status is not None and status != "Released":
        raise PayloadError("not_released", f"status {status!r}")
    if d.get("release_date") in (None, ""):
        raise PayloadError("no_release_date", f"movie {movie_id}")
    released = req_date(d, "release_date")
    credits = obj(d.get("credits") or {}, "credits")
    cast_rows = [obj(c, "cast member") for c in arr(credits, "cast")]
    cast_rows.sort(key=_billing_order)
    cast = [CastMember(name=req_str(c, "name"), character=opt_str(c, "character")) for c in cast_rows[:MAX_CAST]]
    directors: list[str] = []
    for c in arr(credits, "crew"):
        c = obj(c, "crew member")
        if opt_str(c, "job") == "Director":
            name = req_str(c, "name")
            if name not in directors:
                directors.append(name)
    if not cast and not directors:
        raise PayloadError("no_credits", f"movie {movie_id} has neither a director nor a cast")

    def names(key: str) -> list[str]:
        out = []
        for x in arr(d, key):
            n = opt_str(obj(x, key), "name")
            if n:
                out.append(n)
        return out

    budget = opt_int(d, "budget")
    revenue = opt_int(d, "revenue")
    runtime = bounded(opt_int(d, "runtime"), "runtime", 0, 60 * 24 * 30)
    facts = FilmFacts(
        title=title,
        original_title=opt_str(d, "original_title"),
        release_date=released,
        directors=directors,
        cast=cast,
        runtime_min=runtime if runtime and runtime > 0 else None,
        genres=names("genres"),
        overview=opt_str(d, "overview"),
        tagline=opt_str(d, "tagline"),
        budget_usd=budget if budget and budget > 0 else None,
        revenue_usd=revenue if revenue and revenue > 0 else None,
        production_companies=names("production_companies"),
        countries=names("production_countries"),
        original_language=opt_str(d, "original_language"),
    )
    return EntityRecord(
        source=TmdbSource.name, external_id=str(movie_id), domain=Domain.movies, name=title, occurred_at=aware(released),
        payload=dict(d), facts=facts,
    )


class TmdbSource(Source[TmdbSettings]):
    name: ClassVar[str] = "tmdb"
    domain: ClassVar[Domain] = Domain.movies
    kind: ClassVar[str] = "film"
    licence: ClassVar[SourceLicence] = SourceLicence(
        provider="The Movie Database (TMDB), https://www.themoviedb.org",
        terms=(
            "This product uses the TMDB API but is not endorsed or certified by TMDB. TMDB data may be used for "
            "non-commercial purposes with attribution (TMDB API Terms of Use)."
        ),
    )
    requires_key: ClassVar[bool] = True

    def _auth(self) -> tuple[dict[str, Any], dict[str, str]]:
        key = self.client.api_key
        if not key:
            return {}, {}
        if "." in key and len(key) > 64:  # a v4 read-access token (a JWT)
            return {}, {"Authorization": f"Bearer {key}"}
        return {"api_key": key}, {}

    async def poll(self, window: Window, page: int) -> PollPage:
        params, headers = self._auth()
        params.update({
            "primary_release_date.gte": window.start.date().isoformat(),
            "primary_release_date.lte": (window.end - timedelta(microseconds=1)).date().isoformat(),
            "sort_by": "primary_release_date.asc",
            "include_adult": "false",
            "page": page,
        })
        if self.settings.options.language:
            params["language"] = self.settings.options.language
        got = await self.client.get_json("discover/movie", params=params, headers=headers, cache=True)
        if got.data is None:
            raise PayloadError("not_found", got.url)
        parsed, total = parse_discover(got.data)
        refs = [r.model_copy(update={"redated_from": got.original_dates.get(r.external_id)}) for r in parsed]
        nxt = page + 1 if page < min(total, MAX_PAGES) else None
        return PollPage(refs=refs, next_page=nxt, not_modified=got.not_modified, skipped=skipped_of(parsed))

    async def fetch(self, ref: SourceRef) -> EntityRecord:
        params, headers = self._auth()
        params["append_to_response"] = "credits,release_dates"
        got = await self.client.get_json(f"movie/{ref.external_id}", params=params, headers=headers)
        if got.data is None:
            raise PayloadError("not_found", f"movie {ref.external_id}: HTTP {got.status}")
        rec = parse_movie(got.data)
        return rec.model_copy(update={"redated_from": got.original_dates.get(rec.external_id)})


SOURCE = TmdbSource
