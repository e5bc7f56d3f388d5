"""Assembles a document from (slot, sentence) pairs so every slot's sentence is a verbatim substring."""

from __future__ import annotations

from clkt.facts import RenderedDocument

__all__ = ["DocBuilder"]


class DocBuilder:
    """Collects paragraphs of sentences; `build()` returns the `RenderedDocument`."""

    def __init__(self, *, lang: str, title: str) -> None:
        self.lang = lang
        self._title = title.strip()
        self._paragraphs: list[list[str]] = [[]]
        self._sentences: dict[str, str] = {}

    def add(self, sentence: str, *, slot: str | None = None) -> None:
        sentence = sentence.strip()
        if not sentence:
            return
        self._paragraphs[-1].append(sentence)
        if slot is not None and slot not in self._sentences:
            self._sentences[slot] = sentence

    def paragraph(self) -> None:
        if self._paragraphs[-1]:
            self._paragraphs.append([])

    def build(self) -> RenderedDocument:
        glue = "" if self.lang in ("ja", "zh") else " "
        body = [glue.join(p) for p in self._paragraphs if p]
        text = "\n\n".join([self._title, *body]) if self._title else "\n\n".join(body)
        missing = [slot for slot, s in self._sentences.items() if s not in text]
        if missing:  # a renderer bug, never bad input
            raise AssertionError(f"sentences not in document text: {missing}")
        return RenderedDocument(lang=self.lang, text=text, sentences=dict(self._sentences))
