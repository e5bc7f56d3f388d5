"""The re-run's verdict (`clkt.packs.verdict`): questions drawn from a fresh nonce, every cell and figure compared on
its own. A pack honest only on the questions its own sha256 would have drawn (the old rule) is not reproduced; a lie
in one cell is named even where a pooled agreement over every answer would pass."""

from __future__ import annotations

import hashlib

import pytest

from clkt.errors import UserError
from clkt.packs import verdict
from clkt.packs.format import PredictionRow
from clkt.packs.verdict import AnswerKey, draw, judge, new_nonce

QIDS = list(range(1000, 1040))
LANGS = ["en", "fr", "ja", "zh", "es"]
KEY = {(q, lang): "ABCD"[q % 4] for q in QIDS for lang in LANGS}


def _rerun() -> list[PredictionRow]:
    """An honest re-run: the base model right on a quarter of the questions, the injected one on three quarters."""
    out = []
    for variant in ("base", "injected"):
        for lang in LANGS:
            for q in QIDS:
                right = q % 4 == 0 if variant == "base" else q % 4 != 3
                letter = KEY[(q, lang)] if right else "ABCD"[(q + 1) % 4]
                out.append(PredictionRow(train_lang="en", scorer="option-loglik", variant=variant, lang=lang, qid=q,
                                         entity_id=q, domain="movies", predicted=letter, correct=right))
    return out


def _answers(rows: list[PredictionRow]) -> dict[AnswerKey, str | None]:
    return {(r.train_lang, r.scorer, r.variant, r.lang, r.qid): r.predicted for r in rows}


def _invented(rows: list[PredictionRow], honest_on: set[int], *, lang: str | None = None) -> dict[AnswerKey, str | None]:
    """The rows' answers with every injected letter outside `honest_on` made right (in `lang`, or every language)."""
    out = _answers(rows)
    for k in out:
        if k[2] == "injected" and k[4] not in honest_on and lang in (None, k[3]):
            out[k] = KEY[(k[4], k[3])]
    return out


def _made_up(rows: list[PredictionRow], honest_on: set[int]) -> dict[AnswerKey, str | None]:
    """The rows' answers with every injected letter outside `honest_on` another one (letters not from the model)."""
    out = _answers(rows)
    for k, letter in out.items():
        if k[2] == "injected" and k[4] not in honest_on:
            out[k] = "ABCD"[("ABCD".index(letter or "A") + 1) % 4]
    return out


def test_the_draw_is_repeatable_from_its_nonce_and_fresh_each_time() -> None:
    n = new_nonce()
    assert draw(QIDS, 5, nonce=n) == draw(reversed(QIDS), 5, nonce=n) and len(draw(QIDS, 5, nonce=n)) == 5
    assert len({tuple(draw(QIDS, 5, nonce=new_nonce())) for _ in range(5)}) > 1
    assert draw(QIDS, None, nonce=n) == QIDS == draw(QIDS, 99, nonce=n)
    with pytest.raises(UserError, match="a number of questions above 0"):
        draw(QIDS, 0, nonce=n)


def test_a_pack_honest_only_on_its_own_hash_draw_is_not_reproduced() -> None:
    rerun = _rerun()
    sha = hashlib.sha256(b"the pack's manifest").hexdigest()
    aimed = set(draw(QIDS, 5, nonce=sha))  # what the old rule (the pack's sha256 as the seed) would have compared
    pack = _made_up(rerun, aimed)
    old = judge(pack, rerun, QIDS, 5, nonce=sha, key=KEY, languages=LANGS)
    assert old.reproduced  # the lie passes where the submitter knows the draw
    for _ in range(3):
        v = judge(pack, rerun, QIDS, 5, nonce=new_nonce(), key=KEY, languages=LANGS)
        assert not v.reproduced and v.failed is not None and v.failed.startswith("cell (en, option-loglik, injected, ")
        assert len(v.nonce) == 32 and set(v.questions) != aimed


