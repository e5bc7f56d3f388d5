"""The in-context short answers' pairs (`clkt.report.incontext_open`): per ordered pair (document language c, test
language L ≠ c) the contingency of each question answered in c and in L with the c document, Overall and Transfer
with n and intervals over entities, their means over the pairs; built by the in-context multiple-choice section's own
builder, so the same answers give the same figures in both."""

from __future__ import annotations

import json

import pytest

from clkt.report.incontext import incontext_results
from clkt.report.incontext_open import INCONTEXT_OPEN_TITLE, incontext_open_lines, incontext_open_results
from clkt.report.metric_table import MIN_CELL_N
from storage.incontext import NO_CONTEXT, InContextRecord
from storage.incontext_open import InContextOpenRecord

LANGS = ["en", "fr", "ja"]


def _rec(q: int, c: str, lang: str, verdict: str, *, entity: int | None = None, other: bool = False,
         status: str = "answered", target: str = "t") -> InContextOpenRecord:
    return InContextOpenRecord(snapshot_id="s", target=target, open_qid=q, entity_id=q // 2 if entity is None else entity,
                               context_lang=c, lang=lang, status=status, verdict=verdict, other_language=other,
                               answer_lang="en" if other else lang)


def _ok(right: bool) -> str:
    return "CORRECT" if right else "INCORRECT"


def _records() -> list[InContextOpenRecord]:
    """12 questions of 6 entities (q // 2).

    - en document: right in en on q < 10; in fr on q < 6 and q = 10 (q = 11 not attempted); in ja asked on q < 4 only,
      all right. So (en, fr): A 6 (q 0-5), B 4 (q 6-9), C 1 (q 10), D 1 (q 11); (en, ja): A 4.
    - fr document: every fr answer is in English (INCORRECT, counted apart); every en answer right: (fr, en): C 12.
      No ja answer with the fr document: (fr, ja) is missing.
    - the floor (no document) in every language, right: in no pair.
    - left out of every pair: q 12's fr answer unscorable (its en one right), q 13 skipped in fr.
    """
    out: list[InContextOpenRecord] = []
    for q in range(12):
        out += [_rec(q, "en", "en", _ok(q < 10)),
                _rec(q, "en", "fr", "NOT_ATTEMPTED" if q == 11 else _ok(q < 6 or q == 10)),
                _rec(q, "fr", "fr", "INCORRECT", other=True), _rec(q, "fr", "en", "CORRECT"),
                *(_rec(q, NO_CONTEXT, lang, "CORRECT") for lang in LANGS)]
        if q < 4:
            out.append(_rec(q, "en", "ja", "CORRECT"))
    out += [_rec(12, "en", "en", "CORRECT", entity=1), _rec(12, "en", "fr", "UNSCORABLE", entity=1),
            _rec(13, "en", "en", "CORRECT", entity=2), _rec(13, "en", "fr", "", entity=2, status="skipped")]
    return out


def test_the_pairs_contingencies_overall_and_transfer_are_the_hand_counted_ones() -> None:
    [t] = incontext_open_results(_records(), languages=LANGS, snapshot_id="s")
    pairs = {(p.context_lang, p.test_lang): p for p in t.pairs}
    assert list(pairs) == [("en", "fr"), ("en", "ja"), ("fr", "en"), ("fr", "ja")]  # c ≠ L, the snapshot's order
    en_fr = pairs[("en", "fr")]
    assert (en_fr.table.a, en_fr.table.b, en_fr.table.c, en_fr.table.d, en_fr.entities) == (6, 4, 1, 1, 6)
    assert (en_fr.overall.value, en_fr.overall.n, en_fr.overall.reading) == (6 / 12, 12, "ok")
    assert (en_fr.transfer.value, en_fr.transfer.n, en_fr.transfer.reading) == (6 / 10, 10, "ok")  # = MIN_CELL_N
    for f in (en_fr.overall, en_fr.transfer):
        assert f.ci is not None and f.value is not None and f.ci[0] <= f.value <= f.ci[1] and f.ci[0] < f.ci[1]
    # 4 questions: counted, too few to show
    en_ja = pairs[("en", "ja")]
    assert (en_ja.table.a, en_ja.table.b, en_ja.table.c, en_ja.table.d) == (4, 0, 0, 0)
    assert en_ja.overall.value is None and en_ja.overall.reading == "too few" and en_ja.overall.n == 4
    assert en_ja.transfer.value is None and en_ja.transfer.reading == "too few" and en_ja.transfer.ci is None
    assert pairs[("fr", "ja")].overall.reading == pairs[("fr", "ja")].transfer.reading == "missing"
    # the means over the pairs with a value, too-few pairs included (as the multiple-choice section's)
    assert t.overall.value == pytest.approx((0.5 + 1.0 + 0.0) / 3) and t.overall.n == 12 + 4 + 12
    assert t.transfer.value == pytest.approx((0.6 + 1.0) / 2) and t.transfer.n == 10 + 4
    assert t.transfer.std == pytest.approx(0.2) and t.overall.reading == t.transfer.reading == "ok"
    assert t.transfer.ci is not None and t.transfer.ci[0] <= 0.8 <= t.transfer.ci[1]
    assert t.unscorable == 1 and t.skipped == 1  # counted, in no figure


