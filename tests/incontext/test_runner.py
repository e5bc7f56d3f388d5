"""`clkt incontext`'s runner on a stored snapshot, then its report: the section is there, apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from clkt.config import GpuSettings, SpecSettings
from clkt.errors import ConfigError, UserError
from clkt.incontext.runner import run_incontext
from clkt.report.incontext import INCONTEXT_TITLE
from clkt.report.markdown import markdown
from clkt.report.writer import load_report_data
from storage.engine import Store
from tests.fakes.openai_server import FakeOpenAI
from tests.incontext._helpers import api_target, fake_agents, no_secrets
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot


async def test_the_track_runs_on_a_stored_snapshot_and_reports_apart(store: Store, tmp_path: Path) -> None:
    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    spec = SpecSettings(targets=[api_target()], languages=["en", "fr"])
    async with FakeOpenAI() as server:
        server.script = [{"text": "B"}] * 12
        agents = fake_agents(server.base_url)
        [run] = await run_incontext(store=store, snapshot_id=SNAPSHOT_ID, spec=spec, agents=agents,
                                    gpu=GpuSettings(max_new_tokens=8), data_dir=tmp_path, secret=no_secrets)
        assert run.error is None and run.counts.asked == 12 and server.stats.calls == 12
        with pytest.raises(UserError, match="no target nope"):
            await run_incontext(store=store, snapshot_id=SNAPSHOT_ID, spec=spec, agents=agents, gpu=GpuSettings(),
                                data_dir=tmp_path, secret=no_secrets, targets=["nope"])
    data = await load_report_data(store, SNAPSHOT_ID)
    [t] = data.incontext
    assert t.target == "api-t" and t.answered == 12
    md = markdown(data, [])
    assert f"## {INCONTEXT_TITLE}" in md and "| api-t |" in md


async def test_a_missing_key_stops_the_run_before_anything_is_asked(store: Store, tmp_path: Path) -> None:
    spec = SpecSettings(targets=[api_target().model_copy(update={"model": "openai:gpt-4o-mini"})])
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        await run_incontext(store=store, snapshot_id="none", spec=spec, agents=fake_agents("http://127.0.0.1:9/v1"),
                            gpu=GpuSettings(), data_dir=tmp_path, secret=no_secrets)
