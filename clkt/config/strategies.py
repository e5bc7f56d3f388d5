"""The injection strategies' names, declared once: what `[spec] strategies` accepts and how a reader names them.

This is the kernel's half of the strategy registry. It knows a strategy's *name* (the string the config file
and the store carry), its *label* (how a human reads it) and its *family* (the paper's section 3.2: continual
pretraining, supervised fine-tuning, knowledge editing), never how it injects: that is the strategy's module,
`clkt/inject/strategies/<name with - as _>.py`, which registers its `Injector` under the same name
(`clkt.inject.strategies.register_injector`). The config validates names here, so it never imports the layers
above it.

A new strategy is one entry in `BUILTIN_STRATEGIES` (below) plus its module. A name registered twice raises
`StrategyConflictError`; an unknown name raises `UnknownStrategyError`, one line naming the bad value and the
known ones. Tests register a toy strategy with `STRATEGY_NAMES.register(...)` and take it away with
`STRATEGY_NAMES.unregister(...)`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from clkt.errors import UserError

__all__ = [
    "BUILTIN_STRATEGIES",
    "DEFAULT_STRATEGY",
    "STRATEGY_NAMES",
    "StrategyConflictError",
    "StrategyName",
    "StrategyNames",
    "UnknownStrategyError",
    "check_strategy",
    "strategy_label",
    "strategy_names",
]


class UnknownStrategyError(UserError, ValueError):
    """A strategy name no module declared (a `ValueError` too: pydantic validators report it as the reason)."""


class StrategyConflictError(UserError):
    """A strategy name registered twice."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyName:
    """One strategy as the config, the store and the report know it."""

    name: str  # the config's and the store's string: lower-case words joined by "-"
    label: str  # how a reader names it
    family: str  # the paper's family of post-training methods

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.strip().lower() or " " in self.name:
            raise UserError(f"a strategy name is lower-case words joined by '-', not {self.name!r}")


BUILTIN_STRATEGIES: tuple[StrategyName, ...] = (
    StrategyName(name="cpt-lora", label="continual pretraining (LoRA)", family="continual pretraining"),
    StrategyName(name="sft-lora", label="supervised fine-tuning (LoRA)", family="supervised fine-tuning"),
    StrategyName(name="sft-facts-lora", label="fact-based supervised fine-tuning (LoRA)",
                 family="supervised fine-tuning"),
    StrategyName(name="full-ft", label="full fine-tuning", family="continual pretraining"),
    StrategyName(name="memit", label="knowledge editing (MEMIT)", family="knowledge editing"),
)
DEFAULT_STRATEGY = "cpt-lora"


class StrategyNames:
    """The declared strategies, by name, in the order they were registered."""

    def __init__(self, entries: Iterable[StrategyName] = ()) -> None:
        self._by_name: dict[str, StrategyName] = {}
        for e in entries:
            self.register(e)

    def register(self, entry: StrategyName) -> StrategyName:
        if entry.name in self._by_name:
            raise StrategyConflictError(f"strategy {entry.name!r} is already registered")
        self._by_name[entry.name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Take `name` away (a test's toy strategy); unknown names raise."""
        self.get(name)
        del self._by_name[name]

    def names(self) -> list[str]:
        return list(self._by_name)

    def get(self, name: str) -> StrategyName:
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownStrategyError(f"unknown strategy {name!r}; known: {', '.join(sorted(self._by_name))}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name


STRATEGY_NAMES = StrategyNames(BUILTIN_STRATEGIES)


def strategy_names() -> list[str]:
    """Every declared strategy name, in declaration order."""
    return STRATEGY_NAMES.names()


def check_strategy(name: str) -> str:
    """`name` when it is declared, else `UnknownStrategyError`."""
    return STRATEGY_NAMES.get(name).name


def strategy_label(name: str) -> str:
    """How a reader names strategy `name` (its own name when it is not declared: a stored job of a strategy
    since removed still reads)."""
    return STRATEGY_NAMES.get(name).label if name in STRATEGY_NAMES else name
