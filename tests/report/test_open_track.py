"""The report's open-answer section (`clkt.report.open_track`) on a hand-checked case: one job trained in English,
12 entities with one open question each, asked in English and French.

- English, base: all wrong; injected: entities 0-9 right. Learn: n = 12, 0 -> 10, gained 10, lost 0, exact McNemar
  p = 2 / 2**10 = 0.001953125: learned.
- French, injected: entities 0-5 right, and entity 10 (wrong in English). The pair en -> fr: A = 6 (0-5), B = 4 (6-9),
  C = 1 (10), D = 1 (11): Overall = 6/12 = 50 %, Transfer = 6/10 = 60 % (n = A+B = 10). Entity 11's French answer
  was in another language: 1 of 12.
- The MCQ of the same fact (slot `director`) in English, injected: right on 0-7. Against the open verdicts (0-9):
  both right 8, open only 2 (8, 9), MCQ only 0, neither 2: 10 of 12 agree.
- The control split: one fictional entity, wrong before and right after in English.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clkt.report.data import ci_text
from clkt.report.metric_table import OVERALL, TRANSFER
from clkt.report.metrics import ALL_DOMAINS
from clkt.report.open_jury import JURY_TITLE
from clkt.report.open_lines import open_lines
from clkt.report.open_track import OPEN_TITLE, OpenTrack, mcq_slot, open_track
from clkt.snapshots.ids import stable_entity_id
from storage.gpu_jobs import JobResultRow
from storage.open_judgements import JuryRow
from storage.open_results import OpenResultRow

SOURCE = "fixture"


def _ent(e: int) -> int:
    return stable_entity_id(SOURCE, str(e))


def _row(e: int, lang: str, variant: str, right: bool, *, other: bool = False, split: str = "test") -> OpenResultRow:
    return OpenResultRow(
        job_id=1, target_model="m", strategy="s", train_lang="en", seed=0, open_qid=1000 + e, entity_id=_ent(e),
        domain="movies", fact="film.director", lang=lang, variant=variant, scorer="open-normaliser", split=split,
        verdict="CORRECT" if right else "INCORRECT", other_language=other, answer="x",
    )


def _rows() -> list[OpenResultRow]:
    rows = [_row(e, lang, "base", False) for e in range(12) for lang in ("en", "fr")]
    rows += [_row(e, "en", "injected", e < 10) for e in range(12)]
    rows += [_row(e, "fr", "injected", e < 6 or e == 10, other=e == 11) for e in range(12)]
    rows += [_row(99, "en", "base", False, split="control"), _row(99, "en", "injected", True, split="control")]
    return rows


def _mcq() -> list[JobResultRow]:
    return [JobResultRow(job_id=1, target_model="m", strategy="s", train_lang="en", question_id=e, lang="en",
                         variant="injected", scorer="letter-logprob", split="test", predicted="A", correct=e < 8,
                         domain="movies", source=SOURCE, external_id=str(e), slot="director", entity_id=e)
            for e in range(12)]


def test_the_open_track_figures_by_hand() -> None:
    track = open_track(_rows(), languages=["en", "fr"], snapshot_id="snap", mcq=_mcq(), samples=200)
    assert track is not None and track.scorers == ["open-normaliser"] and track.answers == 50
    (learn,) = [t for t in track.learn if t.domain == ALL_DOMAINS]
    st = learn.stat
    assert (st.n, st.base_correct, st.injected_correct, st.gained, st.lost) == (12, 0, 10, 10, 0)
    assert st.p_value == pytest.approx(0.001953125) and learn.learned
    assert st.injected_ci is not None and st.injected_ci[0] <= 10 / 12 <= st.injected_ci[1]  # over entities
    (pair,) = [p for p in track.pairs if p.domain == ALL_DOMAINS]
    assert (pair.train_lang, pair.test_lang) == ("en", "fr")
    assert (pair.table.a, pair.table.b, pair.table.c, pair.table.d) == (6, 4, 1, 1)
    (cell,) = [c for c in track.table2 if c.domain == ALL_DOMAINS]
    assert cell.metric(TRANSFER.key).mean == pytest.approx(0.6) and cell.metric(OVERALL.key).mean == pytest.approx(0.5)
    ci = cell.metric(TRANSFER.key).ci
    assert ci is not None and ci[0] <= 0.6 <= ci[1]
    (fr,) = [o for o in track.other_language if o.variant == "injected" and o.lang == "fr"]
    assert (fr.n, fr.other) == (12, 1) and fr.share == pytest.approx(1 / 12)
    (agree,) = track.agreement
    assert (agree.variant, agree.n, agree.both_right, agree.mcq_only, agree.open_only, agree.neither) == (
        "injected", 12, 8, 0, 2, 2)
    assert agree.rate == pytest.approx(10 / 12)
    (ctl,) = [t for t in track.control_learn if t.domain == ALL_DOMAINS]
    assert ctl.control and (ctl.stat.n, ctl.stat.base_correct, ctl.stat.injected_correct) == (1, 0, 1)


def test_the_section_shows_each_figure_with_its_n() -> None:
    track = open_track(_rows(), languages=["en", "fr"], snapshot_id="snap", mcq=_mcq(), samples=200)
    assert track is not None
    text = "\n".join(open_lines(track, lambda cells: "| " + " | ".join(cells) + " |"))
    assert f"## {OPEN_TITLE}" in text
    assert "| m | s | en | fr | 6 | 4 | 1 | 1 | 50.0 | 60.0 (n=10) |" in text
    assert "| m | s | en | injected | fr | 12 | 1 | 8.3 [" in text
    assert "| 1 | m | s | en | injected | 12 | 83.3 [" in text


def test_the_same_fact_is_paired_where_its_names_differ() -> None:
    assert (mcq_slot("film.director"), mcq_slot("release.tracks"), mcq_slot("quake.date"), mcq_slot("film.lead")) == (
        "director", "track_count", "time", "lead_actor")


def test_every_open_fact_pairs_with_a_slot_its_domain_asks() -> None:
    """An open fact whose MCQ slot its own kind of facts does not declare would never pair (nor be retracted with its
    MCQ); the ones without an MCQ on that fact are named here."""
    from clkt.domains import DOMAINS
    from clkt.openqa.kinds import open_kinds

    slots = {facts: set(kind_slots) for d in DOMAINS.values() for facts, kind_slots in d.kinds}
    unpaired = sorted(f for facts, kind in open_kinds().items() for f in kind.questions if mcq_slot(f) not in slots[facts])
    assert unpaired == ["match.home_goals"]


def test_no_open_answers_no_section() -> None:
    assert open_track([], languages=["en", "fr"], snapshot_id="snap") is None


def test_a_job_that_did_not_learn_leaves_transfer_out() -> None:
    rows = [r for r in _rows() if not (r.variant == "injected" and r.lang == "en")]
    rows += [_row(e, "en", "injected", e < 2) for e in range(12)]  # 0 -> 2 of 12: p = 0.5, not learned
    track = open_track(rows, languages=["en", "fr"], snapshot_id="snap", samples=0)
    assert track is not None and not next(t for t in track.learn if t.domain == ALL_DOMAINS).learned
    (cell,) = [c for c in track.table2 if c.domain == ALL_DOMAINS]
    assert cell.metric(TRANSFER.key).mean is None and cell.not_interpretable == 1
    assert cell.metric(OVERALL.key).mean is not None


def test_the_card_shows_the_open_track_apart_with_the_reports_figures(tmp_path: Path) -> None:
    from clkt.publish.card import SnapshotCard, render_snapshot_card
    from clkt.publish.state import Hold, Included, PublishState
    from clkt.snapshots.layout import MANIFEST_FILE, SnapshotManifest
    from tests.inject._fixtures import write_tiny_snapshot

    m = SnapshotManifest.model_validate_json((write_tiny_snapshot(tmp_path / "s") / MANIFEST_FILE).read_bytes())
    state = PublishState(snapshot_id=m.snapshot_id, content_sha256=m.content_sha256, held=False, hold_documents=False,
                         retracted=[], report_fingerprint="f" * 64,
                         include=Included(report=True, predictions=True, configs=True, adapters=False))

    def card(track: OpenTrack | None) -> str:
        return render_snapshot_card(SnapshotCard(
            manifest=m, sources=[], state=state, hold=Hold(periods=0, newer=0, until_period=None, expected=None),
            retractions=[], held_retractions=0, revision=1, history=[], published={}, has_report=True, predictions=0,
            jobs=1, adapters=0, manifest_sha256="0" * 64, open_track=track), [])

    track = open_track(_rows(), languages=["en", "fr"], snapshot_id="snap", samples=200)
    assert track is not None
    (learn,) = [t for t in track.learn if t.domain == ALL_DOMAINS]
    text = card(track)
    assert f"## {OPEN_TITLE}" in text and "never pooled" in text
    assert f"| m | s | open-normaliser | en | 12 | 0.0{ci_text(learn.stat.base_ci)} | 83.3{ci_text(learn.stat.injected_ci)} |" in text
    assert "| m | s | open-normaliser | 1 | 50.0 ± 0.0 [" in text  # Overall of the one pair, then Transfer 60.0
    assert OPEN_TITLE not in card(None)
    assert JURY_TITLE not in text  # no jury verdict: no jury subsection
    # the jury's verdicts: its figure under the open section, apart, with its n and cost
    jury = [JuryRow(judge="jury", job_id=r.job_id, open_qid=r.open_qid, lang=r.lang, variant=r.variant, scorer=r.scorer,
                    verdict="CORRECT", failed=False, cost_usd=0.5, prompt_version="open_judge.v1")
            for r in _rows() if r.split == "test" and r.lang == "en" and r.variant == "injected"]
    judged = open_track(_rows(), languages=["en", "fr"], snapshot_id="snap", samples=200, jury=jury)
    assert judged is not None and judged.jury is not None
    text = card(judged)
    (cell,) = [c for c in judged.jury.cells if c.lang == "en" and c.variant == "injected"]
    assert text.index(OPEN_TITLE) < text.index(JURY_TITLE) and f"the jury's cost: ${0.5 * len(jury):.4f}" in text
    assert f"| m | s | en | injected | en | {cell.n} | 100.0{ci_text(cell.ci)} | 0 | 0 |" in text and cell.n == len(jury)