def test_a_lie_in_one_cell_is_named_where_pooled_agreement_would_pass() -> None:
    rerun = _rerun()
    pack = _invented(rerun, set(), lang="ja")  # the injected model's letters in ja invented: 10 of 400 answers
    v = judge(pack, rerun, QIDS, None, nonce=new_nonce(), key=KEY, languages=LANGS)
    assert v.agreed / v.checked >= 0.95  # what the pooled agreement (threshold 0.95) called reproduced
    assert not v.reproduced and v.failed == "cell (en, option-loglik, injected, ja): 30/40 letters agree (at least 95% needed)"
    assert [c.lang for c in v.cells if not c.passed] == ["ja"] and len(v.cells) == 10


def test_the_figures_must_agree_within_the_tolerance(monkeypatch: pytest.MonkeyPatch) -> None:
    rerun = _rerun()
    assert judge(_answers(rerun), rerun, QIDS, None, nonce="n", key=KEY, languages=LANGS).reproduced
    monkeypatch.setattr(verdict, "CELL_AGREEMENT", 0.5)  # the cells pass; only the figures can fail
    pack = _invented(rerun, set(QIDS[:30]))  # the injected model right on 10 more questions in every language
    v = judge(pack, rerun, QIDS, None, nonce="n", key=KEY, languages=LANGS)
    assert all(c.passed for c in v.cells) and not v.reproduced
    assert v.failed is not None and "(tolerance 0.05)" in v.failed and v.deltas["option-loglik overall"] > 0.05


def test_an_answer_the_rerun_lacks_disagrees() -> None:
    rerun = _rerun()
    v = judge(_answers(rerun), [r for r in rerun if r.lang != "zh"], QIDS, None, nonce="n", key=KEY, languages=LANGS)
    assert not v.reproduced and v.failed is not None and "zh): 0/40" in v.failed


def _open(said: dict[int, str], *, variant: str = "injected") -> dict[AnswerKey, str]:
    """Open answers' normaliser verdicts by answer, one per question in en and fr."""
    return {("en", "open-normaliser", variant, lang, q): v for q, v in said.items() for lang in ("en", "fr")}


def test_open_answers_are_judged_by_their_verdicts_not_their_strings() -> None:
    """Two different wrong answers (the pack's "Oslo", the re-run's "Berlin") are both INCORRECT: they agree; the
    verdicts of every drawn question are compared cell by cell at the letters' threshold."""
    rerun = _open({q: "INCORRECT" if q % 2 else "CORRECT" for q in QIDS})
    v = verdict.judge_open(dict(rerun), rerun, QIDS, 10, nonce="n1")
    assert v.reproduced and (v.agreed, v.checked, len(v.cells)) == (20, 20, 2)
    assert v.questions == draw(QIDS, 10, nonce="n1") and {c.scorer for c in v.cells} == {"open-normaliser"}


def test_open_answers_with_flipped_verdicts_fail_the_cell_they_are_in() -> None:
    rerun = _open({q: "INCORRECT" for q in QIDS})
    lie = {**rerun, **{k: "CORRECT" for k in rerun if k[3] == "fr" and k[4] % 4 == 0}}  # a quarter of fr made right
    v = verdict.judge_open(lie, rerun, QIDS, None, nonce="n2")
    assert not v.reproduced and v.failed == (f"cell (en, open-normaliser, injected, fr): 30/40 open verdicts agree "
                                             f"(at least {verdict.CELL_AGREEMENT:.0%} needed)")
    assert [c.passed for c in v.cells] == [True, False]  # en holds, fr does not
    missing = verdict.judge_open(rerun, {}, QIDS, 5, nonce="n3")  # an answer the re-run lacks disagrees
    assert not missing.reproduced and missing.agreed == 0 and missing.checked == 10
    assert verdict.judge_open({}, rerun, QIDS, 5, nonce="n4").failed == "no open verdict of the pack's was compared"
