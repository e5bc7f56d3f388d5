"""Settings and documents for the agent tests."""

from __future__ import annotations

from typing import Any

from agents.cache import CallCache
from agents.factory import ModelFactory, ResolvedModel, check_llm_config
from agents.llm import LlmBackend
from clkt.config import Settings
from clkt.documents import render_document
from clkt.facts import RenderedDocument
from tests.documents.samples import LIVERPOOL_SWANSEA

__all__ = ["LIVERPOOL_SWANSEA", "check_config", "llm_backend", "llm_settings", "match_doc", "model_factory"]


def llm_settings(**agents: Any) -> Settings:
    base: dict[str, Any] = {
        "backend": "llm",
        "judge_model": "fake:judge",
        "generator_model": "fake:gen",
        "verifier_model": "fake:verifier",
        "translator_model": "fake:translator",
        "output_retries": 2,
        "providers": {"fake": {"base_url": "http://127.0.0.1:9/v1", "rpm": 6000, "tpm": 10_000_000}},
    }
    base.update(agents)
    return Settings(agents=base, spec={"languages": ["en", "fr", "ja"]})


def match_doc() -> RenderedDocument:
    return render_document(LIVERPOOL_SWANSEA, "en")


def llm_backend(settings: Settings, *, cache: CallCache, **kw: Any) -> LlmBackend:
    """The LLM backend with the sections of `settings` it receives in the daemon."""
    return LlmBackend(agents=settings.agents, languages=settings.spec.languages, secret=settings.secret, cache=cache,
                      **kw)


def model_factory(settings: Settings, *, cache: CallCache, **kw: Any) -> ModelFactory:
    return ModelFactory(agents=settings.agents, secret=settings.secret, cache=cache, **kw)


def check_config(settings: Settings) -> dict[str, ResolvedModel]:
    return check_llm_config(settings.agents, secret=settings.secret)
