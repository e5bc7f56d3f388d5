"""`[agents.jury]` (`clkt.config.jury`, issue 47 item 3): no jury by default (no stage, nothing changes), judges read
from TOML and the environment, a jury of one family or a malformed judge refused at load naming the key, fewer than
three judges accepted with a warning, the daemon's preflight refusing a judge whose key is not in the environment, and
the `open-jury` stage registered only where judges are named."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from clkt.config import Settings, load_settings
from clkt.errors import ConfigError
from clkt.preflight import check_jury
from clkt.services import build_services
from clkt.sources.board import SourceBoard

THREE = '["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest", "vllm:Qwen/Qwen2.5-7B-Instruct"]'
VLLM = '[agents.providers.vllm]\nbase_url = "http://127.0.0.1:8000/v1"\n'


def _load(tmp_path: Path, body: str, environ: dict[str, str] | None = None) -> Settings:
    cfg = tmp_path / "c.toml"
    cfg.write_text(body, encoding="utf-8")
    return load_settings(cfg, environ=environ or {})


def test_no_jury_by_default_and_no_stage(tmp_path: Path) -> None:
    s = load_settings(None, environ={})
    assert s.agents.jury.judges == () and not s.agents.jury.enabled and s.agents.jury.size_warning() is None
    check_jury(s)  # nothing to check
    assert "open-jury" not in {x.name for x in build_services(s, board=SourceBoard())}


def test_three_judges_from_toml_and_the_stage_registered(tmp_path: Path) -> None:
    s = _load(tmp_path, f"[agents.jury]\njudges = {THREE}\nmax_attempts = 4\n{VLLM}",
              {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test"})
    jury = s.agents.jury
    assert len(jury.judges) == 3 and jury.max_attempts == 4 and jury.output_retries == 2 and jury.batch_size == 64
    check_jury(s)
    assert "open-jury" in {x.name for x in build_services(s, board=SourceBoard())}


def test_judges_from_the_environment(tmp_path: Path) -> None:
    s = load_settings(None, environ={"CLKT_AGENTS__JURY__JUDGES": THREE})
    assert s.agents.jury.judges[2] == "vllm:Qwen/Qwen2.5-7B-Instruct"


@pytest.mark.parametrize(("judges", "reason"), [
    ('["a:Qwen2.5-7B-Instruct", "b:qwen2.5-14b", "openai:gpt-4o-mini"]', "judges of one family ['qwen']"),
    ('["gpt-4o-mini"]', "'<provider>:<model>'"),
    ('["openai:gpt-4o", "openai:gpt-4o"]', "named twice"),
])
def test_a_bad_jury_is_refused_at_load_naming_the_key(tmp_path: Path, judges: str, reason: str) -> None:
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, f"[agents.jury]\njudges = {judges}\n")
    assert "agents.jury" in str(e.value) and reason in str(e.value)


def test_one_family_accepted_when_asked(tmp_path: Path) -> None:
    s = _load(tmp_path, '[agents.jury]\njudges = ["a:qwen2.5-7b", "b:qwen3-8b", "c:llama-3-8b"]\nallow_same_family = true\n')
    assert s.agents.jury.enabled


def test_fewer_than_three_judges_load_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="clkt.config.loader"):
        s = _load(tmp_path, '[agents.jury]\njudges = ["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku"]\n')
    assert s.agents.jury.judges and "agents.jury has 2 judge(s)" in caplog.text


def test_the_preflight_refuses_a_judge_without_its_key(tmp_path: Path) -> None:
    s = _load(tmp_path, f"[agents.jury]\njudges = {THREE}\n{VLLM}", {"OPENAI_API_KEY": "sk-test"})
    with pytest.raises(ConfigError) as e:
        check_jury(s)
    assert "ANTHROPIC_API_KEY" in str(e.value) and "agents.jury.judges[1]" in str(e.value)
    assert "sk-test" not in str(e.value)
    with pytest.raises(ConfigError, match="unknown provider 'nowhere'"):
        check_jury(_load(tmp_path, '[agents.jury]\njudges = ["nowhere:gemma-2-9b"]\n'))
