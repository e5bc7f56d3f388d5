"""The protocol both agent backends implement: the pydantic-ai LLM agents and the template engine.

Each method returns the typed outputs of `clkt.outputs`. `facts` is the entity's structured facts
(`clkt.facts.EntityFacts`): the template engine needs them; LLM agents work from the document text.
`producer` names the model (or "template-engine") and `prompt_version` is stored with every row.
"""

from __future__ import annotations

from typing import Protocol

from clkt.facts import EntityFacts, RenderedDocument
from clkt.outputs import MCQ, KnownVerdict, TranslatedDocument, TranslatedMCQ, VerifierReport

__all__ = ["AgentBackend"]


class AgentBackend(Protocol):
    name: str

    def producer(self, role: str) -> str:
        """Model id (or engine name) used for `role` in {judge, generate, verify, translate}."""
        ...

    def prompt_version(self, role: str) -> str: ...

    async def judge(
        self, *, entity_name: str, document: RenderedDocument, facts: EntityFacts, response: str, lang: str
    ) -> KnownVerdict: ...

    async def generate(
        self, *, entity_name: str, document: RenderedDocument, facts: EntityFacts, n: int
    ) -> list[MCQ]: ...

    async def verify(self, *, document: RenderedDocument, facts: EntityFacts, mcq: MCQ) -> VerifierReport: ...

    async def translate_mcq(
        self, *, mcq: MCQ, document: RenderedDocument, facts: EntityFacts, target_lang: str
    ) -> TranslatedMCQ: ...

    async def translate_document(
        self, *, document: RenderedDocument, facts: EntityFacts, target_lang: str
    ) -> TranslatedDocument: ...
