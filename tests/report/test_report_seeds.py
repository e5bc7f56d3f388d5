"""A snapshot's report when its jobs ran with two training seeds: every figure of the group pools both seeds by the
rule of every view (the leaderboard row's figure): Learn and the learned flags on both seeds' paired answers, Table 2
the mean over the seeds (interval over entities and seeds), the pairs and the asymmetry tests summed over the seeds;
*Training seeds* shows their spread. Also a group whose seeds disagree on whether a train language learned."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from clkt.openqa.results import OPEN_SCORER
from clkt.report.basics import Contingency
from clkt.report.data import ReportData, pair_reading
from clkt.report.learn import stat_from_counts
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.writer import load_report_data, report_dir, write_report
from clkt.snapshots.ids import stable_entity_id
from storage.engine import Store
from storage.gpu_jobs import ResultRecord, enqueue_gpu_jobs, write_job_results
from tests.report._store import LANGS, QUESTIONS, SCORERS, SNAPSHOT_ID, old_summary, seed_report_store


async def _second_seed(store: Store, target: str = "large") -> None:
    """Seed 1 of `target`'s two jobs, learning its train language well and answering worse in the others."""
    from storage.models import GpuJob, LeaseStatus

    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=[target], strategies=["cpt-lora"], train_langs=["en", "fr"],
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


def _key(c: Any) -> tuple[str, str, str, str]:
    return (c.model, c.strategy, c.scorer, c.domain)


def _pairs(data: ReportData) -> dict[tuple[str, ...], Contingency]:
    return {(p.model, p.strategy, p.scorer, p.domain, p.train_lang, p.test_lang): p.table for p in data.pairs}


def _check_pooled(one: ReportData, two: ReportData, target: str) -> None:
    """`target`'s figures pool both seeds (the leaderboard row's), every other group's are as with one seed."""
    before = {_key(c): c for c in one.table2}
    rows = {(r.target, r.strategy, r.scorer): r for r in two.seeds}
    for c in two.table2:
        if c.model != target:
            assert c == before[_key(c)]
            continue
        assert c != before[_key(c)]
        if c.domain == "all":  # Table 2's figure is the row's: the mean over seeds, the interval over entities and seeds
            row = rows[(c.model, c.strategy, c.scorer)]
            for m in PAIR_METRICS:
                assert (c.metric(m.key).mean, c.metric(m.key).ci) == (row.metric(m.key).value, row.metric(m.key).ci)
                per = [v for v in (row.per_seed or {})[m.key].values() if v is not None]
                assert c.metric(m.key).mean == pytest.approx(sum(per) / len(per))
    once = _pairs(one)
    for key, table in _pairs(two).items():  # each pair's A/B/C/D summed over the seeds (the same questions in each)
        assert table.n == (2 * once[key].n if key[0] == target else once[key].n)
    asym = {(a.model, a.scorer, a.lang_1, a.lang_2): a for a in one.asymmetry}
    for a in two.asymmetry:
        old = asym[(a.model, a.scorer, a.lang_1, a.lang_2)]
        assert a == old if a.model != target else a.forward >= old.forward and a.backward >= old.backward


async def _reports(tmp_path: Path, target: str) -> tuple[ReportData, ReportData]:
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'one.db'}") as store:
        await seed_report_store(store)
        one = await load_report_data(store, SNAPSHOT_ID)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'two.db'}") as store:
        await seed_report_store(store)
        await _second_seed(store, target)
        two = await load_report_data(store, SNAPSHOT_ID)
        await write_report(store, SNAPSHOT_ID, report_dir(tmp_path, SNAPSHOT_ID))
    return one, two


async def test_two_seeds_pool_every_figure_of_their_group(tmp_path: Path) -> None:
    one, two = await _reports(tmp_path, "large")
    assert two.jobs == one.jobs  # what is one job's: the lowest seed's
    # Learn pools both seeds' paired answers (the one rule): twice the questions for `large`, the others unchanged
    learn_one = {(t.model, t.train_lang, t.scorer, t.domain): t for t in one.learn}
    for t in two.learn:
        before = learn_one[(t.model, t.train_lang, t.scorer, t.domain)]
        assert t.stat.n == (2 * before.stat.n if t.model == "large" else before.stat.n)
        assert t.domain != "all" or t.learned == before.learned  # a domain alone may now have enough to learn
    _check_pooled(one, two, "large")
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
    assert any("training seeds 0, 1" in n and "lowest seed's job's" in n for n in two.notes)
    assert not any("Table 2 and the pairs are each target and strategy's lowest seed's" in n for n in two.notes)
    md = (report_dir(tmp_path, SNAPSHOT_ID) / "report.md").read_text(encoding="utf-8")
    assert "## Training seeds" in md and "| large | cpt-lora | generate | 0 1 | en, fr | 0: " in md
    assert "mean [CI entities+seeds]" not in md  # the pooled figure is Table 2's, not repeated
    saved = json.loads((report_dir(tmp_path, SNAPSHOT_ID) / "metrics.json").read_text(encoding="utf-8"))
    assert [r["seeds"] for r in saved["seeds"]] == [[0, 1], [0, 1]]
    cells = {_key(c): c for c in two.table2}
    for c in saved["table2"]:  # metrics.json holds the pooled cells
        assert c["overall_mean"] == cells[(c["model"], c["strategy"], c["scorer"], c["domain"])].metric("overall").mean


