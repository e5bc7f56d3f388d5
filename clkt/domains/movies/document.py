"""Film page: release date, director, cast, runtime, genres, budget, revenue, companies (+ overview in en).

Free text (overview, tagline) is never machine-translated: it appears only in the English document.
"""

from __future__ import annotations

from clkt.documents._builder import DocBuilder
from clkt.documents.formatting import Formatter
from clkt.documents.registry import DOCUMENT_KINDS, DocumentKind
from clkt.domains.movies import SPEC
from clkt.domains.movies.facts import FilmFacts
from clkt.domains.movies.labels import GENRE
from clkt.facts import RenderedDocument

__all__ = ["MAIN_CAST", "TEXT", "render_film"]

MAIN_CAST = 5  # billed cast members named in the document (lead included)

TEXT: dict[str, dict[str, str]] = {
    "en": {
        "title": "{title} ({year})",
        "original": "Original title: {original}.",
        "release_date": "{title} was released on {date}.",
        "director": "It was directed by {directors}.",
        "lead_actor": "The top-billed actor is {lead}{role}.",
        "role": ", who plays {character}",
        "cast": "The main cast also includes {names}.",
        "runtime": "The film runs {runtime}.",
        "genre": "Its genres are listed as {genres}.",
        "budget": "Its budget was {money}.",
        "revenue": "It earned {money} at the box office.",
        "production_company": "It was produced by {companies}.",
        "overview": "Overview: {overview}",
        "tagline": "Tagline: “{tagline}”",
    },
    "ja": {
        "title": "{title}（{year}年）",
        "original": "原題は{original}である。",
        "release_date": "{title}は{date}に公開された。",
        "director": "監督は{directors}である。",
        "lead_actor": "クレジットの筆頭は{lead}{role}である。",
        "role": "（{character}役）",
        "cast": "主な出演者には他に{names}がいる。",
        "runtime": "上映時間は{runtime}である。",
        "genre": "ジャンルは{genres}である。",
        "budget": "製作費は{money}であった。",
        "revenue": "興行収入は{money}であった。",
        "production_company": "製作会社は{companies}である。",
    },
    "zh": {
        "title": "{title}（{year}年）",
        "original": "原名为{original}。",
        "release_date": "{title}于{date}上映。",
        "director": "该片由{directors}执导。",
        "lead_actor": "演员表中排名第一的是{lead}{role}。",
        "role": "（饰演{character}）",
        "cast": "主要演员还包括{names}。",
        "runtime": "片长为{runtime}。",
        "genre": "影片类型为{genres}。",
        "budget": "制作预算为{money}。",
        "revenue": "票房收入为{money}。",
        "production_company": "出品公司为{companies}。",
    },
    "fr": {
        "title": "{title} ({year})",
        "original": "Titre original : {original}.",
        "release_date": "{title} est sorti le {date}.",
        "director": "Le film a été réalisé par {directors}.",
        "lead_actor": "L'acteur en tête d'affiche est {lead}{role}.",
        "role": ", qui joue {character}",
        "cast": "La distribution principale comprend aussi {names}.",
        "runtime": "Le film dure {runtime}.",
        "genre": "Ses genres sont : {genres}.",
        "budget": "Son budget était de {money}.",
        "revenue": "Il a rapporté {money} au box-office.",
        "production_company": "Il a été produit par {companies}.",
    },
    "es": {
        "title": "{title} ({year})",
        "original": "Título original: {original}.",
        "release_date": "{title} se estrenó el {date}.",
        "director": "Fue dirigida por {directors}.",
        "lead_actor": "El actor principal del reparto es {lead}{role}.",
        "role": ", que interpreta a {character}",
        "cast": "El reparto principal también incluye a {names}.",
        "runtime": "La película dura {runtime}.",
        "genre": "Sus géneros son: {genres}.",
        "budget": "Su presupuesto fue de {money}.",
        "revenue": "Recaudó {money} en taquilla.",
        "production_company": "Fue producida por {companies}.",
    },
}


def render_film(f: FilmFacts, fmt: Formatter) -> RenderedDocument:
    t = TEXT[fmt.lang]
    doc = DocBuilder(lang=fmt.lang, title=t["title"].format(title=f.title, year=f.release_date.year))
    if f.original_title and f.original_title != f.title:
        doc.add(t["original"].format(original=f.original_title))
    doc.add(t["release_date"].format(title=fmt.quote(f.title), date=fmt.date(f.release_date)), slot="release_date")
    if f.directors:
        doc.add(t["director"].format(directors=fmt.join(list(f.directors))), slot="director")
    if f.cast:
        lead = f.cast[0]
        role = t["role"].format(character=lead.character) if lead.character else ""
        doc.add(t["lead_actor"].format(lead=lead.name, role=role), slot="lead_actor")
        others = [c.name for c in f.cast[1:MAIN_CAST]]
        if others:
            doc.add(t["cast"].format(names=fmt.join(others)))
    if f.runtime_min:
        doc.add(t["runtime"].format(runtime=fmt.minutes(f.runtime_min)), slot="runtime")
    if f.genres:
        doc.add(t["genre"].format(genres=fmt.join([fmt.label(GENRE, g) for g in f.genres])), slot="genre")
    if f.budget_usd:
        doc.add(t["budget"].format(money=fmt.usd(f.budget_usd)), slot="budget")
    if f.revenue_usd:
        doc.add(t["revenue"].format(money=fmt.usd(f.revenue_usd)), slot="revenue")
    if f.production_companies:
        companies = fmt.join(list(f.production_companies))
        doc.add(t["production_company"].format(companies=companies), slot="production_company")
    if fmt.lang == "en" and (f.overview or f.tagline):
        doc.paragraph()
        if f.tagline:
            doc.add(t["tagline"].format(tagline=f.tagline.strip()))
        if f.overview:
            doc.add(t["overview"].format(overview=" ".join(f.overview.split())))
    return doc.build()


DOCUMENT_KINDS.register(
    DocumentKind(kind="film", facts=FilmFacts, domain=SPEC.name, slots=SPEC.slots, render=render_film)
)
