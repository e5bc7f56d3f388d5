"""`clkt snapshot build` with `agents.backend = "llm"`: the command builds the agent backend and its LLM roles write
the open track (against the fake OpenAI-compatible server on loopback, served by this test's loop while the command
runs in its own thread)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from pydantic_ai.models import override_allow_model_requests

from clkt.openqa.frozen import load_open_questions
from clkt.snapshots.layout import load_snapshot_dir
from storage.engine import Store
from tests.cli._in_process import clkt
from tests.fakes.openai_server import FakeOpenAI
from tests.snapshots.factories import fill_period, make_settings, state_numbers

JUNE = datetime(2025, 6, 1, tzinfo=UTC)


async def test_snapshot_build_with_the_llm_backend_writes_the_open_track(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    async with Store(url=settings.resolved_store_url) as store:
        await fill_period(store, month_start=JUNE, per_domain=1)
        await state_numbers(store)
    async with FakeOpenAI(record_requests=True) as server:
        toml = tmp_path / "clkt.toml"
        toml.write_text(toml.read_text() + "\n".join([
            "[agents]", 'backend = "llm"', 'judge_model = "fake:judge"', 'generator_model = "fake:gen"',
            'verifier_model = "fake:verifier"', 'translator_model = "fake:translator"',
            "[agents.providers.fake]", f'base_url = "{server.base_url}"', "max_attempts = 1", "",
        ]))
        with override_allow_model_requests(True):
            ran = await asyncio.to_thread(clkt, "snapshot", "build", "--period", "2025-06", "--partial",
                                          "--config", str(toml))
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert any(r.get("tools", [{}])[0].get("function", {}).get("name") for r in server.stats.requests)
    (folder,) = (tmp_path / "snapshots").glob("*/*")
    info = load_snapshot_dir(folder).manifest.open
    assert info is not None and info.engine == "open-llm-1" and info.questions == 4  # one entity per domain
    assert len(load_open_questions(folder)) == 4