async def test_seeds_that_disagree_on_learned_follow_the_pooled_rule(tmp_path: Path) -> None:
    """`small` trained in en did not learn with seed 0 (gained 11, lost 3: p = 0.057) and learns with seed 1: on both
    seeds' paired answers it learned, so every seed's Transfer keeps its en pairs, and the report reads them."""
    one, two = await _reports(tmp_path, "small")
    key = ("small", "cpt-lora", "generate", "en", "all")
    (alone,) = [t for t in one.learn if (t.model, t.strategy, t.scorer, t.train_lang, t.domain) == key]
    (both,) = [t for t in two.learn if (t.model, t.strategy, t.scorer, t.train_lang, t.domain) == key]
    assert not alone.learned and both.learned
    st, s0 = both.stat, alone.stat
    seed1 = stat_from_counts(n=st.n - s0.n, base_correct=st.base_correct - s0.base_correct,
                             injected_correct=st.injected_correct - s0.injected_correct,
                             gained=st.gained - s0.gained, lost=st.lost - s0.lost)
    assert seed1.learned  # the seeds disagree; the pooled test decides
    _check_pooled(one, two, "small")
    (cell,) = [c for c in two.table2 if _key(c) == ("small", "cpt-lora", "generate", "all")]
    (was,) = [c for c in one.table2 if _key(c) == ("small", "cpt-lora", "generate", "all")]
    assert was.not_interpretable == 2 and cell.not_interpretable == 0  # en's two pairs count now, in both seeds
    (row,) = [r for r in two.seeds if (r.target, r.scorer) == ("small", "generate")]
    assert row.learned_langs == ["en", "fr"]
    assert all(v is not None for v in (row.per_seed or {})["transfer"].values())
    for p in two.pairs:
        if (p.model, p.scorer, p.train_lang, p.domain) == ("small", "generate", "en", "all"):
            assert pair_reading(two, p) != "not interpretable"


async def _open_answers(store: Store) -> None:
    """Open answers (the normaliser's) for every finished job of `large`, both seeds: right more often after injection
    in the train language, each seed its own draws."""
    from storage.models import GpuJob, LeaseStatus
    from storage.open_results import OpenResultRecord, write_open_results

    public = {stable_entity_id("fixture", str(e + 1)): e + 1 for e in range(QUESTIONS)}
    async with store.transaction() as s:
        jobs = (await s.execute(select(GpuJob).where(col(GpuJob.target_model) == "large",
                                                     col(GpuJob.status) == LeaseStatus.done))).scalars().all()
        for job in jobs:
            assert job.id is not None
            rng = random.Random(f"open/{job.seed}/{job.train_lang}")
            recs = [OpenResultRecord(open_qid=5000 + e, entity_id=ent, domain="movies", fact="film.director", lang=lang,
                                     variant=v, scorer=OPEN_SCORER, split="test", other_language=False, answer="x",
                                     verdict="CORRECT" if rng.random() < (0.1 if v == "base" else 0.8 if lang == job.train_lang
                                                                          else 0.3 + 0.2 * job.seed) else "INCORRECT")
                    for e, ent in enumerate(public) for v in ("base", "injected") for lang in LANGS]
            await write_open_results(s, job.id, recs, entity_rows=public)


async def test_the_open_track_pools_its_seeds_apart_from_the_mcq_seed_rows(tmp_path: Path) -> None:
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'two.db'}") as store:
        await seed_report_store(store)
        await _second_seed(store, "large")
        await _open_answers(store)
        two = await load_report_data(store, SNAPSHOT_ID)
    # the MCQ seed rows are the MCQ scorers' only; the open group's are the open section's
    assert {(r.target, r.scorer) for r in two.seeds} == {("large", sc) for sc in SCORERS}
    track = two.open_track
    assert track is not None and [(r.target, r.scorer, r.seeds) for r in track.seeds] == [("large", OPEN_SCORER, [0, 1])]
    row = track.seeds[0]
    (cell,) = [c for c in track.table2 if c.model == "large" and c.domain == "all"]
    for m in PAIR_METRICS:  # the open cell is the seed row's figure: the mean over seeds, interval over entities + seeds
        assert (cell.metric(m.key).mean, cell.metric(m.key).ci) == (row.metric(m.key).value, row.metric(m.key).ci)
    per = [v for v in (row.per_seed or {})["overall"].values() if v is not None]
    assert len(per) == 2 and per[0] != per[1] and cell.metric("overall").mean == pytest.approx(sum(per) / 2)
    learn = {(t.train_lang, t.domain): t for t in track.learn}
    assert learn[("en", "all")].stat.n == 2 * QUESTIONS  # Learn pools both seeds' paired answers