def test_answers_all_in_another_language_are_wrong_in_every_pair_they_are_in() -> None:
    [t] = incontext_open_results(_records(), languages=LANGS, snapshot_id="s")
    fr_en = next(p for p in t.pairs if (p.context_lang, p.test_lang) == ("fr", "en"))
    # every fr answer (in English) wrong, every en answer right: C only
    assert (fr_en.table.a, fr_en.table.b, fr_en.table.c, fr_en.table.d) == (0, 0, 12, 0)
    assert fr_en.other_language == 12 and fr_en.overall.value == 0.0 and fr_en.overall.reading == "ok"
    assert fr_en.transfer.value is None and fr_en.transfer.reading == "undefined" and fr_en.transfer.n == 0
    [fr_fr] = [c for c in t.cells if (c.context_lang, c.lang) == ("fr", "fr")]
    assert (fr_fr.n, fr_fr.correct, fr_fr.other_language, fr_fr.accuracy) == (12, 0, 12, 0.0)
    assert next(p for p in t.pairs if p.test_lang == "fr").other_language == 0  # the en answers in fr were in fr


def test_the_figures_are_the_multiple_choice_builders_on_the_same_answers() -> None:
    """The same right/wrong answers as in-context MCQ records give the same pairs, means and intervals."""
    graded = [r for r in _records() if r.verdict in {"CORRECT", "INCORRECT", "NOT_ATTEMPTED"}]
    mcq = [InContextRecord(snapshot_id="s", target="t", qid=r.open_qid, entity_id=r.entity_id, context_lang=r.context_lang,
                           lang=r.lang, status="answered", letter="A", correct=r.correct, truncated=False) for r in graded]
    [o] = incontext_open_results(_records(), languages=LANGS, snapshot_id="s", seed=3)
    [m] = incontext_results(mcq, languages=LANGS, snapshot_id="s", seed=3)
    assert [p.table for p in o.pairs] == [p.table for p in m.pairs]
    for op, mp in zip(o.pairs, m.pairs, strict=True):  # where the open one shows a value, it is the MCQ pair's
        assert op.overall.value in (None, mp.overall) and op.transfer.value in (None, mp.transfer)
    assert sum(p.overall.value is not None for p in o.pairs) == 2  # (en, fr) and (fr, en): not vacuous
    assert (o.overall.value, o.overall.ci, o.overall.std) == (m.overall.mean, m.overall.ci, m.overall.std)
    assert (o.transfer.value, o.transfer.ci, o.transfer.std) == (m.transfer.mean, m.transfer.ci, m.transfer.std)


def test_too_few_answers_or_one_entity_show_no_value() -> None:
    # 3 questions: every pair and both means too few; 12 questions of one entity: enough answers, one entity
    few = [_rec(q, c, lang, "CORRECT", target="few") for q in range(3) for c in ("en", "fr") for lang in ("en", "fr")]
    one = [_rec(q, c, lang, _ok(lang == c or q % 3 != 0), entity=7, target="one")
           for q in range(12) for c in ("en", "fr") for lang in ("en", "fr")]
    targets = incontext_open_results(few + one, languages=["en", "fr"], snapshot_id="s")
    assert [t.target for t in targets] == ["few", "one"]
    for t in targets:
        figures = [t.overall, t.transfer, *(f for p in t.pairs for f in (p.overall, p.transfer))]
        assert len(t.pairs) == 2 and all(f.value is None and f.ci is None and f.reading == "too few" for f in figures)
        assert all(c.too_few for c in t.cells)
    few_t, one_t = targets
    assert few_t.transfer.n == 6 < MIN_CELL_N and few_t.pairs[0].transfer.n == 3
    assert one_t.pairs[0].transfer.n == 12 >= MIN_CELL_N and one_t.pairs[0].entities == 1 and one_t.transfer.n == 24
    md = "\n".join(incontext_open_lines(targets))
    assert "| too few (n 3) |" in md and "too few (n 24, 2 pairs)" in md


def test_the_section_and_the_json_show_one_number_per_figure() -> None:
    targets = incontext_open_results(_records(), languages=LANGS, snapshot_id="s")
    md = incontext_open_lines(targets)
    dumped = json.loads(json.dumps([t.model_dump(mode="json") for t in targets]))
    [t] = dumped
    assert md[0] == f"## {INCONTEXT_OPEN_TITLE}"
    for p in t["pairs"]:
        a, b, c, d = (p["table"][x] for x in "abcd")
        [row] = [line for line in md if line.startswith(f"| {p['context_lang']} | {p['test_lang']} | {a} | {b} | {c} | {d} |")]
        for key in ("overall", "transfer"):
            f = p[key]
            shown = (f"{100 * f['value']:.1f} [{100 * f['ci'][0]:.1f}, {100 * f['ci'][1]:.1f}] (n {f['n']})"
                     if f["reading"] == "ok" else {"missing": "–", "undefined": "undefined"}.get(f["reading"], f"too few (n {f['n']})"))
            assert f"| {shown} |" in row
    ov, tr = t["overall"], t["transfer"]
    summary = next(line for line in md if line.startswith("Overall "))
    assert (f"Overall {100 * ov['value']:.1f} ± {100 * ov['std']:.1f} [{100 * ov['ci'][0]:.1f}, {100 * ov['ci'][1]:.1f}]"
            f" (n {ov['n']}, 3 pairs), Transfer {100 * tr['value']:.1f}") in summary and "(n 14, 2 pairs)" in summary
    assert [type(t).model_validate(d) for t, d in zip(targets, dumped, strict=True)] == targets  # read back whole


def test_without_draws_the_pairs_keep_their_values_and_have_no_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("clkt.report.incontext_open.BOOTSTRAP_SAMPLES", 0)
    [t] = incontext_open_results(_records(), languages=LANGS, snapshot_id="s")
    en_fr = t.pairs[0]
    assert (en_fr.overall.value, en_fr.overall.ci, t.transfer.ci) == (0.5, None, None)
    assert t.transfer.value == pytest.approx(0.8)
