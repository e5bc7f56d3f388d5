"""The open track's audit score (issue 47 item 5): Cohen's kappa over SimpleQA's three grades on a hand-checked
table, its bootstrap interval over entities (seeded, bracketing the estimate), each stored scorer against the human
labels per language and overall, "too few" under the minimum, the majority of several annotators, and every form
refused with one line naming what is wrong."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from clkt.errors import UserError
from clkt.snapshots.agreement import cohen_kappa, fleiss_kappa, kappa_interval
from clkt.snapshots.audit_open import OPEN_COLUMNS, open_sample_id
from clkt.snapshots.audit_open_score import ALL, MIN_N, OpenLabels, read_open_forms, score_open
from storage.open_judgements import JURY, JuryRow
from storage.open_results import OpenResultRow

SID = "demo-2025-06-r0"
CO, IN, NA = "CORRECT", "INCORRECT", "NOT_ATTEMPTED"
# human (rows) x scorer (columns), CO / IN / NA: 20 of 25 alike; marginals 12/10/3 and 11/11/3
TABLE = {(CO, CO): 10, (CO, IN): 2, (IN, CO): 1, (IN, IN): 8, (IN, NA): 1, (NA, IN): 1, (NA, NA): 2}
KAPPA = (20 / 25 - (12 * 11 + 10 * 11 + 3 * 3) / 625) / (1 - (12 * 11 + 10 * 11 + 3 * 3) / 625)  # 0.6658


def _pairs() -> tuple[list[str], list[str]]:
    humans = [h for (h, _), k in TABLE.items() for _ in range(k)]
    scorer = [s for (_, s), k in TABLE.items() for _ in range(k)]
    return humans, scorer


def test_cohen_kappa_over_three_grades_against_a_hand_computed_value() -> None:
    humans, scorer = _pairs()
    assert round(KAPPA, 4) == 0.6658
    assert cohen_kappa(humans, scorer) == pytest.approx(KAPPA, abs=1e-12)
    from sklearn.metrics import cohen_kappa_score  # type: ignore[import-untyped]

    assert cohen_kappa(humans, scorer) == pytest.approx(cohen_kappa_score(humans, scorer), abs=1e-12)
    # the binary case is unchanged: Cohen's textbook table (20, 5, 10, 15) is 0.4
    a = [True] * 25 + [False] * 25
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-12)


def test_the_interval_is_over_entities_seeded_and_brackets_kappa() -> None:
    humans, scorer = _pairs()
    units = [i % 8 for i in range(len(humans))]
    ci = kappa_interval(humans, scorer, units, seed=3, name=SID)
    assert ci is not None and ci[0] < KAPPA < ci[1] and ci[1] - ci[0] > 0.1
    assert kappa_interval(humans, scorer, units, seed=3, name=SID) == ci  # seeded
    assert kappa_interval(humans, scorer, units, seed=4, name=SID) != ci
    # one entity: a bootstrap over it has no spread
    assert kappa_interval(humans, scorer, [0] * len(humans), seed=3, name=SID) is None
    with pytest.raises(ValueError, match="one unit per pair"):
        kappa_interval(humans, scorer, units[:-1], seed=3, name=SID)


def _row(i: int, *, lang: str = "en", scorer: str = "open-normaliser", verdict: str = CO, answer: str = "x",
         entity: int | None = None) -> OpenResultRow:
    return OpenResultRow(
        open_qid=1000 + i, entity_id=entity if entity is not None else i % 8, domain="movies", fact="film.director",
        lang=lang, variant="base", scorer=scorer, split="test", verdict=verdict, other_language=False,
        answer=f"{answer}{i}", job_id=1, target_model="t", strategy="cpt-lora", train_lang="en", seed=0,
    )


def _sid(r: OpenResultRow) -> str:
    return open_sample_id(SID, r.lang, r.open_qid, r.job_id, r.variant)


def _labels(rows: list[OpenResultRow], humans: list[str]) -> OpenLabels:
    return OpenLabels(snapshot_id=SID, files=["a.csv"], annotators=1, labels={_sid(r): h for r, h in zip(rows, humans, strict=True)},
                      answers={_sid(r): r.answer for r in rows}, no_majority=0)


def test_each_stored_scorer_against_the_labels_per_language_and_overall() -> None:
    humans, scorer = _pairs()
    norm = [_row(i, verdict=v) for i, v in enumerate(scorer)]
    jury = [_row(i, verdict=h, scorer="open-jury") for i, h in enumerate(humans)]  # agrees with the humans
    few = [_row(100 + i, lang="fr", verdict=CO) for i in range(MIN_N - 1)]
    stored = [*norm, *jury, *few]
    score = score_open(_labels([*norm, *few], [*humans, *[CO] * len(few)]), stored, seed=0)
    got = {(a.scorer, a.language): a for a in score.agreement}
    en = got[("open-normaliser", "en")]
    assert (en.n, en.agree, en.entities, en.reading) == (25, 20, 8, "ok")
    assert en.kappa == pytest.approx(KAPPA) and en.ci is not None and en.ci[0] < KAPPA < en.ci[1]
    fr = got[("open-normaliser", "fr")]
    assert (fr.n, fr.agree, fr.kappa, fr.ci, fr.reading) == (MIN_N - 1, MIN_N - 1, None, None, "too few")
    assert got[("open-normaliser", ALL)].n == 25 + MIN_N - 1
    assert got[("open-jury", "en")].kappa == pytest.approx(1.0) and ("open-jury", "fr") not in got
    assert score.scorers == ["open-jury", "open-normaliser"] and score.without_verdicts == []
    only_norm = score_open(_labels(norm, humans), norm, seed=0)
    assert only_norm.without_verdicts == ["each judge", "the jury"]
    assert score_open(_labels(norm, humans), norm, seed=0) == only_norm  # seeded: the same intervals
    same = score_open(_labels(norm, [CO] * 25), [_row(i, verdict=CO) for i in range(25)], seed=0)
    assert same.agreement[0].reading == "undefined" and same.agreement[0].kappa is None


def _vote(r: OpenResultRow, judge: str, verdict: str | None) -> JuryRow:
    return JuryRow(judge=judge, job_id=r.job_id, open_qid=r.open_qid, lang=r.lang, variant=r.variant, scorer=r.scorer,
                   verdict=verdict, failed=verdict is None, cost_usd=0.001, prompt_version="open-judge.v1")


def test_each_judge_and_the_jury_from_their_stored_rows() -> None:
    """The jury stage's rows (`storage.open_judgements`): each judge's votes and the jury's verdicts are scored
    against the labels beside the normaliser; a failed vote or an undecided jury is no verdict, never guessed."""
    humans, scorer = _pairs()
    norm = [_row(i, verdict=v) for i, v in enumerate(scorer)]
    unlabelled = _row(99)
    judged = [
        *(_vote(r, "openai:gpt-4o-mini", h) for r, h in zip(norm, humans, strict=True)),  # agrees with the labels
        *(_vote(r, "google-gla:gemini-2.0-flash", v) for r, v in zip(norm, scorer, strict=True)),  # as the normaliser
        *(_vote(r, JURY, h if i % 5 else None) for i, (r, h) in enumerate(zip(norm, humans, strict=True))),
        _vote(unlabelled, JURY, CO),  # an answer not on the form: not counted
    ]
    score = score_open(_labels(norm, humans), [*norm, unlabelled], seed=0, judged=judged)
    got = {(a.scorer, a.language): a for a in score.agreement}
    assert score.scorers == ["judge google-gla:gemini-2.0-flash", "judge openai:gpt-4o-mini", "jury", "open-normaliser"]
    assert score.without_verdicts == []
    assert got[("judge openai:gpt-4o-mini", ALL)].kappa == pytest.approx(1.0)
    assert got[("judge google-gla:gemini-2.0-flash", "en")].kappa == pytest.approx(KAPPA)
    jury = got[("jury", "en")]
    assert (jury.n, jury.agree) == (20, 20)  # the 5 undecided left out
    assert got[("open-normaliser", "en")].n == 25


def test_an_unknown_id_or_an_edited_answer_is_refused() -> None:
    rows = [_row(i) for i in range(3)]
    labels = _labels(rows, [CO] * 3)
    with pytest.raises(UserError, match=r"not one of snapshot .* stored answers"):
        score_open(labels, rows[:2], seed=0)
    edited = OpenLabels(**{**labels.__dict__, "answers": {**labels.answers, _sid(rows[0]): "something else"}})
    with pytest.raises(UserError, match="is not the stored answer"):
        score_open(edited, rows, seed=0)


def _form(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=OPEN_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return path


def _fid(i: int) -> str:
    return open_sample_id(SID, "en", i, 1, "base")


def _form_rows(labels: list[str]) -> list[dict[str, str]]:
    return [{**dict.fromkeys(OPEN_COLUMNS, ""), "sample_id": _fid(i), "snapshot_id": SID, "language": "en",
             "answer": f"a{i}", "label": lab} for i, lab in enumerate(labels)]


def test_the_majority_of_several_annotators_is_the_label(tmp_path: Path) -> None:
    a = _form(tmp_path / "a.csv", _form_rows([CO, CO, IN]))
    b = _form(tmp_path / "b.csv", _form_rows(["correct", "not attempted", NA]))
    c = _form(tmp_path / "c.csv", _form_rows([IN, IN, "Not-Attempted"]))
    got = read_open_forms([a, b, c])
    assert got.labels == {_fid(0): CO, _fid(2): NA} and got.no_majority == 1
    assert got.annotators == 3 and read_open_forms([a]).labels[_fid(2)] == IN
    stored = [OpenResultRow(open_qid=i, entity_id=i, domain="movies", fact="f", lang="en", variant="base", scorer="open-normaliser",
                            split="test", verdict=CO, other_language=False, answer=f"a{i}", job_id=1, target_model="t",
                            strategy="s", train_lang="en", seed=0) for i in range(3)]
    score = score_open(got, stored, seed=0)
    agreement = score.annotator_agreement
    # three annotators on three answers: Fleiss' kappa over the three grades, by hand: P_i = 1/3, 0, 1/3, P_e = 3 (1/3)^2
    # = 1/3, so (2/9 - 1/3) / (2/3) = -1/6 (worse than chance)
    assert agreement is not None and agreement.method == "Fleiss' kappa" and agreement.pairs == 3
    assert agreement.kappa == pytest.approx(-1 / 6, abs=1e-4) == fleiss_kappa([[CO, CO, IN], [CO, NA, IN], [IN, NA, NA]])
    assert agreement.observed == 0.0
    assert score.agreement[-1].n == 2  # the answer without a majority is left out
    two = score_open(read_open_forms([a, b]), stored, seed=0).annotator_agreement
    assert two is not None and two.method == "Cohen's kappa" and two.pairs == 3
    assert score_open(read_open_forms([a]), stored, seed=0).annotator_agreement is None


@pytest.mark.parametrize(("edit", "message"), [
    (lambda rows: [{**r, "label": ""} for r in rows], "no label in this form"),
    (lambda rows: [rows[0], {**rows[1], "label": ""}], r":3: answer .* has no label"),
    (lambda rows: [{**rows[0], "label": "MAYBE"}], "'MAYBE' is not a label"),
    (lambda rows: [rows[0], rows[0]], "appears twice"),
    (lambda rows: [rows[0], {**rows[1], "sample_id": "other-2025-05-r0:en:1:abcdef012345"}], "is not one of snapshot"),
    (lambda rows: [rows[0], {**rows[1], "snapshot_id": "other"}], "several snapshots"),
])
def test_a_bad_form_is_refused_with_one_line(tmp_path: Path, edit: object, message: str) -> None:
    assert callable(edit)
    f = _form(tmp_path / "f.csv", edit(_form_rows([CO, IN])))
    with pytest.raises(UserError, match=message) as e:
        read_open_forms([f])
    assert "\n" not in str(e.value)


def test_forms_of_two_snapshots_or_not_a_form_are_refused(tmp_path: Path) -> None:
    a = _form(tmp_path / "a.csv", _form_rows([CO]))
    other = [{**r, "sample_id": r["sample_id"].replace(SID, "other"), "snapshot_id": "other"} for r in _form_rows([CO])]
    with pytest.raises(UserError, match="several snapshots"):
        read_open_forms([a, _form(tmp_path / "b.csv", other)])
    (tmp_path / "x.csv").write_text("sample_id,label\nq,CORRECT\n", encoding="utf-8")
    with pytest.raises(UserError, match="not an open-answer audit form"):
        read_open_forms([tmp_path / "x.csv"])
    with pytest.raises(UserError, match="at least one"):
        read_open_forms([])


def test_an_unscorable_answer_is_no_verdict_of_the_normaliser() -> None:
    """An answer the normaliser could not score (UNSCORABLE, its job's open pass) is left out of its agreement, as an
    undecided jury is: never counted as a disagreement with the human label."""
    humans, scorer = _pairs()
    norm = [_row(i, verdict=v) for i, v in enumerate(scorer)]
    odd = _row(99, verdict="UNSCORABLE")
    got = score_open(_labels([*norm, odd], [*humans, CO]), [*norm, odd], seed=0)
    (en,) = [a for a in got.agreement if (a.scorer, a.language) == ("open-normaliser", "en")]
    assert (en.n, en.agree) == (25, 20) and en.kappa == pytest.approx(KAPPA)
