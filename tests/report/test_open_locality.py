"""The open track's locality (`clkt.report.open_locality`) on a hand-checked case: one job, 12 known entities with
one short-answer question each (split `locality`), asked in English and French.

- English: base right on entities 0-9; injected right on 0-7 and 10. Kept 8, lost 2 (8, 9), gained 1 (10), n 12:
  kept % = 8 / 10 = 80 %, over 10 entities with an answer right before.
- French: base right on 0-2 only, all kept: 3 right before, under the minimum of 10: too few.
- Entity 11's injected English answer could not be scored (UNSCORABLE): no pair, left out.

The figure is the MCQ locality's (`kept_figure` on the same paired counts: the same value, interval and rule)."""

from __future__ import annotations

import dataclasses

import pytest

from clkt.evaluate.summary import EntityKept, LocalityCounts
from clkt.report.clustered import entity_draws
from clkt.report.locality import kept_figure, kept_text
from clkt.report.open_lines import open_lines
from clkt.report.open_locality import open_kept
from clkt.report.open_track import open_track
from clkt.snapshots.ids import stable_entity_id
from storage.open_results import OpenResultRow

SNAPSHOT = "s-2025-06-abc"
SAMPLES = 400


def _ent(e: int) -> int:
    return stable_entity_id("fixture", str(e))


def _row(e: int, lang: str, variant: str, verdict: str | bool, *, split: str = "locality") -> OpenResultRow:
    v = verdict if isinstance(verdict, str) else ("CORRECT" if verdict else "INCORRECT")
    return OpenResultRow(
        job_id=3, target_model="m", strategy="s", train_lang="en", seed=0, open_qid=5000 + e, entity_id=_ent(e),
        domain="movies", fact="film.director", lang=lang, variant=variant, scorer="open-normaliser", split=split,
        verdict=v, other_language=False, answer="x",
    )


def _rows() -> list[OpenResultRow]:
    rows = [_row(e, "en", "base", e < 10) for e in range(12)]
    rows += [_row(e, "en", "injected", "UNSCORABLE" if e == 11 else (e < 8 or e == 10)) for e in range(12)]
    rows += [_row(e, lang, v, e < 3) for e in range(12) for lang in ("fr",) for v in ("base", "injected")]
    return rows


def test_open_kept_by_hand_and_by_the_mcq_localitys_definition() -> None:
    got = {k.lang: k for k in open_kept(_rows(), snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES)}
    en, fr = got["en"], got["fr"]
    assert (en.job_id, en.scorer, en.n, en.kept, en.lost, en.gained, en.entities) == (3, "open-normaliser", 11, 8, 2, 1, 10)
    assert en.rate == pytest.approx(0.8) and not en.too_few
    assert en.ci is not None and en.ci[0] < 0.8 < en.ci[1] and en.ci[0] >= 0.5
    # the MCQ locality's figure on the same counts: one figure, one number
    counts = LocalityCounts(n=11, kept=8, lost=2, gained=1,
                            entities=[EntityKept(entity=_ent(e), base_right=1, kept=int(e < 8)) for e in range(10)])
    mcq = kept_figure(counts, snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES)
    assert (mcq.rate, mcq.ci) == (en.rate, en.ci)
    assert (fr.n, fr.base_right, fr.kept, fr.too_few) == (12, 3, 3, True) and kept_text(fr) == "too few (n = 3)"


def test_the_open_track_shows_locality_apart_from_learn() -> None:
    test_rows = [_row(e, "en", v, v == "injected", split="test") for e in range(12) for v in ("base", "injected")]
    with_loc = open_track(test_rows + _rows(), languages=["en", "fr"], snapshot_id=SNAPSHOT, samples=SAMPLES)
    without = open_track(test_rows, languages=["en", "fr"], snapshot_id=SNAPSHOT, samples=SAMPLES)
    assert with_loc is not None and without is not None
    assert with_loc.learn == without.learn and without.locality == []  # never Learn, never pooled
    assert [(k.lang, k.kept) for k in with_loc.locality] == [("en", 8), ("fr", 3)]
    text = "\n".join(open_lines(with_loc, lambda r: "| " + " | ".join(r) + " |"))
    assert "### Locality (entities the target knew; never trained on)" in text
    assert f"| {kept_text(with_loc.locality[0])} |" in text and "80.0 [" in text and "too few (n = 3)" in text
    assert "### Locality" not in "\n".join(open_lines(without, lambda r: "| " + " | ".join(r) + " |"))


