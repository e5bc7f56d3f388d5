"""Deezer (music, second source): an editorial's new releases (newest first), then the album lookup.

Deezer answers errors with HTTP 200 and an `error` object: code 800 "no data" is a missing album, code 4
"Quota limit exceeded" is a rate limit (the source backs off). Eligibility: a release date and tracks.
"""

from __future__ import annotations

from typing import Any, ClassVar

from clkt.config import DeezerSettings
from clkt.errors import PayloadError, SourceBlocked
from clkt.facts import Domain, EntityRecord, ReleaseFacts, Track
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
    req_date,
    req_int,
    req_str,
)
from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window, skipped_of

__all__ = ["DeezerSource", "parse_album", "parse_releases", "raise_for_error"]

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
