"""The two scorers on the embedded Gemma: padding-safe batching, and agreement where generation emits a letter."""

from __future__ import annotations

from pathlib import Path

import pytest

from clkt.config import EMBEDDED_TARGET
from clkt.evaluate.parse import parse_letter
from clkt.evaluate.prompts import mcq_text
from clkt.evaluate.scorers import letter_token_ids, score_generate, score_letter_logprob
from clkt.targets import cached_target
from clkt.targets.prompting import RenderedPrompt

SHOT = mcq_text("What colour is the sky on a clear day?", ["Green", "Blue", "Red", "Black"], "en") + " B\n\n"
QUESTIONS = [
    ("What is the capital of France?", ["Berlin", "Paris", "Rome", "Madrid"], "en"),
    ("How many legs does a spider have?", ["Six", "Ten", "Four", "Eight"], "en"),
    ("Quelle est la capitale de l'Italie ?", ["Rome", "Lyon", "Oslo", "Lima"], "fr"),
    ("Which planet is known as the red planet?", ["Venus", "Jupiter", "Mars", "Saturn"], "en"),
    ("¿Cuál es la capital de España?", ["Lisboa", "Madrid", "París", "Roma"], "es"),
]


@pytest.mark.slow
def test_letter_logprob_batching_and_agreement_with_generate(models_data_dir: Path) -> None:
    model, tok = cached_target(EMBEDDED_TARGET, data_dir=models_data_dir)
    # one-shot prompts: the base model then answers with a letter token right away
    prompts = [RenderedPrompt(SHOT + mcq_text(q, o, lang), True) for q, o, lang in QUESTIONS]
    batched = score_letter_logprob(model, tok, prompts, batch_size=5)
    alone = [score_letter_logprob(model, tok, [p], batch_size=1)[0] for p in prompts]
    assert [s.predicted for s in batched] == [s.predicted for s in alone]
    for b, a in zip(batched, alone, strict=True):  # left padding + position ids: same scores
        vb = [float(x.split("=")[1]) for x in b.raw.split()]
        va = [float(x.split("=")[1]) for x in a.raw.split()]
        assert vb == pytest.approx(va, abs=2e-3)
    gen = score_generate(model, tok, prompts, batch_size=5, max_new_tokens=2)
    letter_ids = {t for ids in letter_token_ids(tok) for t in ids}
    agreeing = 0
    for p, g, lp in zip(prompts, gen, batched, strict=True):
        first = tok(p.text + g.raw, add_special_tokens=True)["input_ids"][len(tok(p.text)["input_ids"])]
        if first in letter_ids:  # greedy emitted a letter first: both scorers must name the same letter
            assert g.predicted == lp.predicted, (g.raw, lp.raw)
            agreeing += 1
    assert agreeing >= 3

    # generation stops once the letter is decided: a prefix of the full completion, parsed the same, never longer
    full = score_generate(model, tok, prompts, batch_size=5, max_new_tokens=12, stop_early=False)
    for mode in ("strict", "reference"):
        stopped = score_generate(model, tok, prompts, batch_size=5, max_new_tokens=12, parse=mode)
        for f, st in zip(full, stopped, strict=True):
            assert f.raw.startswith(st.raw.rstrip("\ufffd")) and st.predicted == parse_letter(f.raw, mode), (mode, f.raw, st.raw)
        assert sum(len(st.raw) for st in stopped) < sum(len(f.raw) for f in full)


def test_the_scorer_follows_the_kind_and_can_be_set_per_target() -> None:
    from clkt.config import GpuSettings, TargetSettings
    from clkt.evaluate.scorers import scorers_for, selection_scorer

    base = TargetSettings(name="b", model="x", kind="base")
    inst = TargetSettings(name="i", model="y", kind="instruct")
    gpu = GpuSettings()
    assert scorers_for(base, gpu) == ["option-loglik"]
    assert scorers_for(inst, gpu) == ["generate"]
    assert scorers_for(inst.model_copy(update={"scorers": ["option-loglik", "generate"]}), gpu) == ["option-loglik", "generate"]
    assert scorers_for(base, GpuSettings(scorers=["letter-logprob"])) == ["letter-logprob"]  # [gpu] for every target
    own = base.model_copy(update={"scorers": ["generate"]})
    assert scorers_for(own, GpuSettings(scorers=["letter-logprob"])) == ["generate"]  # the target's own wins
    assert selection_scorer(["generate", "option-loglik"]) == "option-loglik"
    assert selection_scorer(["generate", "letter-logprob"]) == "letter-logprob"
    assert selection_scorer(["generate"]) == "generate"


def test_an_unknown_scorer_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    from clkt.config import load_settings
    from clkt.errors import ConfigError

    cfg = tmp_path / "c.toml"
    cfg.write_text('[[spec.targets]]\nname = "t"\nmodel = "m"\nscorers = ["loglik"]\n')
    with pytest.raises(ConfigError) as e:
        load_settings(cfg, environ={})
    assert "spec.targets.0.scorers" in str(e.value)
    cfg.write_text('[gpu]\nparse = "loose"\n')
    with pytest.raises(ConfigError) as e:
        load_settings(cfg, environ={})
    assert "gpu.parse" in str(e.value)
