"""The canonical multilingual source document of an entity, rendered deterministically from its facts.

`render_document(facts, lang)` returns a `RenderedDocument` whose `sentences[slot]` is the sentence stating
the fact of `slot` (one per slot of its kind's `DocumentKind.slots` whose fact is known), always a verbatim
substring of `text`. Same facts -> byte-identical text. Proper names are never translated; free text
(film overview, disaster summary) appears only in English.

Each kind's renderer is registered by its own module here (`registry.DOCUMENT_KINDS`): `sports`, `movies`,
`music`, `disasters`; a new kind of facts is one new module that registers its `DocumentKind`.
"""

from __future__ import annotations

from collections.abc import Sequence

from clkt.documents.formatting import LANGUAGES, Formatter, formatter
from clkt.documents.registry import DOCUMENT_KINDS, DocumentKind, document_kind, load_modules
from clkt.domains import import_side
from clkt.facts import EntityFacts, RenderedDocument

__all__ = ["DOCUMENT_KINDS", "LANGUAGES", "DocumentKind", "Formatter", "formatter", "render_all", "render_document"]


def render_document(facts: EntityFacts, lang: str) -> RenderedDocument:
    """The document of `facts` in `lang` (one of `LANGUAGES`); raises `UserError` for another language."""
    fmt = formatter(lang)
    entry = document_kind(facts.kind)
    if entry is None or not isinstance(facts, entry.facts):
        raise TypeError(f"no document renderer for {type(facts).__name__}")
    return entry.render(facts, fmt)


def render_all(facts: EntityFacts, langs: Sequence[str] = LANGUAGES) -> dict[str, RenderedDocument]:
    """The document in every language of `langs`."""
    return {lang: render_document(facts, lang) for lang in langs}


load_modules(__name__, __path__)
import_side("document")  # each domain folder's document.py
