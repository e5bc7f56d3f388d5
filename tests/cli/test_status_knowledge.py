"""`clkt status` shows the cutoff each target really has, from its probe verdicts, and the contamination alarm."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import clkt.cli as cli
from storage.engine import Store
from tests.report._knowledge_store import probed_store


@pytest.mark.usefixtures("wide_console")
def test_clkt_status_prints_the_knowledge_table_with_its_alarm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def seed() -> None:
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
            await probed_store(store, knew_window_month=True)

    asyncio.run(seed())
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n[spec]\nlanguages = ["en", "fr"]\n'
                   '[[spec.targets]]\nname = "gemma"\nmodel = "embedded:gemma-3-270m"\ncutoff = 2024-08-31\n', encoding="utf-8")
    capsys.readouterr()
    cli.main(["status", "--config", str(cfg)])
    out = capsys.readouterr().out
    assert "Knowledge cutoffs (probe verdicts by month of occurrence)" in out
    assert "ALARM: 2025-05 above the floor" in out and "2024-08-31" in out and "2025-03-02" in out
    cli.main(["status", "--config", str(cfg), "--json"])
    assert '"alarm_months": [\n' in capsys.readouterr().out
