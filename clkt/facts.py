"""Typed structured facts of an entity, per domain: the contract between the crawlers (which fill them
from the API payload), the document renderer and the question generators (which read them).

Every fact model is a pydantic model with a `kind` discriminator (`clkt.domain_base.Facts`); `EntityFacts` is
their union, open: the first kinds not yet in a folder are declared here, every other one by its domain's folder
(`clkt.domains`; their models are re-exported here by name), and a payload is validated by its `kind` against all of them.
`RenderedDocument.sentences` maps a fact slot to the sentence of the document that states it (always a
substring of `text`), so a generator can quote evidence verbatim.

What each kind means to the rest of the product is registered by the kind's own modules, keyed by its `kind`:
its renderer and slots (`clkt.documents.registry.DocumentKind`), its templates, proper names and judge facts
(`agents.template.domains.AgentKind`), its control split's maker (`clkt.snapshots.fiction.FictionalKind`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, SerializeAsAny

from clkt.domain_base import Facts, FactsModel
from clkt.domains import DOMAINS, domain_names
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
        """The domains: the four first ones typed by name; a registered one by `Domain(name)`."""

        movies = "movies"
        music = "music"
        sports = "sports"
        disasters = "disasters"
else:  # the four first ones, then every registered domain (`clkt.domains.domain_names`), in order
    Domain = Enum("Domain", [(n, n) for n in domain_names()], type=str, module=__name__)


class QuakeFacts(Facts):
    kind: Literal["quake"] = "quake"
    title: str
    place: str
    time_utc: datetime
    magnitude: float
    mag_type: str | None = None
    depth_km: float
    latitude: float
    longitude: float
    alert: str | None = None  # PAGER green / yellow / orange / red
    tsunami: bool = False
    felt: int | None = None  # number of felt reports
    mmi: float | None = None
    cdi: float | None = None
    significance: int | None = None
    fatalities: int | None = None
    economic_loss_usd: int | None = None


class DisasterFacts(Facts):
    """A non-seismic disaster (ReliefWeb / GDACS): flood, storm, drought..."""

    kind: Literal["disaster"] = "disaster"
    name: str
    disaster_type: str
    country: str
    countries: list[str] = Field(default_factory=list)
    date: date
    status: str | None = None
    glide: str | None = None
    alert: str | None = None
    deaths: int | None = None
    affected: int | None = None
    summary: str | None = None


def _fact_models() -> dict[str, type[Facts]]:
    first: tuple[type[Facts], ...] = (QuakeFacts, DisasterFacts)
    return {**{m.model_fields["kind"].default: m for m in first}, **{d.kind: d.facts for d in DOMAINS.values()}}


# every kind of facts by its `kind`: the first ones here, then each registered domain's
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


# The fact slots a document states (one sentence each, when the fact is known) and questions ask about.
SLOTS: dict[str, tuple[str, ...]] = {
    "quake": (
        "time", "place", "magnitude", "depth", "alert", "tsunami", "felt", "fatalities", "intensity", "latitude",
    ),
    "disaster": ("date", "disaster_type", "country", "status", "deaths", "affected", "glide"),
    **{d.kind: d.slots for d in DOMAINS.values()},
}
