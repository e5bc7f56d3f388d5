"""Typed structured facts of an entity, per domain: the contract between the crawlers (which fill them
from the API payload), the document renderer and the question generators (which read them).

Every fact model is a pydantic model with a `kind` discriminator (`clkt.domain_base.Facts`); `EntityFacts` is
their union, open: every kind is declared by its domain's folder (`clkt.domains.<name>.facts`, listed by the
registry's specs; the first four domains' models are re-exported here by name), and a payload is validated by its
`kind` against all of them.
`RenderedDocument.sentences` maps a fact slot to the sentence of the document that states it (always a
substring of `text`), so a generator can quote evidence verbatim.

What each kind means to the rest of the product is registered by the kind's own modules, keyed by its `kind`:
its renderer and slots (`clkt.documents.registry.DocumentKind`), its templates, proper names and judge facts
(`agents.template.domains.AgentKind`), its control split's maker (`clkt.snapshots.fiction.FictionalKind`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, SerializeAsAny

from clkt.domain_base import Facts, FactsModel
from clkt.domains import DOMAINS
from clkt.domains.disasters.facts import DisasterFacts, QuakeFacts
from clkt.domains.movies.facts import CastMember, FilmFacts
from clkt.domains.music.facts import ReleaseFacts, Track
from clkt.domains.sports.facts import MatchFacts, PeriodScore

__all__ = [
    "FACT_MODELS",
    "SLOTS",
    "CastMember",
    "DisasterFacts",
    "Domain",
    "EntityFacts",
    "EntityRecord",
    "Facts",
    "FactsModel",
    "FilmFacts",
    "MatchFacts",
    "PeriodScore",
    "QuakeFacts",
    "ReleaseFacts",
    "RenderedDocument",
    "Track",
]


if TYPE_CHECKING:
    class Domain(str, Enum):
        """The domains (the registry's): the four first ones typed by name for the code that names them; any
        registered one by `Domain(name)`."""

        movies = "movies"
        music = "music"
        sports = "sports"
        disasters = "disasters"
else:  # every registered domain (`clkt.domains.DOMAINS`), in the registry's order
    Domain = Enum("Domain", [(n, n) for n in DOMAINS], type=str, module=__name__)


def _fact_models() -> dict[str, type[Facts]]:
    return {model.model_fields["kind"].default: model for d in DOMAINS.values() for model, _ in d.kinds}


# every kind of facts by its `kind`: each registered domain's, in the registry's order
FACT_MODELS: dict[str, type[Facts]] = _fact_models()


def _validate_facts(value: object) -> Facts:
    """A facts model of the kind `value` names (a facts object passes as it is); an unknown kind is refused by name."""
    if isinstance(value, Facts):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"facts are an object with a `kind`, got {type(value).__name__}")
    kind = value.get("kind")
    model = FACT_MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ValueError(f"unknown kind of facts {kind!r}; known: {sorted(FACT_MODELS)}")
    return model.model_validate(value)


# any kind's facts, validated by its `kind` and serialized with all its own fields
EntityFacts = Annotated[SerializeAsAny[Facts], PlainValidator(_validate_facts)]


class EntityRecord(BaseModel):
    """What a source yields for one entity: identity, time, the raw payload and its typed facts."""

    model_config = ConfigDict(frozen=True)

    source: str
    external_id: str
    domain: Domain
    name: str
    occurred_at: datetime  # aware UTC
    payload: dict[str, object]  # the raw API payload(s), kept verbatim for provenance
    facts: EntityFacts
    redated_from: datetime | None = None  # the replay server re-dated this record; its recorded time


class RenderedDocument(BaseModel):
    model_config = ConfigDict(frozen=True)

    lang: str
    text: str
    sentences: dict[str, str] = Field(default_factory=dict)  # fact slot -> sentence (substring of text)


# The fact slots a document states (one sentence each, when the fact is known) and questions ask about, by kind.
SLOTS: dict[str, tuple[str, ...]] = {
    model.model_fields["kind"].default: slots for d in DOMAINS.values() for model, slots in d.kinds
}
