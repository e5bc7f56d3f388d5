"""The report's strategy table (the paper's second scenario: one target, every strategy, per domain) carries what
each job cost, wall time and peak memory, from the job summary; a report with one strategy has no such table."""

from __future__ import annotations

from pathlib import Path

from clkt.evaluate.summary import JobSummary
from clkt.report.data import COST_HEADER, JobInfo, ReportData, cost_cells
from clkt.report.metrics import Outcome
from clkt.report.writer import build_report, load_report_data, write_report_files
from storage.engine import Store
from tests.report._store import MODELS, SNAPSHOT_ID, old_summary, seed_report_store

GIB = 2**30


def _outcomes(strategy: str, right_every: int) -> list[Outcome]:
    out: list[Outcome] = []
    for train in ("en", "ja"):
        for lang in ("en", "ja"):
            for q in range(1, 13):
                for variant, ok in (("base", q == 3), ("injected", q % right_every != 0 if lang == train else q % 3 == 0)):
                    out.append(Outcome(model="small", strategy=strategy, scorer="generate", variant=variant, train_lang=train,
                                       lang=lang, qid=q, domain="movies" if q <= 6 else "music", correct=ok, predicted="A"))
    return out


def _jobs() -> list[JobInfo]:
    return [
        JobInfo(job_id=1, model="small", strategy="cpt-lora", train_lang="en", status="done", wall_s=125.4, inject_s=80.2,
                peak_memory_bytes=3 * GIB // 2, peak_memory_kind="cuda"),
        JobInfo(job_id=2, model="small", strategy="cpt-lora", train_lang="ja", status="done"),
        JobInfo(job_id=3, model="small", strategy="memit", train_lang="en", status="done", wall_s=40.0, inject_s=2.6,
                peak_memory_bytes=GIB, peak_memory_kind="rss"),
        JobInfo(job_id=4, model="small", strategy="memit", train_lang="ja", status="done", wall_s=38.0, inject_s=3.0,
                peak_memory_bytes=GIB // 2, peak_memory_kind="rss"),
    ]


def test_the_strategy_table_has_each_jobs_time_and_peak_memory(tmp_path: Path) -> None:
    data = build_report("snap-s", ["en", "ja"], _jobs(), _outcomes("cpt-lora", 2) + _outcomes("memit", 4))
    md = write_report_files(data, tmp_path / "r").markdown.read_text(encoding="utf-8")
    head = md.index("## Strategy comparison — small, generate")
    table = md[head:md.index("\n## ", head + 1)]
    assert "the paper's second scenario" in table and all(h in table for h in COST_HEADER)
    assert "all pooled Overall" in table and "movies Transfer" in table  # per domain, Overall and Transfer
    rows = {ln.split(" | ")[0].lstrip("| "): ln for ln in table.splitlines() if ln.startswith(("| cpt-lora", "| memit"))}
    assert rows["cpt-lora"].endswith("| en 125 s (80 s); ja not recorded | en 1.50 GiB cuda; ja not recorded |")
    assert rows["memit"].endswith("| en 40 s (2.6 s); ja 38 s (3.0 s) | en 1.00 GiB rss; ja 0.50 GiB rss |")
    # metrics.json keeps the figures (the status pages read it back)
    back = ReportData.model_validate_json((tmp_path / "r" / "metrics.json").read_bytes())
    assert [j.wall_s for j in back.jobs] == [125.4, None, 40.0, 38.0] and back.jobs[0].peak_memory_kind == "cuda"


def test_one_strategy_has_no_strategy_table_and_no_cost_keys(tmp_path: Path) -> None:
    jobs = [j for j in _jobs() if j.strategy == "memit"]
    data = build_report("snap-s", ["en", "ja"], jobs, _outcomes("memit", 4))
    paths = write_report_files(data, tmp_path / "r")
    md = paths.markdown.read_text(encoding="utf-8")
    assert "Strategy comparison" not in md and COST_HEADER[0] not in md
    assert cost_cells(jobs, "small", "cpt-lora") == ["no job", "no job"]
    bare = build_report("snap-s", ["en", "ja"], [j.model_copy(update={"wall_s": None, "inject_s": None, "peak_memory_bytes": None,
                                                                     "peak_memory_kind": None}) for j in jobs], _outcomes("memit", 4))
    assert "wall_s" not in bare.model_dump_json() and "peak_memory" not in bare.model_dump_json()  # as before: no key


async def test_the_job_summary_cost_reaches_the_report(tmp_path: Path) -> None:
    def typed(model: str, train: str) -> dict[str, object]:
        s = JobSummary.model_validate(old_summary(model, train, control=False))
        return s.model_copy(update={"wall_s": 61.0, "inject_s": 12.0, "peak_memory_bytes": GIB, "peak_memory_kind": "rss"}).model_dump(mode="json")

    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        await seed_report_store(store, summaries={(m, t): typed(m, t) for m in MODELS for t in ("en", "fr")})
        data = await load_report_data(store, SNAPSHOT_ID)
    done = [j for j in data.jobs if j.status == "done"]
    assert done and all((j.wall_s, j.inject_s, j.peak_memory_bytes, j.peak_memory_kind) == (61.0, 12.0, GIB, "rss") for j in done)
