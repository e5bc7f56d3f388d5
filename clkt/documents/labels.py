"""Controlled vocabularies translated into the five document languages (values the APIs send in English).

Unknown values are kept as the API sent them (they are usually proper names). Keys are matched
case-insensitively. Order of each table = (en, ja, zh, fr, es). Every category is a domain folder's: it adds its own
(`add_labels`, from its `labels.py`, imported by the modules that read them: its document, templates, control maker).
"""

from __future__ import annotations

__all__ = ["LABELS", "Vocabulary", "add_labels", "known_values", "label_text"]

_ORDER = ("en", "ja", "zh", "fr", "es")

# category -> value (lower case) -> its text in (en, ja, zh, fr, es)
Vocabulary = dict[str, dict[str, tuple[str, str, str, str, str]]]

# category -> value (lower case) -> language -> its text: every category is a domain folder's (`add_labels`)
LABELS: dict[str, dict[str, dict[str, str]]] = {}


def add_labels(vocabulary: Vocabulary) -> None:
    """Adds a domain's own categories; a category that is already there is refused by name (no table is merged
    into another, so a domain cannot change another's words)."""
    taken = sorted(set(vocabulary) & set(LABELS))
    if taken:
        raise ValueError(f"label categories already defined: {taken}")
    for cat, table in vocabulary.items():
        LABELS[cat] = {key.casefold(): dict(zip(_ORDER, vals, strict=True)) for key, vals in table.items()}


def label_text(category: str, value: str, lang: str) -> str:
    """`value` of `category` in `lang`; unknown values come back unchanged."""
    entry = LABELS.get(category, {}).get(value.strip().casefold())
    if entry is None:
        return value
    return entry.get(lang, entry["en"])


def known_values(category: str) -> list[str]:
    """The canonical (lower-case key) values of a category, in table order."""
    return list(LABELS.get(category, {}))
