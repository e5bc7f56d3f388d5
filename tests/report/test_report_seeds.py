"""A snapshot's report when its jobs ran with two training seeds: Table 2 stays the lowest seed's, Learn and the
learned flags pool both seeds' paired answers (the rule of every view), and *Training seeds* pools both with their
spread."""

from __future__ import annotations

import json
import random
from pathlib import Path

from sqlmodel import col, select

from clkt.report.writer import load_report_data, report_dir, write_report
from storage.engine import Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results
from tests.report._store import LANGS, QUESTIONS, SCORERS, SNAPSHOT_ID, old_summary, seed_report_store


async def _second_seed(store: Store) -> None:
    """Seed 1 of model `large`'s two jobs, answering worse in the other languages than seed 0."""
    from storage.models import GpuJob, LeaseStatus

    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["large"], strategies=["cpt-lora"], train_langs=["en", "fr"],
                               max_attempts=1, seeds=[1])
    async with store.transaction() as s:
        for job in (await s.execute(select(GpuJob).where(col(GpuJob.seed) == 1))).scalars().all():
            assert job.id is not None
            rng = random.Random(f"seed1/{job.train_lang}")
            recs = [ResultRecord(question_id=100 + q, lang=lang, variant=v, scorer=sc, split="test", predicted="A",
                                 correct=rng.random() < (0.25 if v == "base" else 0.9 if lang == job.train_lang else 0.3))
                    for sc in SCORERS for v in ("base", "injected") for lang in LANGS for q in range(QUESTIONS)]
            await write_job_results(s, job.id, recs)
            job.status, job.best_epoch, job.device, job.attempts = LeaseStatus.done, 2, "cpu", 1
            job.summary = old_summary("large", job.train_lang, control=False)


async def test_two_seeds_keep_the_tables_of_the_lowest_and_pool_both_apart(tmp_path: Path) -> None:
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'one.db'}") as store:
        await seed_report_store(store)
        one = await load_report_data(store, SNAPSHOT_ID)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'two.db'}") as store:
        await seed_report_store(store)
        await _second_seed(store)
        two = await load_report_data(store, SNAPSHOT_ID)
        paths = await write_report(store, SNAPSHOT_ID, report_dir(tmp_path, SNAPSHOT_ID))
    assert two.jobs == one.jobs  # the lowest seed's
    # Learn pools both seeds' paired answers (the one rule): twice the questions for `large`, the others unchanged;
    # Table 2 is the lowest seed's, with the pairs the learned flags keep (the same flags here)
    learn_one = {(t.model, t.train_lang, t.scorer, t.domain): t for t in one.learn}
    for t in two.learn:
        before = learn_one[(t.model, t.train_lang, t.scorer, t.domain)]
        assert t.stat.n == (2 * before.stat.n if t.model == "large" else before.stat.n)
        assert t.domain != "all" or t.learned == before.learned  # a domain alone may now have enough to learn
    assert two.table2 == one.table2
    for r in two.seeds:  # the report's learned flags are its seed rows' (and the leaderboard's)
        assert set(r.learned_langs) == {t.train_lang for t in two.learn
                                        if (t.model, t.scorer, t.domain) == (r.target, r.scorer, "all") and t.learned}
    assert not one.seeds and "seeds" not in one.model_dump(mode="json")
    assert {(r.target, r.scorer) for r in two.seeds} == {("large", sc) for sc in SCORERS}
    for r in two.seeds:
        assert r.seeds == [0, 1]
        overall = r.metric("overall")
        per = (r.per_seed or {})["overall"]
        assert overall.seed_std is not None and overall.seed_std > 0 and overall.value == (per[0] + per[1]) / 2  # type: ignore[operator]
        assert overall.ci is not None and overall.sampling_ci is not None
    assert any("training seeds 0, 1" in n for n in two.notes)
    md = (report_dir(tmp_path, SNAPSHOT_ID) / "report.md").read_text(encoding="utf-8")
    assert "## Training seeds" in md and "| large | cpt-lora | generate | 0 1 |" in md
    saved = json.loads((report_dir(tmp_path, SNAPSHOT_ID) / "metrics.json").read_text(encoding="utf-8"))
    assert [r["seeds"] for r in saved["seeds"]] == [[0, 1], [0, 1]] and paths is not None