def test_no_locality_answers_no_rows() -> None:
    assert open_kept([_row(1, "en", "base", True, split="test")], snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES) == []
    only_base = [_row(e, "en", "base", True) for e in range(12)]  # never answered after injection: no pair
    assert open_kept(only_base, snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES) == []


def test_the_jurys_kept_percent_never_keeps_undecided_and_leaves_ungraded_out() -> None:
    """The jury's verdicts on the same answers: as the normaliser's in English, but entity 7's injected answer
    undecided (lost, never kept) and entity 9 not graded (no pair): kept 7 of 9; French not graded at all: no cell."""
    from clkt.report.open_jury import JURY_SCORER
    from clkt.report.open_right import jury_right
    from storage.open_judgements import JuryRow

    def verdict(r: OpenResultRow) -> str | None:
        return None if (r.open_qid, r.variant) == (5007, "injected") else r.verdict

    jury = [JuryRow(judge="*jury*", job_id=r.job_id, open_qid=r.open_qid, lang=r.lang, variant=r.variant, scorer=r.scorer,
                    verdict=verdict(r), failed=False, cost_usd=0.0, prompt_version="v")
            for r in _rows() if r.lang == "en" and r.open_qid != 5009]
    (en,) = open_kept(_rows(), snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES, right=jury_right(jury), scorer=JURY_SCORER)
    assert (en.scorer, en.lang, en.n, en.kept, en.lost, en.gained) == (JURY_SCORER, "en", 10, 7, 2, 1)
    assert en.rate == pytest.approx(7 / 9) and en.ci is not None and en.ci[0] <= 7 / 9 <= en.ci[1]
    assert open_kept(_rows(), snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES, right=jury_right([]), scorer=JURY_SCORER) == []


def test_a_jury_row_a_failed_vote_left_without_verdict_is_not_graded_never_wrong() -> None:
    """Entity 7's injected answer: the jury's row has no verdict because a vote failed (the stage tries it again).
    Every figure treats it as not graded (in no pair, counted pending), never as undecided: the same figures as
    without the row, and not those of an undecided verdict."""
    from clkt.report.open_jury import JURY_SCORER, open_jury
    from clkt.report.open_right import jury_right
    from storage.open_judgements import JuryRow

    def row(r: OpenResultRow, *, verdict: str | None, failed: bool) -> JuryRow:
        return JuryRow(judge="*jury*", job_id=r.job_id, open_qid=r.open_qid, lang=r.lang, variant=r.variant,
                       scorer=r.scorer, verdict=verdict, failed=failed, cost_usd=0.0, prompt_version="v")

    en = [r for r in _rows() if r.lang == "en"]
    hit = next(r for r in en if (r.open_qid, r.variant) == (5007, "injected"))
    others = [row(r, verdict=r.verdict, failed=False) for r in en if r is not hit]

    def kept(jury: list[JuryRow]) -> tuple[int, int, int]:
        (k,) = open_kept(_rows(), snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES, right=jury_right(jury), scorer=JURY_SCORER)
        return k.n, k.kept, k.lost

    failed = [*others, row(hit, verdict=None, failed=True)]
    undecided = [*others, row(hit, verdict=None, failed=False)]
    assert kept(failed) == kept(others) != kept(undecided)
    assert not failed[-1].decided and undecided[-1].decided and row(hit, verdict="CORRECT", failed=True).decided

    tests = [dataclasses.replace(r, split="test") for r in en]
    draws = entity_draws([r.entity_id for r in tests], snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES)
    rep = open_jury(tests, failed, draws)
    assert rep is not None and rep.pending == 1 and sum(c.n for c in rep.cells) == len(tests) - 1
