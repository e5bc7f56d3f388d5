"""Retention of the data directory: what a plan drops and keeps under each setting, its removal (also right after a
job's commit), and that nothing a result, a snapshot or a pending job needs ever goes."""

from __future__ import annotations

import os
import time
from pathlib import Path

from clkt.config import GpuSettings, RetentionSettings
from clkt.retention import apply_plan, budget_of, plan_gc
from clkt.retention.apply import after_job_commit
from storage.engine import Store
from storage.gpu_jobs import enqueue_gpu_jobs
from tests.retention._data import SNAP, make_data_dir


def _dropped(plan: object, root: Path) -> set[str]:
    return {str(r.path.relative_to(root)) for r in plan.removals}  # type: ignore[attr-defined]


async def test_the_default_keeps_the_best_adapter_and_every_result(store: Store, tmp_path: Path) -> None:
    lay = await make_data_dir(store, tmp_path)
    plan = await plan_gc(store, data_dir=lay.data_dir, retention=RetentionSettings())
    assert _dropped(plan, lay.data_dir) == {
        "jobs/1/checkpoints/epoch-1", "jobs/1/checkpoints/epoch-3", "jobs/1/checkpoints/epoch-2/optim.pt",
        "jobs/1/job.log", "jobs/1/progress.json", f"jobs/base/{SNAP}/t-a-0123456789abcdef.jsonl",
    }
    freed = plan.freed()
    assert (freed["epoch checkpoints"].files, freed["epoch checkpoints"].bytes) == (3 + 4 + 1, 1000 + 3000 + 5000 + 5000 + 40)
    assert freed["base caches"].bytes == 800 and freed["old reports"].files == 0
    kept = {c for c, _ in plan.kept}
    assert {"best adapters", "job results", "failed jobs", "jobs in flight", "base caches", "current reports",
            "reports", "models", "snapshot exports", "edit statistics"} <= kept | {c for c, _ in plan.kept_outside}

    result = await apply_plan(store, plan)
    assert not result.skipped
    left = {str(p.relative_to(lay.data_dir)) for p in lay.data_dir.rglob("*") if p.is_file()}
    assert {"jobs/1/checkpoints/epoch-2/adapter_model.safetensors", "jobs/1/checkpoints/epoch-2/val.json",
            "jobs/1/predictions.jsonl", "jobs/1/outcome.json", "jobs/1/spec.json",
            "edit-stats/m-0123456789abcdef-layer3.safetensors"} <= left
    assert {"jobs/2/job.log", "jobs/2/checkpoints/epoch-1/adapter_model.safetensors", "jobs/3/spec.json"} <= left
    assert lay.cache_busy.is_file() and not lay.cache_done.parent.exists()  # its emptied folder went too
    assert (lay.report / "heatmap-gone.png").is_file() and (lay.export / "manifest.json").is_file()
    again = await plan_gc(store, data_dir=lay.data_dir, retention=RetentionSettings())
    assert again.removals == []  # nothing more to free


async def test_settings_keep_more(store: Store, tmp_path: Path) -> None:
    lay = await make_data_dir(store, tmp_path)
    keep = RetentionSettings(epoch_adapters="all", base_caches="keep", job_logs_days=7)
    assert (await plan_gc(store, data_dir=lay.data_dir, retention=keep)).removals == []
    logs_due = RetentionSettings(epoch_adapters="all", base_caches="keep", job_logs_days=1)  # committed 2 days ago
    assert _dropped(await plan_gc(store, data_dir=lay.data_dir, retention=logs_due), lay.data_dir) == {
        "jobs/1/job.log", "jobs/1/progress.json"}


async def test_old_reports_and_temporary_files(store: Store, tmp_path: Path) -> None:
    lay = await make_data_dir(store, tmp_path)
    gone = lay.data_dir / "reports" / "spec-2024-01-cccccccccccc"  # a snapshot this store no longer has
    (gone / "report.md").parent.mkdir(parents=True)
    (gone / "report.md").write_text("x")
    old_tmp = lay.data_dir / "reports" / f".{SNAP}.tmp-123-abcd"
    new_tmp = lay.data_dir / "reports" / f".{SNAP}.tmp-456-ef01"
    for d in (old_tmp, new_tmp):
        d.mkdir()
        (d / "report.md").write_text("half")
    hour_ago = time.time() - 7200
    os.utime(old_tmp, (hour_ago, hour_ago))
    plan = await plan_gc(store, data_dir=lay.data_dir, retention=RetentionSettings(old_reports="drop"))
    dropped = _dropped(plan, lay.data_dir)
    assert {f"reports/{SNAP}/heatmap-gone.png", "reports/spec-2024-01-cccccccccccc", f"reports/{old_tmp.name}"} <= dropped
    assert not any(d.startswith(f"reports/{SNAP}/") and d != f"reports/{SNAP}/heatmap-gone.png" for d in dropped)
    assert f"reports/{new_tmp.name}" not in dropped  # a writer may still be at work on it
    default = await plan_gc(store, data_dir=lay.data_dir, retention=RetentionSettings())
    assert not any(d.startswith("reports/spec") for d in _dropped(default, lay.data_dir))


