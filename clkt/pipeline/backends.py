"""The agent backend of the stage workers, from `settings.agents.backend`.

"template" → the deterministic offline engine (`agents.template.TemplateBackend`); "llm" → the pydantic-ai
agents (`agents.llm.LlmBackend`) with the call cache in the store. One backend per daemon, built on first
use and kept in `ctx.extras`; `check_backend_config()` runs at start-up so a missing API key stops the
daemon with a clear `ConfigError` instead of failing tasks later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.backend import AgentBackend
from clkt.config import Settings
from clkt.errors import ConfigError

if TYPE_CHECKING:
    from clkt.context import ServiceContext
    from storage.engine import Store

__all__ = ["build_backend", "backend_for", "check_backend_config"]

_EXTRA = "agent_backend"


def check_backend_config(settings: Settings) -> None:
    if settings.agents.backend == "llm":
        from agents.models import check_llm_config

        check_llm_config(settings)


def build_backend(settings: Settings, *, store: Store) -> AgentBackend:
    kind = settings.agents.backend
    if kind == "template":
        from agents.template import TemplateBackend

        return TemplateBackend()
    if kind == "llm":
        from agents.llm import LlmBackend
        from storage.llm_cache import SqlCallCache

        check_backend_config(settings)
        return LlmBackend(settings=settings, cache=SqlCallCache(store))
    raise ConfigError("agents.backend", f"unknown backend {kind!r}")


def backend_for(ctx: ServiceContext) -> AgentBackend:
    """The daemon's one backend (built on first use; tests may put their own in `ctx.extras`)."""
    backend = ctx.extras.get(_EXTRA)
    if backend is None:
        backend = ctx.extras[_EXTRA] = build_backend(ctx.settings, store=ctx.store)
    return backend  # type: ignore[no-any-return]
