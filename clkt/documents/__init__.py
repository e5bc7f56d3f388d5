"""The canonical multilingual source document of an entity, rendered deterministically from its facts.

`render_document(facts, lang)` returns a `RenderedDocument` whose `sentences[slot]` is the sentence stating
the fact of `slot` (one per slot of `clkt.facts.SLOTS[kind]` whose fact is known), always a verbatim
substring of `text`. Same facts -> byte-identical text. Proper names are never translated; free text
(film overview, disaster summary) appears only in English.
"""

from __future__ import annotations

from clkt.documents.disasters import render_disaster, render_quake
from clkt.documents.formatting import LANGUAGES, Formatter, formatter
from clkt.documents.movies import render_film
from clkt.documents.music import render_release
from clkt.documents.sports import render_match
from clkt.facts import DisasterFacts, EntityFacts, FilmFacts, MatchFacts, QuakeFacts, ReleaseFacts, RenderedDocument

__all__ = ["LANGUAGES", "Formatter", "formatter", "render_all", "render_document"]


def render_document(facts: EntityFacts, lang: str) -> RenderedDocument:
    """The document of `facts` in `lang` (one of `LANGUAGES`); raises `UserError` for another language."""
    fmt = formatter(lang)
    if isinstance(facts, MatchFacts):
        return render_match(facts, fmt)
    if isinstance(facts, FilmFacts):
        return render_film(facts, fmt)
    if isinstance(facts, ReleaseFacts):
        return render_release(facts, fmt)
    if isinstance(facts, QuakeFacts):
        return render_quake(facts, fmt)
    if isinstance(facts, DisasterFacts):
        return render_disaster(facts, fmt)
    raise TypeError(f"no document renderer for {type(facts).__name__}")


def render_all(facts: EntityFacts, langs: tuple[str, ...] | list[str] = LANGUAGES) -> dict[str, RenderedDocument]:
    """The document in every language of `langs`."""
    return {lang: render_document(facts, lang) for lang in langs}
