"""Kept % on the published snapshot card: per target, strategy, scorer, train and test language with n and the
95% CI, labelled as what it is, "too few" under the minimum; the report's own figures; no section without them."""

from __future__ import annotations

import json
from pathlib import Path

from sqlmodel import col, select

from clkt.evaluate.summary import EntityKept, JobSummary, LocalityCounts
from clkt.publish.card import SnapshotCard, render_snapshot_card
from clkt.publish.state import Hold, Included, PublishState
from clkt.report.basics import BOOTSTRAP_SAMPLES
from clkt.report.data import JobInfo
from clkt.report.locality import KeptLang, kept_langs, kept_text
from clkt.snapshots.layout import MANIFEST_FILE, SnapshotManifest
from storage.engine import Store
from tests.fakes.hub_server import FakeHub
from tests.inject._fixtures import write_tiny_snapshot
from tests.publish.conftest import REPO, publish_now, publish_settings, seed_snapshot

LABEL = "questions about entities the target already knew"


def _counts(per_entity: list[tuple[int, int]]) -> LocalityCounts:
    """(right before, kept) per entity, ids 1, 2, ..."""
    kept, right = sum(k for _, k in per_entity), sum(b for b, _ in per_entity)
    return LocalityCounts(n=right + 1, kept=kept, lost=right - kept, gained=0,
                          entities=[EntityKept(entity=i + 1, base_right=b, kept=k) for i, (b, k) in enumerate(per_entity)])


def _kept() -> list[KeptLang]:
    loc = {"option-loglik": {"en": _counts([(1, 1)] * 10 + [(1, 0)] * 2), "fr": _counts([(2, 2), (1, 0)])}}
    job = JobInfo(job_id=3, model="gemma-3-270m", strategy="cpt-lora", train_lang="en", status="done", locality=loc)
    return kept_langs([job], snapshot_id="snap", seed=0, samples=BOOTSTRAP_SAMPLES)


def _card(tmp_path: Path, kept: list[KeptLang]) -> str:
    m = SnapshotManifest.model_validate_json((write_tiny_snapshot(tmp_path / "s") / MANIFEST_FILE).read_bytes())
    state = PublishState(snapshot_id=m.snapshot_id, content_sha256=m.content_sha256, held=False, hold_documents=False,
                         retracted=[], report_fingerprint="f" * 64,
                         include=Included(report=True, predictions=True, configs=True, adapters=False))
    card = SnapshotCard(manifest=m, sources=[], state=state, hold=Hold(periods=0, newer=0, until_period=None, expected=None),
                        retractions=[], held_retractions=0, revision=1, history=[], published={}, has_report=True,
                        predictions=0, jobs=1, adapters=0, manifest_sha256="0" * 64, kept=kept)
    return render_snapshot_card(card, [])


def test_the_card_shows_kept_percent_with_n_and_ci_and_too_few(tmp_path: Path) -> None:
    kept = _kept()
    en, fr = kept
    card = _card(tmp_path, kept)
    assert "## Locality: what each injection kept" in card and LABEL in card and "bootstrap over entities" in card
    assert ("| model | strategy | scorer | train | test | questions | right before | kept | lost | gained | "
            "kept % [95% CI] |") in card
    assert en.ci is not None and kept_text(en) == f"83.3 [{100 * en.ci[0]:.0f}, {100 * en.ci[1]:.0f}]"
    assert f"| gemma-3-270m | cpt-lora | option-loglik | en | en | 13 | 12 | 10 | 2 | 0 | {kept_text(en)} |" in card
    assert "| gemma-3-270m | cpt-lora | option-loglik | en | fr | 4 | 3 | 2 | 1 | 0 | too few (n = 3) |" in card
    assert fr.too_few


def test_a_card_without_locality_figures_has_no_such_section(tmp_path: Path) -> None:
    card = _card(tmp_path, [])
    assert "Locality" not in card and LABEL not in card


async def test_a_published_card_carries_the_reports_kept_percent(store: Store, tmp_path: Path, hub: FakeHub) -> None:
    """Through `clkt publish`'s own path: the jobs' stored locality counts, the report recomputed from them, the
    card's rows the report's `locality.csv` figures."""
    from storage.models import GpuJob

    settings = publish_settings(tmp_path, hub.url, hold_back_periods=0)
    sid = await seed_snapshot(store, settings, month=6, prefix="a")
    loc = {"option-loglik": {"en": _counts([(1, 1)] * 11 + [(1, 0)]), "fr": _counts([(1, 1), (1, 0)])}}
    async with store.transaction() as s:
        for job in (await s.execute(select(GpuJob).where(col(GpuJob.snapshot_id) == sid))).scalars().all():
            summary = JobSummary(selection_scorer="option-loglik", scorers=["option-loglik"], scores=[], locality=loc)
            job.summary = summary.model_dump(mode="json")
    res = await publish_now(store, settings, sid)
    assert res.outcome is not None, res.error
    tree = hub.tree(REPO)
    card = tree[f"snapshots/{sid}/hf/README.md"].decode()
    report = json.loads(tree[f"snapshots/{sid}/report/metrics.json"])
    assert len(report["locality"]) == 4  # 2 jobs (train en, fr) x 2 test languages
    assert "## Locality: what each injection kept" in card and LABEL in card
    for k in map(KeptLang.model_validate, report["locality"]):
        cells = [k.model, k.strategy, k.scorer, k.train_lang, k.lang, str(k.n), str(k.base_right)]
        assert "| " + " | ".join(cells) + f" | {k.kept} | {k.lost} | {k.gained} | {kept_text(k)} |" in card
    assert card.count("too few (n = 2)") == 2 and card.count("91.7 [") == 2
