"""`clkt report SNAPSHOT` through the real CLI (`clkt.cli.main`, in this process), on stored results (no model needed)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlmodel import select, update

from storage.engine import Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results
from storage.models import GpuJob, LeaseStatus
from tests.cli._in_process import clkt
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot


async def test_report_command_prints_table2_and_writes_files(tmp_path: Path) -> None:
    snap = write_tiny_snapshot(tmp_path / "snap")
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        await seed_store(store, snap)
        async with store.transaction() as s:
            await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["m"], strategies=["cpt-lora"], train_langs=["en", "fr"],
                                   max_attempts=1)
        async with store.transaction() as s:
            for job in (await s.execute(select(GpuJob))).scalars().all():
                assert job.id is not None
                train = job.train_lang
                recs = [
                    ResultRecord(question_id=q, lang=lang, variant=v, scorer="generate", split="test",
                                 predicted="A", correct=(lang == train) or q == 12)
                    for q in (12, 21) for lang in ("en", "fr") for v in ("base", "injected")
                ]
                await write_job_results(s, job.id, recs)
            await s.execute(update(GpuJob).values(status=LeaseStatus.done))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n')
    res = clkt("report", SNAPSHOT_ID, "--config", str(cfg), columns=220)
    assert res.returncode == 0, res.stderr
    assert "Model comparison" in res.stdout and "50.0 ± 0.0" in res.stdout  # Transfer: 1 of 2 right in the test language
    out = tmp_path / "reports" / SNAPSHOT_ID
    assert (out / "report.md").is_file() and (out / "table2.csv").is_file()
    assert list(out.glob("heatmap-*.png"))


async def test_report_names_a_snapshot_as_every_command_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One rule for naming a snapshot: `clkt report` takes the unique prefix `snapshot show` takes, writes under the
    full id, and refuses an unknown one with the same line."""
    import clkt.cli as cli

    snap = write_tiny_snapshot(tmp_path / "snap")
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        await seed_store(store, snap)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n')

    def run(*argv: str) -> tuple[int, str]:
        capsys.readouterr()
        try:
            cli.main([*argv, "--config", str(cfg)])
            code = 0
        except SystemExit as e:
            code = int(e.code) if isinstance(e.code, int) else 1
        return code, capsys.readouterr().err

    prefix = SNAPSHOT_ID[:8]
    assert (await asyncio.to_thread(run, "snapshot", "show", prefix))[0] == 0  # a thread: the CLI runs its own loop
    code, err = await asyncio.to_thread(run, "report", prefix)
    assert code == 0, err
    assert (tmp_path / "reports" / SNAPSHOT_ID / "report.md").is_file()
    assert not (tmp_path / "reports" / prefix).exists()
    shown = await asyncio.to_thread(run, "snapshot", "show", "nosuch")
    reported = await asyncio.to_thread(run, "report", "nosuch")
    assert shown == reported and shown[0] == 2 and "unknown snapshot 'nosuch'" in shown[1]
