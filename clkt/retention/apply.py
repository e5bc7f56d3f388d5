"""Removing what a plan (`clkt.retention.plan`) lists: after each job's commit (the GPU consumer's one call) and by
`clkt gc`. A file that is already gone is no error; a base cache whose (snapshot, target) has a pending or leased
job again by now is left alone (checked right before the removals)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from clkt.config import RetentionSettings
from clkt.layout import BASE_DIR
from clkt.retention.plan import GcPlan, Kept, Removal, plan_gc
from storage.engine import Store
from storage.retention import jobs_in_flight

__all__ = ["GcResult", "after_job_commit", "apply_plan"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class GcResult:
    removed: list[Removal] = field(default_factory=list)
    skipped: list[tuple[Removal, str]] = field(default_factory=list)  # (what, why it stayed)

    def freed(self) -> dict[str, Kept]:
        out: dict[str, Kept] = {c: Kept() for c in GcPlan.CATEGORIES}
        for r in self.removed:
            k = out.setdefault(r.category, Kept())
            k.files += r.files
            k.bytes += r.bytes
        return out


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=False)
    else:
        path.unlink(missing_ok=True)
    parent = path.parent
    if parent.name != BASE_DIR and parent.parent.name == BASE_DIR:  # jobs/base/<snapshot>/ once empty
        with contextlib.suppress(OSError):  # not empty yet
            parent.rmdir()


async def apply_plan(store: Store, plan: GcPlan) -> GcResult:
    """Remove every path of `plan` (see the module docstring)."""
    result = GcResult()
    if any(r.pair is not None for r in plan.removals):
        async with store.session() as s:
            busy = await jobs_in_flight(s)
    else:
        busy = set()

    def run() -> None:
        for r in plan.removals:
            if r.pair is not None and r.pair in busy:
                result.skipped.append((r, "a job of its snapshot and target is pending or leased now"))
                continue
            try:
                _remove(r.path)
            except FileNotFoundError:
                pass
            except OSError as e:
                result.skipped.append((r, f"{type(e).__name__}: {e}"))
                continue
            result.removed.append(r)

    await asyncio.to_thread(run)
    return result


async def after_job_commit(store: Store, *, job_id: int, data_dir: Path, retention: RetentionSettings) -> GcResult | None:
    """The retention of one job right after its commit: its other epochs, optimizer state, log (per
    `retention.job_logs_days`) and its snapshot x target's base cache once no job of the pair is left. Never raises
    (a file that cannot go is logged: `clkt gc` tries again); None when `retention.after_commit` is off."""
    if not retention.after_commit:
        return None
    try:
        plan = await plan_gc(store, data_dir=data_dir, retention=retention, job_id=job_id)
        result = await apply_plan(store, plan)
    except Exception:  # the job is committed: its retention must never undo or fail it
        log.exception("retention after job %d failed; `clkt gc` frees its files later", job_id)
        return None
    freed = sum(r.bytes for r in result.removed)
    if result.removed:
        log.info("job %d: retention freed %d files, %.1f MB", job_id, sum(r.files for r in result.removed), freed / 1e6)
    return result
