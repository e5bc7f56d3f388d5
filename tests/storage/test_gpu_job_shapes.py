"""A job's config and summary in one stored shape: a store holding the earlier shapes (a flat summary, config keys
no setting reads) is migrated into it, and read back typed."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import text

from clkt.config import GpuSettings
from clkt.evaluate.summary import JobSummary
from storage.engine import HEAD_REVISION, Store
from storage.gpu_jobs import get_job
from storage.models import Snapshot
from tests.report._store import old_summary
from tests.storage._revisions import store_at_revision

BEFORE = "bc47c6ff3049"  # the revision before the one shape


async def _old_store(db: Path, rows: list[tuple[dict[str, object], dict[str, object]]]) -> None:
    """A store at the previous revision holding a job per (config, summary) in those shapes."""
    url = f"sqlite+aiosqlite:///{db}"
    await store_at_revision(url, BEFORE)
    async with Store(url=url, migrate=False) as store, store.transaction() as s:
        s.add(Snapshot(id="s1", spec="demo", period="2025-06"))
        await s.flush()
        for i, (config, summary) in enumerate(rows, start=1):
            await s.execute(text(
                "INSERT INTO gpu_job (id, snapshot_id, target_model, strategy, train_lang, config, status, attempts, "
                "max_attempts, not_before, summary, created_at, updated_at) VALUES (:id, 's1', :t, 'cpt-lora', 'en', "
                ":config, 'done', 1, 1, '2025-06-01 00:00:00', :summary, '2025-06-01 00:00:00', '2025-06-01 00:00:00')"),
                {"id": i, "t": f"m{i}", "config": json.dumps(config), "summary": json.dumps(summary)})


ADDED_SINCE = ("deterministic", "open_answers", "cpu_jobs")  # `GpuSettings` fields added after revision d3a8e6f0c251


async def test_a_store_holding_the_old_shapes_is_migrated_into_the_one_shape(tmp_path: Path) -> None:
    flat = old_summary("large", "en", control=True)
    typed = JobSummary.model_validate(flat)  # what the previous version read from the flat row
    # the settings as a store of that revision held them: the fields added since (read back with their defaults)
    # are not in its rows, and its migration keeps the fields it knew (`GPU_FIELDS`)
    full = {k: v for k, v in GpuSettings(epochs=3).model_dump(mode="json").items() if k not in ADDED_SINCE}
    await _old_store(tmp_path / "clkt.db", [
        ({**full, "target": {"name": "x", "model": "y"}, "retired_setting": 1}, flat),  # an old row: both old shapes
        (full, typed.model_dump(mode="json")),  # already in the one shape: left as it is
        ({}, {}),  # a job with no config of its own, not finished
    ])
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, store.session() as s:
        rev = (await s.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        raw = {r[0]: (json.loads(r[1]), json.loads(r[2]))
               for r in (await s.execute(text("SELECT id, config, summary FROM gpu_job"))).all()}
        jobs = [await get_job(s, i) for i in (1, 2, 3)]
    assert rev == HEAD_REVISION
    assert raw[1][0] == full  # the stray keys gone
    # the flat summary rewritten into the typed one's fields, nothing recomputed
    assert "scores" in raw[1][1] and not any(":" in k for k in raw[1][1]) and raw[1][1]["scorers"] == ["generate", "option-loglik"]
    assert JobSummary.model_validate(raw[1][1]) == typed
    assert raw[2] == (full, typed.model_dump(mode="json")) and raw[3] == ({}, {})
    one, two, three = jobs
    assert one is not None and two is not None and three is not None
    assert one.config == GpuSettings(epochs=3) and one.config_error is None
    assert JobSummary.from_stored(one.summary) == typed == JobSummary.from_stored(two.summary)
    assert (three.config, three.config_error, three.summary) == (None, None, {})


async def test_a_stored_config_that_no_longer_validates_is_said_not_raised(tmp_path: Path) -> None:
    await _old_store(tmp_path / "clkt.db", [({"epochs": 0}, {})])  # out of range (epochs >= 1)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, store.session() as s:
        job = await get_job(s, 1)
    assert job is not None and job.config is None
    assert job.config_error is not None and job.config_error.startswith("epochs: ")
