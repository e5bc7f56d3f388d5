"""The sources, listed once: each `Source` class carries its name, domain, kind of facts and licence; every other
place (the settings' tables, the cards' licences, the replay server's catalog and stream) reads them from here."""

from __future__ import annotations

from typing import Any

from clkt.domains import DOMAINS, import_side
from clkt.sources.base import Source, SourceLicence

__all__ = ["RETIRED_LICENCES", "SOURCE_TYPES", "licence_of", "source_licences"]


def _domain_sources() -> list[type[Source[Any]]]:
    """Each registered domain's pollers: the `SOURCE` its folder's `source.py` declares (or `SOURCES`, a domain of
    several sources), each named as its spec says."""
    out: list[type[Source[Any]]] = []
    for module in import_side("source"):
        declared = getattr(module, "SOURCES", None) or (getattr(module, "SOURCE", None),)
        for cls in declared:
            if not (isinstance(cls, type) and issubclass(cls, Source)):
                raise TypeError(f"{module.__name__} declares no `SOURCE` (its `Source` class)")
            if not any(cls.name in dict(d.sources) and d.package + ".source" == module.__name__ for d in DOMAINS.values()):
                raise TypeError(f"{module.__name__}: its source {cls.name!r} is not one of its domain spec's sources")
            out.append(cls)
    return out


# source name (a field of `clkt.config.SourcesSettings`) -> implementation, in the registry's order
SOURCE_TYPES: dict[str, type[Source[Any]]] = {cls.name: cls for cls in _domain_sources()}

# sources the crawler no longer has, whose items older stores and snapshots may still hold
RETIRED_LICENCES: dict[str, SourceLicence] = {
    "reliefweb": SourceLicence(
        provider="ReliefWeb (UN OCHA), https://reliefweb.int",
        terms="ReliefWeb content is subject to the ReliefWeb terms and to the copyright of each original source; "
        "attribution to ReliefWeb and the source is required.",
    ),
}


def source_licences() -> dict[str, SourceLicence]:
    """Every source's licence by name: the current sources in `SOURCE_TYPES` order, then the retired ones."""
    return {**{name: cls.licence for name, cls in SOURCE_TYPES.items()}, **RETIRED_LICENCES}


def licence_of(name: str) -> SourceLicence | None:
    return source_licences().get(name)
