"""The domain registry (`clkt.domains`): each registered folder's facts, settings, quota and side modules reach the
product through the loops over it, and a bad spec or a bad payload is refused by name."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

import pytest
from pydantic import TypeAdapter, ValidationError

from clkt.config import SnapshotSettings, SourcesSettings
from clkt.domain_base import Facts
from clkt.domains import DOMAINS, DomainSpec, import_side, register
from clkt.domains.disasters.facts import DisasterFacts
from clkt.domains.science.facts import PaperFacts
from clkt.domains.spaceflight.settings import LaunchLibrarySettings
from clkt.facts import FACT_MODELS, SLOTS, Domain, EntityFacts, EntityRecord
from clkt.sources.registry import SOURCE_TYPES

FACTS: TypeAdapter[EntityFacts] = TypeAdapter(EntityFacts)


class _Other(Facts):
    kind: Literal["other"] = "other"


def _paper() -> PaperFacts:
    return PaperFacts(arxiv_id="2511.00001", title="A paper", authors=["A. Author", "B. Author"],
                      primary_category="cs.CL", submitted=datetime(2025, 11, 3, tzinfo=UTC))


def test_every_registered_domain_reaches_the_facts_the_settings_and_the_quotas() -> None:
    assert list(DOMAINS) == ["movies", "music", "sports", "disasters", "science", "spaceflight"]
    for spec in DOMAINS.values():
        for model, slots in spec.kinds:  # every kind of a domain of several (disasters: quakes, other disasters)
            kind = model.model_fields["kind"].default
            assert FACT_MODELS[kind] is model and SLOTS[kind] == slots == spec.slots_of(model)
        assert Domain(spec.name).value == spec.name
        for source, settings in spec.sources:  # every source of a domain of several (music: MusicBrainz, Deezer)
            assert source in SourcesSettings.names() and SOURCE_TYPES[source].domain.value == spec.name
            assert type(SourcesSettings()[source]) is settings
        assert SnapshotSettings().quotas[Domain(spec.name)] == spec.quota
    assert [m.__name__ for m in import_side("document")] == [f"clkt.domains.{d}.document" for d in DOMAINS]
    assert DOMAINS["music"].sources == (("musicbrainz", SourcesSettings.model_fields["musicbrainz"].annotation),
                                        ("deezer", SourcesSettings.model_fields["deezer"].annotation))


def test_a_registered_sources_table_overrides_its_defaults_key_by_key() -> None:
    table = SourcesSettings.model_validate({"launchlibrary": {"timeout_s": 5.0}})
    section = table["launchlibrary"]
    assert isinstance(section, LaunchLibrarySettings)
    assert section.timeout_s == 5.0 and section.rate_per_s == LaunchLibrarySettings().rate_per_s
    with pytest.raises(ValidationError, match=r"launchlibrary\.no_such_key"):
        SourcesSettings.model_validate({"launchlibrary": {"no_such_key": 1}})


def test_facts_are_validated_by_their_kind_and_dumped_whole() -> None:
    paper = _paper()
    again = FACTS.validate_python(paper.model_dump(mode="json"))
    assert again == paper and isinstance(again, PaperFacts)
    record = EntityRecord(source="arxiv", external_id="2511.00001", domain=Domain("science"), name="A paper",
                          occurred_at=paper.submitted, payload={}, facts=paper)
    dumped = record.model_dump(mode="json")
    assert dumped["facts"]["authors"] == ["A. Author", "B. Author"]  # the subclass's fields, not the base's
    assert EntityRecord.model_validate_json(record.model_dump_json()).facts == paper


@pytest.mark.parametrize(
    ("bad", "message"),
    [({"kind": "nope", "title": "x"}, "unknown kind of facts 'nope'"), ({"title": "x"}, "unknown kind of facts None"),
     ("paper", "facts are an object with a `kind`, got str"),
     ({"kind": "paper", "title": "x"}, "arxiv_id")],  # the kind's own model names its missing field
)
def test_bad_facts_are_refused_by_name(bad: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        FACTS.validate_python(bad)


def test_a_spec_that_clashes_or_is_malformed_is_refused_by_name() -> None:
    science = DOMAINS["science"]
    with pytest.raises(ValueError, match="its source is already domain 'science'"):
        register(DomainSpec(name="other", package="tests.domains.none", facts=_Other, slots=(), source="arxiv",
                            settings=science.settings, quota=1))
    with pytest.raises(ValueError, match="its kind is already domain 'science'"):
        register(DomainSpec(name="other", package="tests.domains.none", facts=PaperFacts, slots=(), source="x",
                            settings=science.settings, quota=1))
    with pytest.raises(ValueError, match="its source is already domain 'music'"):  # a domain's second source too
        register(DomainSpec(name="other", package="tests.domains.none", facts=_Other, slots=(), source="x",
                            settings=science.settings, more_sources=(("deezer", science.settings),), quota=1))
    with pytest.raises(ValueError, match="its kind is already domain 'disasters'"):  # a domain's second kind too
        register(DomainSpec(name="other", package="tests.domains.none", facts=_Other, slots=(), source="x",
                            settings=science.settings, more_kinds=((DisasterFacts, ()),), quota=1))
    with pytest.raises(KeyError, match="domain 'science' has no kind of facts DisasterFacts"):
        science.slots_of(DisasterFacts)
    with pytest.raises(ValueError, match="must be identifiers"):
        DomainSpec(name="no-dash", package="p", facts=_Other, slots=(), source="x", settings=science.settings, quota=1)
    with pytest.raises(ValueError, match="must be identifiers"):
        DomainSpec(name="other", package="p", facts=_Other, slots=(), source="x", settings=science.settings, quota=1,
                   more_sources=(("not-one", science.settings),))
    with pytest.raises(ValueError, match="a quota is a count"):
        DomainSpec(name="other", package="p", facts=_Other, slots=(), source="x", settings=science.settings, quota=-1)
    with pytest.raises(ValueError, match="unknown domain module 'poller'"):
        science.module("poller")
    assert list(DOMAINS) == ["movies", "music", "sports", "disasters", "science", "spaceflight"]  # nothing half-registered


def test_a_domain_s_vocabulary_is_added_once_and_never_over_another_s() -> None:
    from clkt.documents.labels import LABELS, add_labels, label_text
    from clkt.domains.spaceflight.labels import ORBIT

    assert label_text(ORBIT, "Low Earth Orbit", "fr") == "orbite terrestre basse"  # the folder's words, by category
    with pytest.raises(ValueError, match=r"already defined: \['genre', 'orbit'\]"):
        add_labels({"orbit": {"x": ("x", "x", "x", "x", "x")}, "genre": {}, "new": {}})
    assert "new" not in LABELS and "x" not in LABELS[ORBIT]  # nothing half-added
