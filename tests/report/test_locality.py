"""Kept % in the report (`clkt.report.locality`): per job x scorer x test language, with n and a bootstrap CI
over entities, "too few" under the minimum; a report without a locality split is unchanged."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from clkt.evaluate.summary import EntityKept, LocalityCounts
from clkt.report.basics import BOOTSTRAP_SAMPLES
from clkt.report.data import JobInfo
from clkt.report.locality import MIN_KEPT_N, kept_interval, kept_langs, kept_text
from clkt.report.metrics import Outcome
from clkt.report.writer import build_report, write_report_files


def _counts(per_entity: list[tuple[int, int]], *, gained: int = 0) -> LocalityCounts:
    """(right before, kept) per entity, entity ids 1, 2, ..."""
    ents = [EntityKept(entity=i + 1, base_right=b, kept=k) for i, (b, k) in enumerate(per_entity)]
    kept = sum(k for _, k in per_entity)
    right = sum(b for b, _ in per_entity)
    return LocalityCounts(n=right + gained + 1, kept=kept, lost=right - kept, gained=gained, entities=ents)


def _job(job_id: int, locality: dict[str, dict[str, LocalityCounts]] | None, status: str = "done") -> JobInfo:
    return JobInfo(job_id=job_id, model="m", strategy="cpt-lora", train_lang="en", status=status, locality=locality)


def _outcomes() -> list[Outcome]:
    return [
        Outcome(model="m", strategy="cpt-lora", scorer="s", variant=v, train_lang="en", lang=lang, qid=q, domain="movies",
                correct=(q % 2 == 0) == (v == "injected"), predicted="A", entity=q)
        for v in ("base", "injected") for lang in ("en", "fr") for q in range(1, 9)
    ]


def test_kept_percent_per_language_with_too_few_under_the_minimum() -> None:
    big = _counts([(4, 4), (4, 3), (4, 4), (4, 2)], gained=2)  # 16 right before, 13 kept
    small = _counts([(2, 2), (1, 0)])  # 3 right before
    kept = kept_langs([_job(1, {"s": {"en": big, "fr": small}}), _job(2, {"s": {"en": big}}, status="failed")],
                      snapshot_id="snap", seed=0, samples=BOOTSTRAP_SAMPLES)
    assert [(k.job_id, k.lang) for k in kept] == [(1, "en"), (1, "fr")]  # a failed job is left out
    en, fr = kept
    assert (en.base_right, en.kept, en.lost, en.gained, en.entities) == (16, 13, 3, 2, 4)
    assert en.rate == 13 / 16 and not en.too_few and en.ci is not None
    assert en.ci[0] <= 13 / 16 <= en.ci[1] and 0 <= en.ci[0] < en.ci[1] <= 1
    assert kept_text(en).startswith("81.2 [")
    assert fr.too_few and MIN_KEPT_N > 3 and kept_text(fr) == "too few (n = 3)"


def test_the_interval_draws_entities_not_questions() -> None:
    # one entity holds every question: resampling entities cannot move kept %, so the interval is a point
    one = _counts([(20, 15)])
    assert kept_interval(one, name="x", seed=0, samples=200) == (0.75, 0.75)
    # the same questions spread over 20 entities of one question each: the interval opens
    spread = _counts([(1, 1)] * 15 + [(1, 0)] * 5)
    ci = kept_interval(spread, name="x", seed=0, samples=200)
    assert ci is not None and ci[0] < 0.75 < ci[1]
    assert kept_interval(_counts([]), name="x", seed=0, samples=200) is None  # nothing right before


def test_the_report_shows_kept_percent_per_job_and_language(tmp_path: Path) -> None:
    loc = {"s": {"en": _counts([(4, 4), (4, 3), (4, 4)]), "fr": _counts([(1, 1)])}}
    data = build_report("snap", ["en", "fr"], [_job(1, loc)], _outcomes())
    assert len(data.locality) == 2
    paths = write_report_files(data, tmp_path / "r")
    md = paths.markdown.read_text()
    assert "## Locality: what each job kept" in md
    assert "| m | cpt-lora | s | en | en | 13 | 12 | 11 | 1 | 0 | 91.7 [" in md
    assert "| m | cpt-lora | s | en | fr | 2 | 1 | 1 | 0 | 0 | too few (n = 1) |" in md
    assert any(line.startswith("- Locality, m / cpt-lora / s trained in en") for line in md.splitlines())
    rows = list(csv.DictReader((tmp_path / "r" / "locality.csv").open()))
    assert [(r["test"], r["kept_pct"], r["too_few"]) for r in rows] == [("en", "91.67", "False"), ("fr", "100.00", "True")]
    metrics = json.loads(paths.json.read_text())
    assert [k["lang"] for k in metrics["locality"]] == ["en", "fr"] and "locality" in metrics["jobs"][0]


def test_a_report_without_locality_writes_what_it_wrote_before(tmp_path: Path) -> None:
    data = build_report("snap", ["en", "fr"], [_job(1, None)], _outcomes())
    paths = write_report_files(data, tmp_path / "r")
    assert data.locality == [] and not (tmp_path / "r" / "locality.csv").exists()
    assert "Locality" not in paths.markdown.read_text()
    metrics = json.loads(paths.json.read_text())
    assert "locality" not in metrics and "locality" not in metrics["jobs"][0]


def test_one_entity_is_too_few_whatever_its_questions() -> None:
    """The demo's leaderboard showed kept % 30.0 [30.0, 30.0] (n=10): ten questions, all about the one film the
    target knew. An interval of width 0 from one entity says nothing: it reads "too few", here and pooled."""
    from clkt.report.locality import MIN_KEPT_ENTITIES, pooled_kept

    one = _counts([(12, 4)])  # 12 right before (above MIN_KEPT_N), one entity
    two = _counts([(6, 2), (6, 2)])
    (k1,) = kept_langs([_job(1, {"s": {"en": one}})], snapshot_id="snap", seed=0, samples=200)
    (k2,) = kept_langs([_job(1, {"s": {"en": two}})], snapshot_id="snap", seed=0, samples=200)
    assert one.base_right >= MIN_KEPT_N and MIN_KEPT_ENTITIES == 2
    assert k1.too_few and kept_text(k1) == "too few (n = 12)"
    assert not k2.too_few and kept_text(k2).startswith("33.3 [")
    pooled = pooled_kept([("snap", {"s": {"en": one.model_dump()}}), ("snap", {"s": {"fr": one.model_dump()}})],
                         scorer="s", seed=0, samples=200)
    assert pooled is not None and pooled.value is None and pooled.ci is None and pooled.n == 24  # one entity, twice
    both = pooled_kept([("snap", {"s": {"en": two.model_dump()}})], scorer="s", seed=0, samples=200)
    assert both is not None and both.value == 4 / 12 and both.ci is not None
