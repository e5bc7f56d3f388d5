"""`option-loglik` on the embedded Gemma: the shared-prefix computation equals the whole-sequence one."""

from __future__ import annotations

from pathlib import Path

import pytest

from clkt.config import EMBEDDED_TARGET
from clkt.evaluate.loglik import loglik_item, score_option_loglik
from clkt.targets import cached_target

QUESTIONS = [
    ("What is the capital of France?", ["Berlin", "Paris", "Rome", "Madrid"], "en"),
    ("How many legs does a spider have?", ["Six", "Ten", "Four", "Eight legs in total, as every spider has"], "en"),
    ("Quelle est la capitale de l'Italie ?", ["Rome", "Lyon", "Oslo", "Lima"], "fr"),
    ("¿Cuál es la capital de España?", ["Lisboa", "Madrid", "París", "Roma"], "es"),
    ("日本の首都はどこですか？", ["大阪", "東京", "京都", "名古屋"], "ja"),
]


def test_an_item_needs_four_options() -> None:
    with pytest.raises(ValueError, match="exactly 4 options"):
        loglik_item(EMBEDDED_TARGET, None, "q?", ["a", "b"], "en")


@pytest.mark.slow
def test_shared_prefix_equals_whole_sequences_and_batching_changes_nothing(models_data_dir: Path) -> None:
    model, tok = cached_target(EMBEDDED_TARGET, data_dir=models_data_dir)
    items = [loglik_item(EMBEDDED_TARGET, tok, q, o, lang) for q, o, lang in QUESTIONS]
    shared = score_option_loglik(model, tok, items, batch_size=5)
    whole = score_option_loglik(model, tok, items, batch_size=5, share_prefix=False)
    alone = [score_option_loglik(model, tok, [it], batch_size=1, share_prefix=False)[0] for it in items]
    for s, w, a in zip(shared, whole, alone, strict=True):
        assert s.logliks == pytest.approx(w.logliks, abs=2e-3)
        assert s.logliks == pytest.approx(a.logliks, abs=2e-3)
        assert all(v < 0 for v in s.logliks)
        assert s.acc == max(zip(s.logliks, "ABCD", strict=True))[1]
    # a 270M base model knows these; the long 4th option of the spider question loses on the sum
    assert [s.acc for s in shared[:1]] == ["B"]
    spider = shared[1]
    norm = [v / n for v, n in zip(spider.logliks, items[1].lengths, strict=True)]
    assert spider.acc_norm == "ABCD"[norm.index(max(norm))]
    assert spider.logliks[3] == min(spider.logliks)
    assert "A=" in shared[0].raw and "D=" in shared[0].raw


@pytest.mark.slow
def test_a_model_whose_logits_are_not_its_head_alone_runs_the_continuation_whole(models_data_dir: Path) -> None:
    """The output head runs only at the option positions when it alone gives the model's logits; a model that
    soft-caps them (Gemma 2's `final_logit_softcapping`) fails the check and gets the whole logits: its numbers
    are the whole-sequence computation's, not the uncapped head's."""
    model, tok = cached_target(EMBEDDED_TARGET, data_dir=models_data_dir)
    items = [loglik_item(EMBEDDED_TARGET, tok, q, o, lang) for q, o, lang in QUESTIONS]
    plain = score_option_loglik(model, tok, items, batch_size=5)
    model.config.final_logit_softcapping = 2.0  # logits in (-2, 2): far from the head's
    try:
        capped = score_option_loglik(model, tok, items, batch_size=5)
        whole = score_option_loglik(model, tok, items, batch_size=5, share_prefix=False)
    finally:
        model.config.final_logit_softcapping = None
    for c, w, p in zip(capped, whole, plain, strict=True):
        assert c.logliks == pytest.approx(w.logliks, abs=2e-3)
        assert c.logliks != pytest.approx(p.logliks, abs=0.5)
