"""Release page: artist, title, date, label, type, track count, first/last track and the track list."""

from __future__ import annotations

from clkt.documents._builder import DocBuilder
from clkt.documents.formatting import Formatter
from clkt.documents.registry import DOCUMENT_KINDS, DocumentKind
from clkt.domains.music import SPEC
from clkt.domains.music.facts import ReleaseFacts
from clkt.domains.music.labels import RELEASE_TYPE
from clkt.facts import RenderedDocument

__all__ = ["TEXT", "ordered_tracks", "release_type_key", "render_release"]

TEXT: dict[str, dict[str, str]] = {
    "en": {
        "title": "{artist} – {title}",
        "artist": "{title} is credited to {artist}.",
        "release_date": "It was released on {date}.",
        "label": "It was released on the label {label}{catalog}.",
        "catalog": " (catalogue number {number})",
        "release_type": "The release type is {type}.",
        "track_count": "Number of tracks on the release: {n}.",
        "first_track": "The first track is {track}.",
        "last_track": "The last track is {track}.",
        "tracklist": "Track list: {items}.",
        "genres": "Tags: {genres}.",
    },
    "ja": {
        "title": "{artist} – {title}",
        "artist": "{title}のアーティストは{artist}である。",
        "release_date": "{date}にリリースされた。",
        "label": "レーベルは{label}{catalog}である。",
        "catalog": "（カタログ番号 {number}）",
        "release_type": "リリース形態は{type}である。",
        "track_count": "全{n}曲を収録している。",
        "first_track": "1曲目は{track}である。",
        "last_track": "最後の曲は{track}である。",
        "tracklist": "収録曲：{items}。",
        "genres": "タグ：{genres}。",
    },
    "zh": {
        "title": "{artist} – {title}",
        "artist": "{title}的艺人是{artist}。",
        "release_date": "该作品于{date}发行。",
        "label": "发行厂牌为{label}{catalog}。",
        "catalog": "（目录编号 {number}）",
        "release_type": "发行类型为{type}。",
        "track_count": "共收录{n}首曲目。",
        "first_track": "第一首曲目是{track}。",
        "last_track": "最后一首曲目是{track}。",
        "tracklist": "曲目列表：{items}。",
        "genres": "标签：{genres}。",
    },
    "fr": {
        "title": "{artist} – {title}",
        "artist": "{title} est crédité à {artist}.",
        "release_date": "Il est sorti le {date}.",
        "label": "Il est sorti sur le label {label}{catalog}.",
        "catalog": " (numéro de catalogue {number})",
        "release_type": "Le type de parution est : {type}.",
        "track_count": "Nombre de titres du disque : {n}.",
        "first_track": "Le premier titre est {track}.",
        "last_track": "Le dernier titre est {track}.",
        "tracklist": "Liste des titres : {items}.",
        "genres": "Étiquettes : {genres}.",
    },
    "es": {
        "title": "{artist} – {title}",
        "artist": "{title} está acreditado a {artist}.",
        "release_date": "Se publicó el {date}.",
        "label": "Se publicó con el sello {label}{catalog}.",
        "catalog": " (número de catálogo {number})",
        "release_type": "El tipo de publicación es: {type}.",
        "track_count": "Número de pistas del disco: {n}.",
        "first_track": "La primera pista es {track}.",
        "last_track": "La última pista es {track}.",
        "tracklist": "Lista de pistas: {items}.",
        "genres": "Etiquetas: {genres}.",
    },
}


def release_type_key(value: str | None) -> str | None:
    """The controlled-vocabulary key of a MusicBrainz primary type ("Album" -> "album")."""
    return value.strip().casefold() if value and value.strip() else None


def _length(seconds: int) -> str:
    return f"{seconds // 60}:{seconds % 60:02d}"


def ordered_tracks(f: ReleaseFacts) -> list[str]:
    return [t.title for t in sorted(f.tracks, key=lambda t: t.position)]


def render_release(f: ReleaseFacts, fmt: Formatter) -> RenderedDocument:
    t = TEXT[fmt.lang]
    doc = DocBuilder(lang=fmt.lang, title=t["title"].format(artist=f.artist_credit, title=f.title))
    doc.add(t["artist"].format(title=fmt.quote(f.title), artist=f.artist_credit), slot="artist")
    doc.add(t["release_date"].format(date=fmt.date(f.release_date)), slot="release_date")
    if f.label:
        catalog = t["catalog"].format(number=f.catalog_number) if f.catalog_number else ""
        doc.add(t["label"].format(label=f.label, catalog=catalog), slot="label")
    rtype = release_type_key(f.release_type)
    if rtype:
        doc.add(t["release_type"].format(type=fmt.label(RELEASE_TYPE, rtype)), slot="release_type")
    titles = ordered_tracks(f)
    if titles:
        doc.add(t["track_count"].format(n=fmt.integer(len(titles))), slot="track_count")
        doc.add(t["first_track"].format(track=fmt.quote(titles[0])), slot="first_track")
        if len(titles) > 1:
            doc.add(t["last_track"].format(track=fmt.quote(titles[-1])), slot="last_track")
        tracks = sorted(f.tracks, key=lambda tr: tr.position)
        items = "; ".join(
            f"{i}. {tr.title}" + (f" ({_length(tr.length_s)})" if tr.length_s else "") for i, tr in enumerate(tracks, 1)
        )
        doc.paragraph()
        doc.add(t["tracklist"].format(items=items))
    if f.genres:
        doc.add(t["genres"].format(genres=", ".join(f.genres)))
    return doc.build()


DOCUMENT_KINDS.register(
    DocumentKind(kind="release", facts=ReleaseFacts, domain=SPEC.name, slots=SPEC.slots, render=render_release)
)
