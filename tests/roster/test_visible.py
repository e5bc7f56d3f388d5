"""What a researcher sees of targets over time: `clkt status` (typed, and its table), the status overview's note
while a target is still being probed on old snapshots, the snapshot page's validity per target, and the report
header naming the targets with exclusions."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from clkt.config import EMBEDDED_TARGET
from clkt.report.data import TargetValidity
from clkt.report.markdown import markdown
from clkt.report.writer import build_report
from clkt.roster import LateTargetService, prepare_targets
from clkt.services import page_context
from clkt.status import collect_status
from clkt.web import pages_app
from storage.engine import Store
from tests.roster._flow import LATE, Answers, build_june, probe_running, with_targets
from tests.test_hostile_catalogue import clkt


async def test_status_and_pages_while_probing_then_ready(store: Store, tmp_path: Path) -> None:
    settings, res = await build_june(store, tmp_path)
    sid = res.snapshot_id
    assert sid is not None
    restarted = with_targets(settings, EMBEDDED_TARGET, LATE)
    await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)

    rep = await collect_status(store)
    rows = {v.target: v for v in rep.targets.snapshots}
    assert (rows["late-chat"].status, rows["late-chat"].probed, rows["late-chat"].valid) == ("probing", 0, 0)
    assert (rows["gemma-3-270m"].status, rows["gemma-3-270m"].valid, rows["gemma-3-270m"].probed) == ("ready", 8, None)
    assert rep.targets.notes() == [
        "target late-chat is being probed on 1 earlier snapshot(s) (0 of 8 entities asked); its GPU jobs there "
        "start once each is ready"
    ]
    assert rep.model_dump(mode="json")["targets"]["snapshots"][0]["snapshot_id"] == sid  # in /status and --json
    async with TestClient(TestServer(pages_app(page_context(restarted, store=store)), host="127.0.0.1")) as client:
        overview = await (await client.get("/")).text()
        assert "target late-chat is being probed on 1 earlier snapshot(s)" in overview

    async with probe_running(restarted, store, Answers(known=("sports xsports0",))) as ctx:
        await LateTargetService(spec=restarted.spec, daemon=restarted.daemon, gpu=restarted.gpu).finish_ready(ctx)
    rep = await collect_status(store)
    assert {v.target: (v.status, v.entities, v.excluded, v.valid) for v in rep.targets.snapshots} == {
        "gemma-3-270m": ("ready", 8, 0, 8), "late-chat": ("ready", 8, 1, 7)}
    assert rep.targets.notes() == []
    async with TestClient(TestServer(pages_app(page_context(restarted, store=store)), host="127.0.0.1")) as client:
        page = await (await client.get(f"/snapshots/{sid}")).text()
        overview = await (await client.get("/")).text()
    assert 'id="snapshot-targets"' in page
    assert ('<td>late-chat</td><td><span class="status ready">ready</span></td><td class="num">8</td>'
            '<td class="num">1</td><td class="num">7</td>') in page
    assert "being probed" not in overview


def test_clkt_status_prints_each_snapshots_validity_per_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    async def go() -> str:
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'data' / 'clkt.db'}") as store:
            settings, res = await build_june(store, tmp_path)
            restarted = with_targets(settings, EMBEDDED_TARGET, LATE)
            await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)
            assert res.snapshot_id is not None
            return res.snapshot_id

    sid = asyncio.run(go())
    run = clkt(["status", "--config", str(tmp_path / "clkt.toml")], capsys)
    assert run.code == 0, run.err
    assert "Targets per snapshot" in run.out and "late-chat" in run.out and "probing (0/8" in run.out
    assert sid[:12] in run.out and "is being probed on 1 earlier snapshot(s)" in run.out


def test_the_report_header_names_the_targets_with_exclusions() -> None:
    data = build_report("s-2025-06-x", ["en", "fr"], [], [], 0).model_copy(update={"targets": [
        TargetValidity(target="gemma-3-270m", status="ready", entities=20, excluded=0),
        TargetValidity(target="late-chat", status="ready", entities=20, excluded=3),
    ]})
    md = markdown(data, [])
    assert "Targets with exclusions" in md and "late-chat: 3 of 20 entities excluded, 17 valid" in md
    assert "gemma-3-270m:" not in md
    none = data.model_copy(update={"targets": [TargetValidity(target="gemma-3-270m", status="ready", entities=20, excluded=0)]})
    assert "No target had exclusions: every job ran on all 20 entities." in markdown(none, [])
    bare = build_report("s-2025-06-x", ["en", "fr"], [], [], 0)  # a snapshot without validity rows: as before
    assert "exclusions" not in markdown(bare, []) and "targets" not in bare.model_dump(mode="json")


async def test_the_report_reads_each_targets_validity_for_the_targets_whose_jobs_ran(tmp_path: Path) -> None:
    from clkt.report.writer import load_report_data
    from storage.enums import SnapshotTargetStatus
    from storage.targets import record_snapshot_target
    from tests.report._store import SNAPSHOT_ID, seed_report_store

    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        await seed_report_store(store)
        async with store.transaction() as s:
            for name, excluded in (("small", 0), ("large", 4), ("no-jobs-here", 0)):
                await record_snapshot_target(s, snapshot_id=SNAPSHOT_ID, target=name, status=SnapshotTargetStatus.ready,
                                             entities=24, excluded=excluded)
        data = await load_report_data(store, SNAPSHOT_ID)
    assert [(t.target, t.excluded, t.valid) for t in data.targets] == [("large", 4, 20), ("small", 0, 24)]
    assert "large: 4 of 24 entities excluded, 20 valid" in markdown(data, [])
