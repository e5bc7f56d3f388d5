"""Anthropic model strings build a real pydantic-ai AnthropicModel (no request is made)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.factory import _provider_model, resolve_model
from clkt.config import Settings, load_settings
from clkt.errors import ConfigError


def _settings(tmp_path: Path, env: dict[str, str]) -> Settings:
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        '[agents]\nbackend = "llm"\njudge_model = "anthropic:claude-3-5-haiku-latest"\n'
        'generator_model = "anthropic:claude-3-5-haiku-latest"\nverifier_model = "openai:gpt-4o-mini"\n'
        'translator_model = "anthropic:claude-3-5-haiku-latest"\n'
    )
    return load_settings(cfg, environ=env)


def test_anthropic_model_string_builds_an_anthropic_model(tmp_path: Path) -> None:
    from pydantic_ai.models.anthropic import AnthropicModel

    s = _settings(tmp_path, {"ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_API_KEY": "sk-test"})
    model = _provider_model(resolve_model(s.agents, "anthropic:claude-3-5-haiku-latest", key="agents.generator_model", secret=s.secret))
    assert isinstance(model, AnthropicModel)
    assert model.model_name == "claude-3-5-haiku-latest"


def test_missing_anthropic_key_is_a_clear_error(tmp_path: Path) -> None:
    s = _settings(tmp_path, {"OPENAI_API_KEY": "sk-test"})
    with pytest.raises(ConfigError) as ei:
        resolve_model(s.agents, "anthropic:claude-3-5-haiku-latest", key="agents.generator_model", secret=s.secret)
    assert "ANTHROPIC_API_KEY" in str(ei.value)
