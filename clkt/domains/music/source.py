"""The music pollers: MusicBrainz WS/2 (the domain's first source) and Deezer (its second).

MusicBrainz: release search by date (Lucene), then a lookup with recordings, artist credits, labels and release
groups. 1 request/s and a User-Agent with contact are mandatory. Eligibility: a release with a full date (day
precision) and a track list.

Deezer: an editorial's new releases (newest first), then the album lookup. Deezer answers errors with HTTP 200 and
an `error` object: code 800 "no data" is a missing album, code 4 "Quota limit exceeded" is a rate limit (the source
backs off). Eligibility: a release date and tracks.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

from clkt.domains.music.facts import ReleaseFacts, Track
from clkt.domains.music.settings import DeezerSettings, MusicBrainzSettings
from clkt.errors import PayloadError, SourceBlocked
from clkt.facts import Domain, EntityRecord
from clkt.sources._parse import (
    Items,
    arr,
    aware,
    each,
    guard,
    obj,
    opt_date,
    opt_int,
    opt_str,
    parse_partial_date,
    req_date,
    req_int,
    req_str,
)
from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window, skipped_of

__all__ = ["DeezerSource", "MusicBrainzSource", "parse_album", "parse_release", "parse_release_search",
           "parse_releases", "raise_for_error"]

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


# --- Deezer ---------------------------------------------------------------------------------------

QUOTA_BACKOFF_S = 5.0


def raise_for_error(payload: Any, what: str) -> None:
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        err = payload["error"]
        code = err.get("code")
        if code == 4:
            raise SourceBlocked(f"deezer: quota limit exceeded on {what}", retry_after_s=QUOTA_BACKOFF_S)
        if code == 800:
            raise PayloadError("not_found", f"{what}: no data")
        raise PayloadError("api_error", f"{what}: {str(err.get('message'))[:120]} (code {code})")


@guard
def parse_releases(payload: object) -> tuple[Items[SourceRef], int]:
    p = obj(payload, "editorial releases")

    def one(x: object) -> SourceRef:
        r = obj(x, "release")
        ext = str(req_int(r, "id"))
        try:
            day = opt_date(r, "release_date")
        except PayloadError:
            day = None  # "0000-00-00" or junk: the album lookup decides
        return SourceRef(external_id=ext, name=opt_str(r, "title") or "", occurred_at=aware(day) if day else None)

    return each(arr(p, "data"), "release", one), opt_int(p, "total") or 0


@guard
def parse_album(payload: object) -> EntityRecord:
    d = obj(payload, "album")
    album_id = req_int(d, "id")
    title = req_str(d, "title")
    if d.get("release_date") in (None, "", "0000-00-00"):
        raise PayloadError("no_release_date", f"album {album_id}")
    day = req_date(d, "release_date")
    artists: list[str] = []
    for c in arr(d, "contributors"):
        c = obj(c, "contributor")
        if opt_str(c, "role") in (None, "Main") and opt_str(c, "name") and opt_str(c, "name") not in artists:
            artists.append(req_str(c, "name"))
    if not artists and isinstance(d.get("artist"), dict) and opt_str(d["artist"], "name"):
        artists.append(req_str(d["artist"], "name"))
    if not artists:
        raise PayloadError("missing_field", "artist")
    tracks_obj = d.get("tracks")
    rows = arr(obj(tracks_obj, "tracks"), "data") if tracks_obj is not None else []
    tracks = []
    for i, t in enumerate(rows, start=1):
        t = obj(t, "track")
        dur = opt_int(t, "duration")
        tracks.append(Track(position=opt_int(t, "track_position") or i, title=req_str(t, "title"),
                            length_s=dur if dur and dur > 0 else None))
    if not tracks:
        raise PayloadError("no_tracks", f"album {album_id} has no track list")
    genres_obj = d.get("genres")
    genres = [g for g in (opt_str(obj(x, "genre"), "name") for x in arr(obj(genres_obj, "genres"), "data"))
              if g] if genres_obj is not None else []
    rtype = opt_str(d, "record_type")
    facts = ReleaseFacts(
        title=title, artists=artists, artist_credit=" & ".join(artists), release_date=day, label=opt_str(d, "label"),
        release_type=rtype.capitalize() if rtype else None, tracks=tracks, genres=genres, barcode=opt_str(d, "upc"),
    )
    return EntityRecord(
        source=DeezerSource.name, external_id=str(album_id), domain=Domain.music, name=f"{title} by {facts.artist_credit}",
        occurred_at=aware(day), payload=dict(d), facts=facts,
    )


class DeezerSource(Source[DeezerSettings]):
    name: ClassVar[str] = "deezer"
    domain: ClassVar[Domain] = Domain.music
    kind: ClassVar[str] = "release"
    licence: ClassVar[SourceLicence] = SourceLicence(
        provider="Deezer API, https://developers.deezer.com",
        terms=(
            "Data from the Deezer API, subject to the Deezer API Terms of Use (non-commercial use, attribution "
            "to Deezer)."
        ),
    )

    async def poll(self, window: Window, page: int) -> PollPage:
        limit = self.settings.options.page_size
        editorial = str(self.settings.options.editorial_id)
        index = (page - 1) * limit
        got = await self.client.get_json(f"editorial/{editorial}/releases", params={"index": index, "limit": limit},
                                         cache=True)
        if got.data is None:
            raise PayloadError("not_found", got.url)
        raise_for_error(got.data, f"editorial {editorial}")
        refs, total = parse_releases(got.data)
        # newest first: keep the window's items, stop once a page reaches items older than the window
        inside = [r.model_copy(update={"redated_from": got.original_dates.get(r.external_id)}) for r in refs
                  if r.occurred_at is not None and window.start <= r.occurred_at < window.end]
        older = any(r.occurred_at is not None and r.occurred_at < window.start for r in refs)
        served = len(refs) + len(refs.skipped)
        nxt = page + 1 if served and not older and index + served < total else None
        return PollPage(refs=inside, next_page=nxt, not_modified=got.not_modified, skipped=skipped_of(refs))

    async def fetch(self, ref: SourceRef) -> EntityRecord:
        got = await self.client.get_json(f"album/{ref.external_id}")
        if got.data is None:
            raise PayloadError("not_found", f"album {ref.external_id}: HTTP {got.status}")
        raise_for_error(got.data, f"album {ref.external_id}")
        rec = parse_album(got.data)
        return rec.model_copy(update={"redated_from": got.original_dates.get(rec.external_id)})


SOURCES = (MusicBrainzSource, DeezerSource)
