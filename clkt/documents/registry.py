"""The registry of the kinds of facts: one entry per kind (its discriminator, `clkt.facts`), set once per side.

A kind of facts (a match, a film, a quake...) is declared once on each side of the layering, in the module that
owns that side's part of it, by registering one entry keyed by the facts' `kind`:

- the kernel: a `DocumentKind` (its facts class, its domain, its fact slots, its document renderer), registered
  by its domain folder's `document.py` (`clkt/domains/<name>/`);
- the agents: an `AgentKind` (`agents.template.domains`: question templates, proper names, judge facts),
  registered by its domain folder's `templates.py`;
- the snapshots: a `FictionalKind` (`clkt.snapshots.fiction`: the control split's maker), registered by its
  domain folder's `control.py`.

Every caller asks its side's registry by the facts' kind; nothing chains `isinstance` over the kinds. Each
side's package imports its own modules once (`load_modules`) and every registered domain's module of its side
(`clkt.domains.import_side`), so a new kind is its domain folder with nothing else to edit. Registering a kind
twice raises `UserError` (a programming mistake); `unregister` is for tests that add a kind of their own.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from clkt.documents.formatting import Formatter
from clkt.errors import UserError
from clkt.facts import RenderedDocument

__all__ = [
    "DOCUMENT_KINDS",
    "DocumentKind",
    "KindRegistry",
    "document_kind",
    "kinds_of_domain",
    "load_modules",
    "slots_of",
]


class _Keyed(Protocol):
    @property
    def kind(self) -> str: ...


E = TypeVar("E", bound=_Keyed)
F = TypeVar("F", bound=BaseModel)


class KindRegistry(Generic[E]):
    """Entries keyed by their `kind`, in registration order; a kind is registered once."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._entries: dict[str, E] = {}

    def register(self, entry: E) -> E:
        """Adds `entry`; raises `UserError` when its kind is already registered. Returns `entry`."""
        if entry.kind in self._entries:
            raise UserError(f"the {self._what} of kind {entry.kind!r} is registered twice")
        self._entries[entry.kind] = entry
        return entry

    def unregister(self, kind: str) -> None:
        """Removes the entry of `kind` (a test's own kind, once the test is over); raises when there is none."""
        if self._entries.pop(kind, None) is None:
            raise UserError(f"no {self._what} of kind {kind!r} to unregister")

    def find(self, kind: str) -> E | None:
        return self._entries.get(kind)

    def kinds(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def __iter__(self) -> Iterator[E]:
        return iter(tuple(self._entries.values()))

    def __contains__(self, kind: object) -> bool:
        return kind in self._entries


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentKind(Generic[F]):
    """The kernel's part of a kind of facts: what the facts are, the domain they belong to, the fact slots a
    document states (and questions ask about), in order, and the renderer of the document in one language."""

    kind: str
    facts: type[F]
    domain: str  # a `clkt.facts.Domain` value for the product's kinds
    slots: tuple[str, ...]
    render: Callable[[F, Formatter], RenderedDocument]


DOCUMENT_KINDS: KindRegistry[DocumentKind[Any]] = KindRegistry("document renderer")


def document_kind(kind: str) -> DocumentKind[Any] | None:
    return DOCUMENT_KINDS.find(kind)


def slots_of(kind: str) -> tuple[str, ...]:
    """The fact slots of `kind`, in document order (empty for a kind nobody registered)."""
    entry = DOCUMENT_KINDS.find(kind)
    return entry.slots if entry is not None else ()


def kinds_of_domain(domain: str) -> tuple[str, ...]:
    """The kinds of facts of `domain`, in registration order."""
    return tuple(k.kind for k in DOCUMENT_KINDS if k.domain == domain)


def load_modules(package: str, path: Iterable[str]) -> None:
    """Imports every public module of `package` (its `__path__` is `path`), so that each kind's module registers
    its entries; a package's `__init__` calls it once, as its last statement."""
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
