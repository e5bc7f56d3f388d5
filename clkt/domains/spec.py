"""What a domain package declares about itself (`DomainSpec`): the one object the rest of the product reads.

A domain is one package (`clkt.domains.<name>`, or any importable package, a test's toy domain included) whose
`__init__` declares `SPEC`; its modules are named by side of the layering, and each side's registry imports the
module it needs from every registered domain (`side_module`):

- kernel: `facts.py` (the facts model), `settings.py` (the source's settings), `document.py` (the canonical
  document in every language), `labels.py` (its controlled vocabularies in every language), `pools.py` (its pools
  of real names: distractors, and names the control split's invented ones never take);
- agents: `templates.py` (template questions, proper names, judge facts);
- sources: `source.py` (the poller); snapshots: `control.py` (the control split's maker); replay: `replay.py` (and
  its recorded responses, `data/<source>/`); openqa: `openqa.py` (the open track's short-answer questions).
"""

from __future__ import annotations

from dataclasses import dataclass

from clkt.domain_base import Facts, SourceSettings

__all__ = ["SIDES", "DomainSpec"]

# a domain module's file name -> the side of the layering it belongs to (tests/test_layering.py reads it too)
SIDES: dict[str, str] = {
    "facts": "kernel", "settings": "kernel", "document": "kernel", "templates": "agents", "source": "sources",
    "control": "snapshots", "replay": "replay", "openqa": "openqa", "pools": "kernel", "labels": "kernel",
}


@dataclass(frozen=True, kw_only=True)
class DomainSpec:
    """One domain: its name, the kind of its facts, its source and the defaults the product reads from it."""

    name: str  # the domain: `[snapshot.quotas]`'s key, the spec's domains
    package: str  # the importable package holding its modules ("clkt.domains.<name>")
    facts: type[Facts]  # its facts model; its `kind` literal is the discriminator
    slots: tuple[str, ...]  # the fact slots a document states and questions ask about, in document order
    source: str  # its source's name: the `[sources.<name>]` table
    settings: type[SourceSettings]  # that table's model, with the API's real endpoint and documented rate
    quota: int  # entities per snapshot period, by default
    # a domain with more than one source: the others, (name, settings) each, after `source` in every listing
    more_sources: tuple[tuple[str, type[SourceSettings]], ...] = ()
    # a domain with more than one kind of facts: the others, (facts model, its slots) each, after `facts`
    more_kinds: tuple[tuple[type[Facts], tuple[str, ...]], ...] = ()

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not all(s.isidentifier() for s, _ in self.sources):
            raise ValueError(f"domain {self.name!r}: its name and its sources' names must be identifiers")
        if self.quota < 0:
            raise ValueError(f"domain {self.name!r}: a quota is a count of entities, got {self.quota}")

    @property
    def sources(self) -> tuple[tuple[str, type[SourceSettings]], ...]:
        """(name, settings) of each of its sources: `source` first."""
        return ((self.source, self.settings), *self.more_sources)

    @property
    def kinds(self) -> tuple[tuple[type[Facts], tuple[str, ...]], ...]:
        """(facts model, its slots) of each of its kinds of facts: `facts` first."""
        return ((self.facts, self.slots), *self.more_kinds)

    def slots_of(self, facts: type[Facts]) -> tuple[str, ...]:
        """The slots of its kind of facts `facts`."""
        for model, slots in self.kinds:
            if model is facts:
                return slots
        raise KeyError(f"domain {self.name!r} has no kind of facts {facts.__name__}")

    @property
    def kind_names(self) -> tuple[str, ...]:
        """The `kind` of each of its kinds of facts."""
        return tuple(str(model.model_fields["kind"].default) for model, _ in self.kinds)

    @property
    def kind(self) -> str:
        """The `kind` of its facts (the model's literal default)."""
        default = self.facts.model_fields["kind"].default
        if not isinstance(default, str):
            raise TypeError(f"domain {self.name!r}: {self.facts.__name__}.kind has no literal default")
        return default

    def module(self, side: str) -> str:
        """The dotted name of its module of `side`'s file name ("source", "templates"...)."""
        if side not in SIDES:
            raise ValueError(f"unknown domain module {side!r}; known: {sorted(SIDES)}")
        return f"{self.package}.{side}"
