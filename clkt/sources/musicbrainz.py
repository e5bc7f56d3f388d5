"""MusicBrainz WS/2 (music): release search by date (Lucene), then a lookup with recordings, artist
credits, labels and release groups. 1 request/s and a User-Agent with contact are mandatory.

Eligibility: a release with a full date (day precision) and a track list.
"""

from __future__ import annotations

from datetime import timedelta
from typing import ClassVar

from clkt.config import MusicBrainzSettings
from clkt.errors import PayloadError
from clkt.facts import Domain, EntityRecord, ReleaseFacts, Track
from clkt.sources._parse import Items, arr, aware, each, guard, obj, opt_int, opt_str, parse_partial_date, req_str
from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window, skipped_of

__all__ = ["MusicBrainzSource", "parse_release", "parse_release_search"]

INC = "recordings+artist-credits+labels+release-groups"


def _credit(rows: list[object]) -> tuple[list[str], str]:
    artists: list[str] = []
    credit = ""
    for row in rows:
        r = obj(row, "artist-credit")
        name = req_str(r, "name")
        artists.append(name)
        joinphrase = r.get("joinphrase")
        credit += name + (joinphrase if isinstance(joinphrase, str) else "")
    return artists, credit.strip()


@guard
def parse_release_search(payload: object) -> tuple[Items[SourceRef], int]:
    p = obj(payload, "release search")

    def one(x: object) -> SourceRef:
        r = obj(x, "release")
        return SourceRef(external_id=req_str(r, "id"), name=opt_str(r, "title") or "")

    return each(arr(p, "releases"), "release", one), opt_int(p, "count") or 0


@guard
def parse_release(payload: object) -> EntityRecord:
    d = obj(payload, "release")
    mbid = req_str(d, "id")
    title = req_str(d, "title")
    raw_date = opt_str(d, "date")
    if raw_date is None:
        raise PayloadError("no_release_date", mbid)
    day, precision = parse_partial_date(raw_date, "date")
    if precision != "day":
        raise PayloadError("imprecise_date", f"{mbid}: date {raw_date!r}")
    artists, credit = _credit(arr(d, "artist-credit"))
    if not artists:
        raise PayloadError("missing_field", "artist-credit")
    tracks: list[Track] = []
    for medium in arr(d, "media"):
        for t in arr(obj(medium, "medium"), "tracks"):
            t = obj(t, "track")
            rec = t.get("recording")
            if isinstance(rec, dict) and rec.get("video") is True:
                continue  # a DVD's video item is not a track of the release
            length_ms = opt_int(t, "length")
            tracks.append(Track(position=len(tracks) + 1, title=req_str(t, "title"),
                                length_s=round(length_ms / 1000) if length_ms and length_ms > 0 else None))
    if not tracks:
        raise PayloadError("no_tracks", f"{mbid} has no track list")
    label = catalog = None
    for li in arr(d, "label-info"):
        li = obj(li, "label-info")
        lab = li.get("label")
        if isinstance(lab, dict) and opt_str(lab, "name"):
            label = opt_str(lab, "name")
            catalog = opt_str(li, "catalog-number")
            break
    rg = d.get("release-group")
    rtype = opt_str(obj(rg, "release-group"), "primary-type") if rg is not None else None
    genres = [g for g in (opt_str(obj(x, "genre"), "name") for x in arr(d, "genres")) if g]
    facts = ReleaseFacts(
        title=title, artists=artists, artist_credit=credit or ", ".join(artists), release_date=day, label=label,
        catalog_number=catalog, country=opt_str(d, "country"), release_type=rtype, tracks=tracks, genres=genres,
        barcode=opt_str(d, "barcode"),
    )
    return EntityRecord(
        source=MusicBrainzSource.name, external_id=mbid, domain=Domain.music, name=f"{title} by {facts.artist_credit}",
        occurred_at=aware(day), payload=dict(d), facts=facts,
    )


class MusicBrainzSource(Source[MusicBrainzSettings]):
    name: ClassVar[str] = "musicbrainz"
    domain: ClassVar[Domain] = Domain.music
    kind: ClassVar[str] = "release"
    licence: ClassVar[SourceLicence] = SourceLicence(
        provider="MusicBrainz, https://musicbrainz.org",
        terms="MusicBrainz core data is released into the public domain under CC0 1.0.",
    )

    async def poll(self, window: Window, page: int) -> PollPage:
        limit = self.settings.options.page_size
        lo = window.start.date().isoformat()
        hi = (window.end - timedelta(microseconds=1)).date().isoformat()
        query = f"date:[{lo} TO {hi}]"
        extra = self.settings.options.query
        if extra:
            query += f" AND {extra}"
        offset = (page - 1) * limit
        got = await self.client.get_json(
            "release", params={"query": query, "limit": limit, "offset": offset, "fmt": "json"}, cache=True,
        )
        if got.data is None:
            raise PayloadError("not_found", got.url)
        parsed, count = parse_release_search(got.data)
        refs = [r.model_copy(update={"redated_from": got.original_dates.get(r.external_id)}) for r in parsed]
        served = len(parsed) + len(parsed.skipped)
        nxt = page + 1 if served and offset + served < count else None
        return PollPage(refs=refs, next_page=nxt, not_modified=got.not_modified, skipped=skipped_of(parsed))

    async def fetch(self, ref: SourceRef) -> EntityRecord:
        got = await self.client.get_json(f"release/{ref.external_id}", params={"inc": INC, "fmt": "json"})
        if got.data is None:
            raise PayloadError("not_found", f"release {ref.external_id}: HTTP {got.status}")
        rec = parse_release(got.data)
        return rec.model_copy(update={"redated_from": got.original_dates.get(rec.external_id)})
