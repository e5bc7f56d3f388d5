"""The cutoff a target really has, from its probe verdicts: the known-rate by month, the floor, the effective cutoff
and the contamination alarm, which fires when the verdicts say a target knew a month inside its window and stays
quiet otherwise; shown by `clkt status`, the status data and every report of the target."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from rich.console import Console
from sqlmodel import select

from clkt.config import SpecSettings, TargetSettings
from clkt.report.cutoff_curve import MIN_FLOOR_N, TargetWindow, knowledge_curves, knowledge_windows
from clkt.report.writer import write_report
from clkt.status import collect_status, knowledge_table
from storage.engine import Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results
from storage.knowledge import KnownMonth, known_by_month
from tests.report._knowledge_store import MONTHS, probed_store

CUTOFF = date(2024, 8, 31)  # + 183 days: the window opens 2025-03-02, so 2025-04 is its first whole month
WINDOW = TargetWindow(declared_cutoff=CUTOFF, window_start=date(2025, 3, 2))


def _months(known: dict[str, int], n: int = 20) -> list[KnownMonth]:
    """n entities asked per month; before 2024-09 the target knew 15 of them, after 1, unless `known` says."""
    return [KnownMonth(target="gemma", month=m, asked=n, known=min(n, known.get(m, 15 if m < "2024-09" else 1))) for m in MONTHS]


def test_a_target_that_knew_a_month_inside_its_window_raises_the_alarm() -> None:
    (k,) = knowledge_curves(_months({"2025-05": 12}), {"gemma": WINDOW})
    assert k.floor_months == ["2025-07", "2025-08", "2025-09"] and k.floor == 3 / 60
    assert k.alarm and k.alarm_months == ["2025-05"]
    assert k.effective_cutoff == "2025-05"  # the latest month above the floor
    by = {m.month: m for m in k.months}
    assert by["2025-05"].in_window and by["2025-05"].above_floor and by["2025-05"].p_value is not None
    assert not by["2025-03"].in_window and by["2025-04"].in_window
    assert "CONTAMINATION ALARM" in k.summary and "2025-05" in k.summary


def test_a_target_at_its_floor_inside_its_window_stays_quiet() -> None:
    (k,) = knowledge_curves(_months({}), {"gemma": WINDOW})
    assert not k.alarm and k.alarm_months == []
    assert k.effective_cutoff == "2024-08"  # knew 15/20 until August 2024, 1/20 after: its declared cutoff holds
    assert all(not m.above_floor for m in k.months if m.month >= "2024-09")
    assert "ALARM" not in k.summary and "knowledge through 2024-08" in k.summary
    # one known entity more in a window month is noise, not an alarm (Fisher against the floor, Bonferroni)
    (k2,) = knowledge_curves(_months({"2025-05": 3}), {"gemma": WINDOW})
    assert not k2.alarm


def test_without_enough_verdicts_there_is_no_floor_and_no_alarm() -> None:
    (k,) = knowledge_curves(_months({"2025-05": 12}, n=3), {"gemma": WINDOW})
    assert k.floor is None and not k.alarm and k.effective_cutoff is None
    assert f"{MIN_FLOOR_N} needed" in k.note
    (u,) = knowledge_curves(_months({"2025-05": 12}), {})  # no declared cutoff: no window, no alarm
    assert not u.alarm and u.effective_cutoff == "2025-05" and "window is unknown" in u.note


SPEC = SpecSettings(name="k", languages=["en", "fr"], targets=[
    TargetSettings(name="gemma", model="embedded:gemma-3-270m", cutoff=CUTOFF),
    TargetSettings(name="late", model="org/late", cutoff=date(2025, 1, 31)),
])


async def test_the_verdicts_by_month_from_the_store(store: Store) -> None:
    await probed_store(store, knew_window_month=True)
    async with store.session() as s:
        rows = await known_by_month(s)
    gemma = {r.month: r for r in rows if r.target == "gemma"}
    assert len(gemma) == 21 and all(r.asked == 20 for r in gemma.values())  # an entity counts once, whatever its languages
    assert gemma["2025-05"].known == 12 and gemma["2024-03"].known == 15 and gemma["2025-06"].known == 1
    late = {r.month: r for r in rows if r.target == "late"}
    assert late["2024-03"].asked == 1 and late["2025-06"].asked == 4 and late["2024-03"].known == 0  # only those it was asked about
    curves = {k.target: k for k in knowledge_curves(rows, knowledge_windows(SPEC))}
    assert curves["gemma"].alarm and curves["gemma"].alarm_months == ["2025-05"]
    assert curves["gemma"].window_start == date(2025, 3, 2)
    assert curves["late"].floor is None  # 2-5 entities a month: too few verdicts for a floor


async def test_status_and_reports_show_the_alarm(store: Store, tmp_path: Path) -> None:
    await probed_store(store, knew_window_month=True)
    rep = await collect_status(store, spec=SPEC)
    assert rep.knowledge is not None and [t.target for t in rep.knowledge.alarms] == ["gemma"]
    assert json.loads(rep.model_dump_json())["knowledge"]["targets"][0]["alarm_months"] == ["2025-05"]
    console = Console(width=240, record=True)
    console.print(knowledge_table(rep.knowledge))
    text = console.export_text()
    assert "ALARM: 2025-05" in text and "2024-08-31" in text
    # a report of a snapshot the target was measured on says so too
    from storage.models import GpuJob, LeaseStatus, Question, Snapshot, SnapshotStatus

    async with store.transaction() as s:
        s.add(Snapshot(id="k-2025-09-x", spec="k", period="2025-09", status=SnapshotStatus.frozen, manifest={"languages": ["en", "fr"]}))
        s.add(Question(id=1, entity_id=400, slot="s", lang="en", question="q?", options=["a", "b", "c", "d"], answer_index=0,
                       evidence="x", generator="g", prompt_version="v"))
        await s.flush()
        await enqueue_gpu_jobs(s, snapshot_id="k-2025-09-x", targets=["gemma"], strategies=["cpt-lora"], train_langs=["en"],
                               max_attempts=1)
        job = (await s.execute(select(GpuJob))).scalars().one()
        assert job.id is not None
        await write_job_results(s, job.id, [ResultRecord(question_id=1, lang=lang, variant=v, scorer="generate", split="test",
                                                         predicted="A", correct=True) for lang in ("en", "fr") for v in ("base", "injected")])
        job.status = LeaseStatus.done
    paths = await write_report(store, "k-2025-09-x", tmp_path / "r", spec=SPEC)
    md = paths.markdown.read_text(encoding="utf-8")
    assert "## Knowledge cutoff (probe verdicts by month of occurrence)" in md and "CONTAMINATION ALARM" in md
    assert "| gemma | 2025-05 | 20 | 12 |" in md
    metrics = json.loads(paths.json.read_text(encoding="utf-8"))
    assert metrics["knowledge"][0]["target"] == "gemma" and metrics["knowledge"][0]["alarm"] is True
    assert any(n.startswith("contamination alarm: gemma") for n in metrics["notes"])


async def test_a_quiet_store_reports_no_alarm(store: Store) -> None:
    await probed_store(store, knew_window_month=False)
    rep = await collect_status(store, spec=SPEC)
    assert rep.knowledge is not None and rep.knowledge.alarms == []
    gemma = next(t for t in rep.knowledge.targets if t.target == "gemma")
    assert gemma.effective_cutoff == "2024-08" and gemma.floor is not None
    bare = await collect_status(store)  # without the spec (the progress log, /metrics): not computed
    assert bare.knowledge is None
