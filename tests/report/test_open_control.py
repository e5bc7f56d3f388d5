"""The open track's control split (`clkt.report.open_control`) on a hand-checked case: one job trained in English,
12 fictional entities with one short-answer question each, asked in English and French.

- English: base right on 0-1, injected right on 0-9; entity 11's injected answer UNSCORABLE (no pair). Learn: n 11,
  base 2, injected 10, gained 8, lost 0, exact McNemar p = 2 / 2**8; intervals over the 11 entities.
- French: not the train language: never in Learn.
- The jury: base INCORRECT, injected CORRECT on 0-8 and undecided on 9 (never right), 10 not graded (no pair): n 10,
  injected 9.

The report's cell and a board row's figure are the same function of the same tallies (`control_stat`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clkt.report.open_control import ControlTally, control_estimate, control_learn, control_stat, control_tallies
from clkt.report.open_jury import JURY_SCORER
from clkt.report.open_lines import open_lines
from clkt.report.open_right import jury_right
from clkt.report.open_track import open_track
from clkt.snapshots.ids import stable_entity_id
from storage.open_judgements import JuryRow
from storage.open_results import OpenResultRow

SNAPSHOT = "s-2025-06-abc"
SAMPLES = 400


def _ent(e: int) -> int:
    return stable_entity_id("control", f"fictional-{e}")


def _row(e: int, lang: str, variant: str, verdict: str | bool, *, job: int = 3, split: str = "control") -> OpenResultRow:
    v = verdict if isinstance(verdict, str) else ("CORRECT" if verdict else "INCORRECT")
    return OpenResultRow(
        job_id=job, target_model="m", strategy="s", train_lang="en", seed=0, open_qid=7000 + e, entity_id=_ent(e),
        domain="movies", fact="film.director", lang=lang, variant=variant, scorer="open-normaliser", split=split,
        verdict=v, other_language=False, answer="x",
    )


def _rows() -> list[OpenResultRow]:
    rows = [_row(e, "en", "base", e < 2) for e in range(12)]
    rows += [_row(e, "en", "injected", "UNSCORABLE" if e == 11 else e < 10) for e in range(12)]
    return rows + [_row(e, "fr", v, True) for e in range(12) for v in ("base", "injected")]


def _jury(rows: list[OpenResultRow]) -> list[JuryRow]:
    def verdict(r: OpenResultRow) -> str | None:
        e = r.open_qid - 7000
        return "INCORRECT" if r.variant == "base" else ("CORRECT" if e < 9 else None)

    return [JuryRow(judge="*jury*", job_id=r.job_id, open_qid=r.open_qid, lang=r.lang, variant=r.variant, scorer=r.scorer,
                    verdict=verdict(r), failed=False, cost_usd=0.0, prompt_version="open_judge.v1")
            for r in rows if r.open_qid != 7010]


def test_the_control_figure_by_hand() -> None:
    (cell,) = control_learn(_rows(), snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES)
    st = cell.stat
    assert (cell.scorer, cell.train_lang, cell.control, cell.entities, cell.too_few) == ("open-normaliser", "en", True, 11, False)
    assert (st.n, st.base_correct, st.injected_correct, st.gained, st.lost) == (11, 2, 10, 8, 0)
    assert st.p_value == pytest.approx(2 / 2**8) and cell.learned
    assert st.injected_ci is not None and st.injected_ci[0] <= 10 / 11 <= st.injected_ci[1] < 1.0 + 1e-9
    assert st.gain_ci is not None and 0 < st.gain_ci[0] <= 8 / 11 <= st.gain_ci[1]  # over entities, not Wald
    assert control_learn(_rows(), snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES) == [cell]  # seeded draws
    # a board row of that one job: the same function of the same tallies, the same numbers
    (tallies,) = control_tallies(_rows()).values()
    row = control_estimate([(SNAPSHOT, {k: t.model_dump(mode="json") for k, t in tallies.items()})],
                           scorer="open-normaliser", seed=0, samples=SAMPLES)
    assert row is not None and (row.n, row.base, row.injected.value, row.entities) == (11, 2 / 11, 10 / 11, 11)
    assert (row.injected.ci, row.gain.ci, row.p_value) == (st.injected_ci, st.gain_ci, st.p_value)


def test_the_jury_layer_never_counts_undecided_right_and_ungraded_in_no_pair() -> None:
    rows = _rows()
    (cell,) = control_learn(rows, snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES, right=jury_right(_jury(rows)),
                            scorer=JURY_SCORER)
    assert cell.scorer == JURY_SCORER and (cell.stat.n, cell.stat.base_correct, cell.stat.injected_correct) == (10, 0, 9)
    assert cell.entities == 10  # 10 not graded, 11 not scored by the normaliser: neither is a pair
    track = open_track([_row(e, "en", v, v == "injected", split="test") for e in range(12) for v in ("base", "injected")]
                       + rows, languages=["en", "fr"], snapshot_id=SNAPSHOT, samples=SAMPLES, jury=_jury(rows))
    assert track is not None and track.jury is not None and track.jury.control == [cell]
    assert track.jury.locality == []  # no locality answer: no figure, not 0
    text = "\n".join(open_lines(track, lambda c: "| " + " | ".join(c) + " |"))
    assert "#### Control split" in text and "#### Locality" not in text


def test_few_questions_or_one_entity_read_too_few_and_no_answers_no_figure() -> None:
    few = [_row(e, "en", v, v == "injected") for e in range(9) for v in ("base", "injected")]
    (cell,) = control_learn(few, snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES)
    assert cell.stat.n == 9 and cell.too_few  # under 10 questions
    one = [replace(r, entity_id=_ent(0)) for r in _rows()]
    (cell,) = control_learn(one, snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES)
    assert (cell.stat.n, cell.entities, cell.too_few) == (11, 1, True)  # one entity: its interval says nothing
    track = open_track(few + [_row(0, "en", v, True, split="test") for v in ("base", "injected")], languages=["en"],
                       snapshot_id=SNAPSHOT, samples=SAMPLES)
    assert track is not None
    assert "| too few | too few | too few |" in "\n".join(open_lines(track, lambda c: "| " + " | ".join(c) + " |"))
    assert control_learn([_row(0, "en", "base", True)], snapshot_id=SNAPSHOT, seed=0, samples=SAMPLES) == []  # no pair
    assert control_estimate([], scorer="open-normaliser", seed=0, samples=SAMPLES) is None
    assert control_estimate([(SNAPSHOT, {"open-normaliser": {"n": "bad"}})], scorer="open-normaliser", seed=0,
                            samples=SAMPLES) is None  # unreadable: left out


def test_pooled_over_snapshots_each_snapshots_entities_drawn_and_no_draws_no_interval() -> None:
    (a,) = control_tallies(_rows()).values()
    (b,) = control_tallies([_row(e, "en", v, v == "injected" and e < 6, job=4) for e in range(10)
                            for v in ("base", "injected")]).values()
    t = [("s1", a["open-normaliser"]), ("s2", b["open-normaliser"])]
    got = control_stat(t, seed=0, samples=SAMPLES)
    assert got is not None
    st, entities = got
    assert (st.n, st.base_correct, st.injected_correct, entities) == (21, 2, 16, 21)
    assert control_stat(list(reversed(t)), seed=0, samples=SAMPLES) == got  # the order of the jobs moves nothing
    assert st.injected_ci is not None and st.injected_ci[0] <= 16 / 21 <= st.injected_ci[1]
    bare = control_stat(t, seed=0, samples=0)
    assert bare is not None and (bare[0].injected_ci, bare[0].gain_ci) == (None, None)  # never a Wilson stand-in
    assert isinstance(a["open-normaliser"], ControlTally)
