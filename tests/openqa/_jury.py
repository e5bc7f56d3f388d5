"""The jury of the `open-jury` stage's tests (`tests.openqa.test_jury_stage`, `tests.openqa.test_incontext_jury`):
three judges of three families, one per fake OpenAI-compatible server (the `servers` fixture of
`tests/openqa/conftest.py`), priced so that each call costs something."""

from __future__ import annotations

from typing import Any

from clkt.config import AgentSettings, DaemonSettings
from clkt.openqa.jury_stage import JuryStage
from tests.fakes.openai_server import FakeOpenAI

__all__ = ["JUDGES", "PRICE", "agents", "stage"]

JUDGES = ("srv-a:qwen2.5-7b-instruct", "srv-b:llama-3.1-8b-instruct", "srv-c:gemma-2-9b-it")
PRICE = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}


def agents(
    servers: list[FakeOpenAI], *, budget: float | None = None, timeouts: tuple[float, ...] = (30.0,) * 3, **jury: Any,
) -> AgentSettings:
    providers = {j.partition(":")[0]: {"base_url": s.base_url, "rpm": 600_000, "tpm": 10**10, "timeout_s": t, "max_attempts": 1}
                 for j, s, t in zip(JUDGES, servers, timeouts, strict=True)}
    return AgentSettings.model_validate({
        "providers": providers, "prices": {j: PRICE for j in JUDGES}, "monthly_budget_usd": budget,
        "jury": {"judges": list(JUDGES), "batch_size": 16, **jury},
    })


def stage(servers: list[FakeOpenAI], **kw: Any) -> JuryStage:
    return JuryStage(agents=agents(servers, **kw), daemon=DaemonSettings(), secret=lambda _env: None, burst=True)
