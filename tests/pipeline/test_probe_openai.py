"""Targets served over an OpenAI-compatible endpoint (e.g. vLLM): chat for instruct, completions for base."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from clkt.config import Settings, TargetSettings
from clkt.errors import ModelUnavailableError
from clkt.pipeline.probe import probe_target
from storage.engine import Store
from tests.fakes.openai_server import FakeOpenAI


async def test_remote_targets_are_probed_over_http(store: Store, tmp_path: Path) -> None:
    async with FakeOpenAI() as server, aiohttp.ClientSession() as http:
        server.script = [{"text": "A match in Liverpool."}, {"text": " It was a football game."}]
        settings = Settings(data_dir=tmp_path)

        async def ask(target: TargetSettings, prompts: list[str]) -> list[str]:
            return await probe_target(target, prompts, http=http, max_new_tokens=settings.agents.probe_max_new_tokens,
                                      data_dir=settings.data_dir, device=settings.gpu.devices[0])

        chat = TargetSettings(name="chat", model="qwen", kind="instruct", backend="openai", base_url=server.base_url)
        base = TargetSettings(name="base", model="qwen-base", kind="base", backend="openai", base_url=server.base_url)
        assert await ask(chat, ["Provide a brief factual summary of 'X'."]) == ["A match in Liverpool."]
        assert await ask(base, ["Provide a brief factual summary of 'X'.\nSummary:"]) == ["It was a football game."]
        server.script = [{"status": 500}]
        with pytest.raises(ModelUnavailableError, match="HTTP 500"):
            await ask(chat, ["p"])
