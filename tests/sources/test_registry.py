"""The sources are listed once (`clkt.sources.registry`): the settings' tables, the kinds of facts, the cards'
licences and the replay server all agree with it."""

from __future__ import annotations

import typing

from clkt.config import SourcesSettings
from clkt.documents.registry import DOCUMENT_KINDS
from clkt.replay import catalog, stream
from clkt.snapshots.card import SOURCE_LICENCES
from clkt.sources.registry import RETIRED_LICENCES, SOURCE_TYPES, licence_of, source_licences


def test_every_source_has_a_settings_table_of_its_own_class() -> None:
    assert list(SOURCE_TYPES) == list(SourcesSettings.model_fields)
    for name, cls in SOURCE_TYPES.items():
        assert cls.name == name
        settings_type = typing.get_type_hints(SourcesSettings)[name]
        assert typing.get_args(cls.__orig_bases__[0]) == (settings_type,)  # type: ignore[attr-defined]


def test_every_source_yields_a_registered_kind_of_its_domain() -> None:
    for cls in SOURCE_TYPES.values():
        kind = DOCUMENT_KINDS.find(cls.kind)
        assert kind is not None, cls.name
        assert kind.domain == cls.domain.value, cls.name


def test_licences_come_from_the_source_classes() -> None:
    assert list(source_licences()) == [*SOURCE_TYPES, *RETIRED_LICENCES]
    assert SOURCE_LICENCES["usgs"] == (SOURCE_TYPES["usgs"].licence.provider, SOURCE_TYPES["usgs"].licence.terms)
    assert SOURCE_LICENCES["reliefweb"][0].startswith("ReliefWeb")
    assert licence_of("nowhere") is None
    assert all(cls.licence.provider and cls.licence.terms for cls in SOURCE_TYPES.values())


def test_the_replay_server_serves_the_listed_sources() -> None:
    assert stream.SOURCES == catalog.SOURCES == tuple(SOURCE_TYPES)
    assert {name: cls.kind for name, cls in SOURCE_TYPES.items()} == stream.KIND_OF
    assert set(catalog.load_catalog().items) == set(SOURCE_TYPES)
