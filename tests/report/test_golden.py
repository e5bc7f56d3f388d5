"""The report of a fixed store is byte-identical to what the code wrote before reporting moved to `clkt.report`
and the job summary became typed (`tests/report/golden/`, written by that code from `tests/report/_store.py`).

Checked: every text file (report.md, table2.csv, pairs.csv, learn.csv, metrics.json, at full float
precision), the PNG figures by their sha256, and what `clkt report` prints. The store's job summaries come in
both shapes: the flat dict the previous version stored, and the typed summary this version stores.
(A new matplotlib may draw other PNG bytes: then compare the figures by eye and rewrite figures.sha256.)

A change of the report that is meant: run this file once with `CLKT_UPDATE_GOLDEN=1`, which writes what the
report is now into `tests/report/golden/` (then read the diff, and say in the commit why each byte changed).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import pytest

from clkt.evaluate.summary import JobSummary
from clkt.report.writer import report_dir, write_report
from storage.engine import Store
from tests.cli._in_process import clkt
from tests.report._store import MODELS, SNAPSHOT_ID, old_summary, seed_report_store

GOLDEN = Path(__file__).parent / "golden"
TEXT_FILES = ("report.md", "table2.csv", "pairs.csv", "learn.csv", "metrics.json")
UPDATE = os.environ.get("CLKT_UPDATE_GOLDEN") == "1"


def _figures() -> dict[str, str]:
    lines = (GOLDEN / "figures.sha256").read_text(encoding="utf-8").splitlines()
    return {name: digest for digest, name in (line.split(maxsplit=1) for line in lines)}


def _update(out: Path) -> None:
    for name in TEXT_FILES:
        (GOLDEN / name).write_bytes((out / name).read_bytes())
    digests = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}" for p in sorted(out.glob("*.png"))]
    (GOLDEN / "figures.sha256").write_text("".join(f"{d}\n" for d in digests), encoding="utf-8")


def assert_golden(out: Path) -> None:
    if UPDATE:
        _update(out)
    for name in TEXT_FILES:
        assert (out / name).read_bytes() == (GOLDEN / name).read_bytes(), f"{name} differs from tests/report/golden/{name}"
    pngs = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.glob("*.png"))}
    assert pngs == _figures()


@pytest.mark.parametrize("shape", ["flat (previous version)", "typed"])
async def test_the_report_of_a_store_is_byte_identical(tmp_path: Path, shape: str) -> None:
    summaries = None
    if shape == "typed":  # what this version's consumer stores: the typed summary, dumped
        summaries = {
            (m, t): JobSummary.model_validate(old_summary(m, t, control=m == "large")).model_dump(mode="json")
            for m in MODELS for t in ("en", "fr")
        }
        assert all("scores" in v and "learn:generate:n" not in v for v in summaries.values())
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        await seed_report_store(store, summaries=summaries)
        await write_report(store, SNAPSHOT_ID, report_dir(tmp_path, SNAPSHOT_ID))
    assert_golden(report_dir(tmp_path, SNAPSHOT_ID))


def test_clkt_report_prints_and_writes_the_same(tmp_path: Path) -> None:
    async def seed() -> None:
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
            await seed_report_store(store)

    asyncio.run(seed())
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n', encoding="utf-8")
    res = clkt("report", SNAPSHOT_ID, "--config", str(cfg), columns=220, timeout_s=300)  # clkt.cli.main, in this process
    assert res.returncode == 0, res.stderr
    if UPDATE:
        (GOLDEN / "clkt-report.stdout").write_text(res.stdout.replace(str(tmp_path), "<data_dir>"), encoding="utf-8")
    assert res.stdout.replace(str(tmp_path), "<data_dir>") == (GOLDEN / "clkt-report.stdout").read_text(encoding="utf-8")
    assert_golden(report_dir(tmp_path, SNAPSHOT_ID))


async def test_the_report_writer_service_writes_the_same_files(tmp_path: Path) -> None:
    import aiohttp

    from clkt.config import DaemonSettings
    from clkt.context import ServiceContext
    from clkt.report.service import ReportService
    from clkt.telemetry import Metrics

    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, aiohttp.ClientSession() as http:
        await seed_report_store(store)
        ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
        (record,) = await ReportService(data_dir=tmp_path, daemon=DaemonSettings()).write_due(ctx)
    out = report_dir(tmp_path, SNAPSHOT_ID)
    assert (tmp_path / record.path).resolve() == out.resolve() and record.jobs == 5  # recorded relative to the data dir
    assert_golden(out)
    assert [p.name for p in out.parent.iterdir()] == [SNAPSHOT_ID]  # no temporary folder left beside it