async def test_a_base_cache_whose_pair_got_a_job_meanwhile_stays(store: Store, tmp_path: Path) -> None:
    lay = await make_data_dir(store, tmp_path)
    plan = await plan_gc(store, data_dir=lay.data_dir, retention=RetentionSettings())
    async with store.transaction() as s:  # a job of the same snapshot x target is enqueued after the plan
        await enqueue_gpu_jobs(s, snapshot_id=SNAP, targets=["t-a"], strategies=["cpt-lora"], train_langs=["fr"],
                               config=GpuSettings(), max_attempts=1)
    result = await apply_plan(store, plan)
    assert lay.cache_done.is_file() and [r.path for r, _ in result.skipped] == [lay.cache_done]
    assert not (lay.done / "job.log").exists()  # the rest of the plan was applied


async def test_after_a_commit_only_that_jobs_files_go(store: Store, tmp_path: Path) -> None:
    lay = await make_data_dir(store, tmp_path)
    result = await after_job_commit(store, job_id=1, data_dir=lay.data_dir, retention=RetentionSettings())
    assert result is not None
    assert {str(r.path.relative_to(lay.data_dir)) for r in result.removed} == {
        "jobs/1/checkpoints/epoch-1", "jobs/1/checkpoints/epoch-3", "jobs/1/checkpoints/epoch-2/optim.pt",
        "jobs/1/job.log", "jobs/1/progress.json", f"jobs/base/{SNAP}/t-a-0123456789abcdef.jsonl",
    }
    off = RetentionSettings(after_commit=False)
    assert await after_job_commit(store, job_id=1, data_dir=lay.data_dir, retention=off) is None
    # a job that is not committed (failed, pending) loses nothing
    for jid in (2, 3):
        r = await after_job_commit(store, job_id=jid, data_dir=lay.data_dir, retention=RetentionSettings())
        assert r is not None and r.removed == []
    assert lay.cache_busy.is_file()


async def test_the_data_directory_stays_within_its_budget(store: Store, tmp_path: Path) -> None:
    lay = await make_data_dir(store, tmp_path)
    budget, plan = await budget_of(store, data_dir=lay.data_dir, retention=RetentionSettings())
    t = budget.terms
    assert (t.done_jobs, t.answers, t.reports, t.reported_jobs) == (1, 1, 1, 2)
    assert t.models == 10_000 and t.best_adapters == 2000 + 20 and t.exports_inside == 0
    assert budget.within and budget.after_gc_bytes < budget.data_dir_bytes
    assert budget.data_dir_bytes - budget.after_gc_bytes == sum(r.bytes for r in plan.removals)


async def test_the_daemons_commit_hook_is_this_retention(store: Store, tmp_path: Path) -> None:
    """`clkt.services` hands the GPU consumer a commit hook: the retention of the committed job's folder."""
    from clkt.config import Settings
    from clkt.services import commit_hook

    lay = await make_data_dir(store, tmp_path)
    await commit_hook(Settings(data_dir=lay.data_dir, retention=RetentionSettings(after_commit=False)))(store, job_id=1)
    assert (lay.done / "checkpoints" / "epoch-1").is_dir()  # [retention] after_commit = false: the hook keeps all
    await commit_hook(Settings(data_dir=lay.data_dir))(store, job_id=1)
    assert not (lay.done / "checkpoints" / "epoch-1").exists() and not (lay.done / "job.log").exists()
    assert (lay.done / "checkpoints" / "epoch-2" / "val.json").is_file() and lay.cache_busy.is_file()
    assert (lay.failed / "checkpoints" / "epoch-1").is_dir()  # nothing of another job went
