"""API targets in the config: the model string, the required cutoff, the key checked at start, no GPU jobs, the
probe through the agents' model stack."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from pydantic import SecretStr

from clkt.config import AgentSettings, ProviderSettings, SpecSettings, TargetSettings, load_settings
from clkt.errors import ConfigError
from clkt.targets.api import ApiTargets, check_api_targets, is_api_target
from storage.engine import Store
from storage.llm_cache import SqlCallCache
from tests.fakes.openai_server import FakeOpenAI
from tests.incontext._helpers import api_target, fake_agents, no_secrets

API_TOML = """
[[spec.targets]]
name = "gpt"
model = "openai:gpt-4o-mini"
backend = "api"
kind = "instruct"
{cutoff}
"""


def test_an_api_target_without_a_cutoff_is_one_line_at_load(tmp_path: Path) -> None:
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(API_TOML.format(cutoff=""), encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_settings(cfg, environ={})
    assert "needs its declared knowledge cutoff" in str(e.value) and "\n" not in str(e.value)
    cfg.write_text(API_TOML.format(cutoff='cutoff = "2023-10-01"'), encoding="utf-8")
    s = load_settings(cfg, environ={})
    assert is_api_target(s.spec.targets[0]) and s.spec.targets[0].cutoff == date(2023, 10, 1)


def test_an_api_target_names_a_provider_and_a_model() -> None:
    with pytest.raises(ValueError, match="'<provider>:<model>'"):
        TargetSettings(name="x", model="gpt-4o-mini", backend="api", cutoff=date(2024, 1, 1))


def test_a_provider_without_a_key_is_refused_at_start_without_its_value() -> None:
    t = TargetSettings(name="gpt", model="openai:gpt-4o-mini", backend="api", cutoff=date(2023, 10, 1))
    local = TargetSettings(name="local", model="embedded:gemma-3-270m", cutoff=date(2024, 8, 1))
    with pytest.raises(ConfigError, match="OPENAI_API_KEY") as e:
        check_api_targets([local, t], AgentSettings(), secret=no_secrets)
    assert "gpt" in str(e.value)

    def secret(env: str | None) -> SecretStr | None:
        return SecretStr("sk-test-123") if env == "OPENAI_API_KEY" else None

    resolved = check_api_targets([local, t], AgentSettings(), secret=secret)
    assert list(resolved) == ["gpt"] and "sk-test-123" not in repr(resolved)
    with pytest.raises(ConfigError, match="unknown provider 'nowhere'"):
        check_api_targets([api_target().model_copy(update={"model": "nowhere:m"})], AgentSettings(), secret=no_secrets)


def test_the_probe_worker_refuses_to_start_without_the_key(tmp_path: Path) -> None:
    from clkt.pipeline.flow import FLOW
    from clkt.pipeline.probe import ProbeWorker
    from clkt.pipeline.stage_worker import StageConfig

    s = load_settings(None, environ={})
    spec = s.spec.model_copy(update={"targets": [TargetSettings(
        name="gpt", model="openai:gpt-4o-mini", backend="api", cutoff=date(2023, 10, 1))]})
    step = next(st for st in FLOW if st.stage.value == "probe")
    config = StageConfig(daemon=s.daemon, spec=spec, agents=s.agents, data_dir=tmp_path, device="cpu",
                         secret=no_secrets)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        ProbeWorker.from_config(step, config)


async def test_an_api_target_is_never_a_gpu_job(store: Store) -> None:
    from clkt.config import GpuSettings
    from clkt.snapshots.service import enqueue_spec_jobs

    spec = SpecSettings(targets=[api_target()])
    async with store.transaction() as s:
        assert await enqueue_spec_jobs(s, "snap-1", spec=spec, gpu=GpuSettings()) == 0
        assert await enqueue_spec_jobs(s, "snap-1", spec=spec, gpu=GpuSettings(), targets=["api-t"]) == 0


async def test_an_api_target_answers_through_the_cache(store: Store) -> None:
    async with FakeOpenAI() as server:
        server.script = [{"text": "A summary."}]
        agents: AgentSettings = fake_agents(server.base_url)
        assert isinstance(agents.providers["fake"], ProviderSettings)
        api = ApiTargets.build(agents=agents, secret=no_secrets, cache=SqlCallCache(store))
        first = await api.ask(api_target(), "Provide a brief factual summary of 'X'.", max_tokens=32, stage="probe")
        again = await ApiTargets.build(agents=agents, secret=no_secrets, cache=SqlCallCache(store)).ask(
            api_target(), "Provide a brief factual summary of 'X'.", max_tokens=32, stage="probe")
        assert server.stats.calls == 1
    assert first.text == again.text == "A summary." and again.cached and not first.cached
    assert first.input_tokens == again.input_tokens > 0


async def test_the_probe_asks_an_api_target_through_the_agents_stack(store: Store, tmp_path: Path) -> None:
    import aiohttp

    from clkt.context import ServiceContext
    from clkt.pipeline.flow import FLOW
    from clkt.pipeline.probe import ProbeWorker
    from clkt.telemetry import Metrics

    s = load_settings(None, environ={})
    async with FakeOpenAI() as server, aiohttp.ClientSession() as http:
        server.script = [{"text": "Never heard of it."}, {"text": "Aucune idée."}]
        agents = fake_agents(server.base_url)
        spec = s.spec.model_copy(update={"targets": [api_target()]})
        step = next(st for st in FLOW if st.stage.value == "probe")
        worker = ProbeWorker(step=step, daemon=s.daemon, spec=spec, agents=agents, data_dir=tmp_path, device="cpu",
                             secret=no_secrets)
        ctx = ServiceContext(store=store, http=http, owner="t", metrics=Metrics())
        answers = await worker.probe_fn(api_target(), ["Summary of 'X'?", "Résumé de 'X' ?"], ctx)
        assert answers == ["Never heard of it.", "Aucune idée."]
        assert await worker.probe_fn(api_target(), ["Summary of 'X'?"], ctx) == ["Never heard of it."]  # cached
        assert server.stats.calls == 2
