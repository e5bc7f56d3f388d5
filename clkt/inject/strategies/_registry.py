"""The injectors by strategy name: each strategy's module registers its `Injector` once, at import.

A strategy's name is declared in the kernel (`clkt.config.strategies`: what the config accepts, the report's
label); its injector lives in `clkt/inject/strategies/<name with - as _>.py`, which ends with
`INJECTOR = register_injector(...)`. `injector_for(name)` imports that module the first time the name is asked
for, so adding a strategy touches neither the job nor this registry. Registering a name twice, or a name the
kernel does not declare, raises.
"""

from __future__ import annotations

import importlib
from typing import TypeVar

from clkt.config.strategies import STRATEGY_NAMES, StrategyConflictError, check_strategy
from clkt.errors import UserError
from clkt.inject.injector import Injector

__all__ = ["INJECTORS", "InjectorRegistry", "injector_for", "module_for", "register_injector"]

PACKAGE = "clkt.inject.strategies"

InjectorT = TypeVar("InjectorT", bound=Injector)


def module_for(name: str) -> str:
    """The module that registers strategy `name`'s injector."""
    return f"{PACKAGE}.{name.replace('-', '_')}"


class InjectorRegistry:
    def __init__(self) -> None:
        self._by_name: dict[str, Injector] = {}

    def register(self, injector: InjectorT) -> InjectorT:
        name = injector.name
        if name not in STRATEGY_NAMES:
            raise UserError(f"injector {name!r} has no declared strategy name: add it to "
                            "clkt.config.strategies.BUILTIN_STRATEGIES (or STRATEGY_NAMES.register it)")
        if name in self._by_name:
            raise StrategyConflictError(f"an injector for strategy {name!r} is already registered")
        self._by_name[name] = injector
        return injector

    def unregister(self, name: str) -> None:
        if self._by_name.pop(name, None) is None:
            raise UserError(f"no injector registered for strategy {name!r}")

    def get(self, name: str) -> Injector:
        """The injector of a declared strategy, its module imported on first use."""
        check_strategy(name)  # UnknownStrategyError: one line with the declared names
        if name not in self._by_name:
            module = module_for(name)
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as e:
                if e.name != module:
                    raise
                raise UserError(f"strategy {name!r} is declared but has no module {module}") from None
        try:
            return self._by_name[name]
        except KeyError:
            raise UserError(f"strategy {name!r}: its module {module_for(name)} registers no injector") from None

    def registered(self) -> list[str]:
        return sorted(self._by_name)


INJECTORS = InjectorRegistry()


def register_injector(injector: InjectorT) -> InjectorT:
    """Register `injector` under its name (once); returns it, for `INJECTOR = register_injector(...)`."""
    return INJECTORS.register(injector)


def injector_for(name: str) -> Injector:
    return INJECTORS.get(name)
