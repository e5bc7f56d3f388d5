"""`audit score` reports the paper's procedure: a form without verdicts is refused, several annotators' verdicts
are a majority vote with their agreement (Cohen's kappa for two, Fleiss' for more) beside it, and a single
annotator is labelled as such."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from clkt.errors import UserError
from clkt.snapshots.agreement import cohen_kappa, fleiss_kappa
from clkt.snapshots.audit import CRITERIA, AuditPair, score_files, write_sample


def _pairs(n: int) -> list[AuditPair]:
    return [AuditPair(snapshot_id="snap1", language="en", domain="music" if i % 2 else "movies", qid=i, entity=f"e{i}",
                      document=f"doc {i}", question=f"q{i}?", options=["a", "b", "c", "d"], answer="a")
            for i in range(n)]


def _annotate(blank: Path, out: Path, verdicts: list[bool | None]) -> Path:
    """The blank sheet with one annotator's verdicts: True correct, False `unverifiable`, None left empty."""
    rows = list(csv.DictReader(io.StringIO(blank.read_text(encoding="utf-8"))))
    for row, v in zip(rows, verdicts, strict=True):
        if v is True:
            row["correct"] = "1"
        elif v is False:
            row["unverifiable"] = "x"
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    out.write_text(buf.getvalue(), encoding="utf-8")
    return out


def test_the_form_as_written_is_refused(tmp_path: Path) -> None:
    blank, _ = write_sample(_pairs(4), tmp_path / "audit.csv")
    with pytest.raises(UserError) as e:
        score_files([blank])
    msg = str(e.value)
    assert str(blank) in msg and "no verdict" in msg and "\n" not in msg
    partial = _annotate(blank, tmp_path / "partial.csv", [True, None, False, True])
    with pytest.raises(UserError, match=r"partial\.csv:3: .*no verdict"):
        score_files([partial])


def test_a_pair_both_correct_and_violating_is_refused(tmp_path: Path) -> None:
    blank, _ = write_sample(_pairs(2), tmp_path / "audit.csv")
    both = _annotate(blank, tmp_path / "a.csv", [True, True])
    rows = list(csv.DictReader(io.StringIO(both.read_text(encoding="utf-8"))))
    rows[0]["too_general"] = "1"
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    both.write_text(buf.getvalue(), encoding="utf-8")
    with pytest.raises(UserError, match=r"a\.csv:2: .*correct.*too_general"):
        score_files([both])


def test_cohen_kappa_against_a_hand_computed_value() -> None:
    a = [True] * 6 + [False] * 4
    b = [True] * 5 + [False] * 4 + [True]
    # p_o = 8/10; p_e = 0.6*0.6 + 0.4*0.4 = 0.52; kappa = (0.8 - 0.52) / 0.48
    assert cohen_kappa(a, b) == pytest.approx(0.28 / 0.48, abs=1e-12)
    assert cohen_kappa(a, a) == 1.0
    assert cohen_kappa([True] * 3, [True] * 3) is None  # every verdict the same: chance agreement is 1
    from sklearn.metrics import cohen_kappa_score

    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_fleiss_kappa_against_a_hand_computed_value() -> None:
    # 4 pairs, 3 annotators; correct votes per pair 3, 0, 2, 1: P_i = 1, 1, 1/3, 1/3 (mean 2/3); p = 0.5, 0.5:
    # P_e = 0.5; kappa = (2/3 - 0.5) / 0.5 = 1/3
    ratings = [[True, True, True], [False, False, False], [True, True, False], [True, False, False]]
    assert fleiss_kappa(ratings) == pytest.approx(1 / 3, abs=1e-12)
    assert fleiss_kappa([[True, True]] * 3) is None


def test_several_annotators_are_a_majority_vote_with_their_agreement(tmp_path: Path) -> None:
    blank, _ = write_sample(_pairs(4), tmp_path / "audit.csv")
    files = [_annotate(blank, tmp_path / f"a{i}.csv", v) for i, v in enumerate(
        [[True, True, True, False], [True, False, True, False], [True, True, False, False]])]
    score = score_files(files)
    assert score.annotators == 3 and score.overall.pairs == 4 and score.overall.correct == 3  # pairs 0, 1, 2
    assert score.agreement is not None and score.agreement.method == "Fleiss' kappa"
    assert score.agreement.kappa == pytest.approx(fleiss_kappa(
        [[True, True, True], [True, False, True], [True, True, False], [False, False, False]]), abs=1e-4)
    assert score.agreement.pairs == 4 and score.procedure == "majority vote of 3 annotators"
    two = score_files(files[:2])
    assert two.agreement is not None and two.agreement.method == "Cohen's kappa"
    assert two.agreement.kappa == pytest.approx(cohen_kappa([True, True, True, False], [True, False, True, False]),
                                                abs=1e-4)


def test_a_single_annotator_is_labelled_as_such(tmp_path: Path) -> None:
    blank, _ = write_sample(_pairs(4), tmp_path / "audit.csv")
    score = score_files([_annotate(blank, tmp_path / "a.csv", [True, True, True, False])])
    assert score.annotators == 1 and score.agreement is None
    assert score.procedure == "single annotator (no majority vote, no agreement)"
    assert score.overall.precision == 0.75


def test_the_form_has_a_correct_verdict_per_pair(tmp_path: Path) -> None:
    _, html = write_sample(_pairs(2), tmp_path / "audit.csv")
    page = html.read_text(encoding="utf-8")
    assert page.count('data-c="correct"') == 2 and set(CRITERIA) <= set(page.split('"'))


def test_wilson_interval_and_per_language_scores(tmp_path: Path) -> None:
    from clkt.snapshots.audit import rejected, wilson

    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(5, 10)
    assert round(low, 4) == 0.2366 and round(high, 4) == 0.7634
    assert wilson(10, 10)[1] == 1.0 and wilson(0, 10)[0] == 0.0
    pairs = _pairs(4) + [AuditPair(snapshot_id="snap1", language="ja", domain="music", qid=i, entity="e", document="d",
                                   question="q", options=["a", "b", "c", "d"], answer="a") for i in range(2)]
    blank, _ = write_sample(pairs, tmp_path / "audit.csv")
    one = _annotate(blank, tmp_path / "one.csv", [True, True, True, True, False, True])
    score = score_files([one])
    assert set(score.languages) == {"en", "ja"}
    ja = score.languages["ja"]
    assert (ja.pairs, ja.correct, ja.annotators, ja.agreement) == (2, 1, 1, None)
    assert score.languages["en"].precision == 1.0 and score.ci_method.startswith("Wilson")
    assert rejected([one]) == ("snap1", [("ja", 0)])
    text = one.read_text(encoding="utf-8").replace("snap1:ja:0,", "snap1:ja:zero,")
    (tmp_path / "odd.csv").write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match="does not end in a question id"):
        rejected([tmp_path / "odd.csv"])
