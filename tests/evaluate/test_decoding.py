"""Continuous generation gives the tokens the static batches give: on tiny random models (fast), then on the
demo's questions with the embedded instruct target (slow); out of memory halves the batch and loses no row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from clkt.config import TargetSettings
from clkt.evaluate.decoding import MIN_SHARED_PREFIX, PREFILL_AHEAD, prefix_groups, supports_continuous
from clkt.evaluate.memory import BatchSizer, OutOfMemory
from clkt.evaluate.scorers import score_generate
from clkt.targets.prompting import RenderedPrompt
from tests.evaluate._tiny import WORDS, prompts, tiny_model, tiny_tokenizer

REPO = Path(__file__).resolve().parents[2]


def _rendered(texts: list[str]) -> list[RenderedPrompt]:
    return [RenderedPrompt(t, True) for t in texts]


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
@pytest.mark.parametrize("parse", ["strict", "reference"])
@pytest.mark.parametrize("batch", [1, 3, 8])
def test_continuous_matches_static_batches(kind: str, parse: str, batch: int) -> None:
    torch.set_num_threads(1)
    model, tok = tiny_model(kind, seed=batch), tiny_tokenizer()
    ps = _rendered(prompts(21, seed=batch))
    assert supports_continuous(model, longest=40)
    static = score_generate(model, tok, ps, batch_size=batch, max_new_tokens=12, parse=parse, continuous=False)  # type: ignore[arg-type]
    cont = score_generate(model, tok, ps, batch_size=batch, max_new_tokens=12, parse=parse, continuous=True)  # type: ignore[arg-type]
    assert [c.raw for c in cont] == [s.raw for s in static]
    assert [c.predicted for c in cont] == [s.predicted for s in static]
    assert len({len(s.raw.split()) for s in static}) > 1  # rows really did stop at different lengths


def test_a_sliding_window_shorter_than_the_rows_falls_back_to_static_batches() -> None:
    model = tiny_model("gemma3", sliding_window=16)
    assert not supports_continuous(model, longest=40)
    tok = tiny_tokenizer()
    ps = _rendered(prompts(6, seed=3))
    a = score_generate(model, tok, ps, batch_size=4, max_new_tokens=8, continuous=True)
    b = score_generate(model, tok, ps, batch_size=4, max_new_tokens=8, continuous=False)
    assert [x.raw for x in a] == [x.raw for x in b]


def test_generation_settings_beyond_the_argmax_fall_back_to_static_batches() -> None:
    model = tiny_model()
    model.generation_config.repetition_penalty = 1.3
    assert not supports_continuous(model, longest=10)


class _OomAbove:
    """The tiny model, raising CUDA's out-of-memory error for any forward pass over more than `limit` rows."""

    def __init__(self, model: Any, limit: int) -> None:
        self.model, self.limit, self.ooms = model, limit, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def __call__(self, **kw: Any) -> Any:
        if kw["input_ids"].shape[0] > self.limit:
            self.ooms += 1
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.model(**kw)

    def generate(self, **kw: Any) -> Any:
        if kw["input_ids"].shape[0] > self.limit:
            self.ooms += 1
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.model.generate(**kw)


@pytest.mark.parametrize("continuous", [True, False])
def test_out_of_memory_halves_an_automatic_batch_and_keeps_every_row(continuous: bool) -> None:
    model, tok = tiny_model(seed=5), tiny_tokenizer()
    ps = _rendered(prompts(17, seed=5))
    want = score_generate(model, tok, ps, batch_size=2, max_new_tokens=10, continuous=False)
    flaky = _OomAbove(model, limit=2)
    sizer = BatchSizer(size=8, automatic=True, name="generate")
    got = score_generate(flaky, tok, ps, max_new_tokens=10, continuous=continuous, sizer=sizer)
    assert [g.raw for g in got] == [w.raw for w in want]
    assert sizer.settled == 2 and sizer.halvings == 2 and flaky.ooms >= 2


def test_out_of_memory_at_a_configured_batch_raises_for_the_job_to_retry() -> None:
    model, tok = tiny_model(seed=6), tiny_tokenizer()
    flaky = _OomAbove(model, limit=2)
    with pytest.raises(OutOfMemory) as err:
        score_generate(flaky, tok, _rendered(prompts(9, seed=6)), batch_size=4, max_new_tokens=6)
    assert err.value.where == "eval" and err.value.batch_size == 4


class _Prefills:
    """A model that records the shape of its prefill passes (more than one new token per row)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.shapes: list[tuple[int, ...]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def __call__(self, **kw: Any) -> Any:
        if kw["input_ids"].shape[1] > 1:
            self.shapes.append(tuple(kw["input_ids"].shape))
        return self.model(**kw)


def test_prompts_are_prefilled_ahead_in_groups() -> None:
    """A row that leaves is replaced by a prompt prefilled ahead: fewer prefill passes than prompts, every prompt
    prefilled once, and the same tokens as static batches."""
    torch.set_num_threads(1)
    model, tok = tiny_model(seed=9), tiny_tokenizer()
    ps = _rendered(prompts(21, seed=9))
    counting = _Prefills(model)
    got = score_generate(counting, tok, ps, batch_size=3, max_new_tokens=12, continuous=True)
    want = score_generate(model, tok, ps, batch_size=3, max_new_tokens=12, continuous=False)
    assert [g.raw for g in got] == [w.raw for w in want]
    assert sum(r for r, _ in counting.shapes) == 21  # every prompt prefilled once
    assert len(counting.shapes) <= -(-21 // min(PREFILL_AHEAD, 3)) + 1 < 21


def test_prompts_are_grouped_by_the_first_tokens_they_share() -> None:
    a, b = list(range(100, 120)), list(range(200, 220))  # two 20-token headers
    enc = [[*a, 1, 2, 3], [*b, 5], [*a, 4], [*a, 1, 2], [7, 8, 9], [*b, 6, 7], [*a[:10], 9]]
    groups = prefix_groups(enc)
    assert sorted(i for _, members in groups for i in members) == list(range(len(enc)))  # each prompt once
    assert groups == [(20, [2, 3, 0]), (20, [1, 5]), (0, [4, 6])]  # the unshared together, shortest first
    assert prefix_groups([a, a]) == [(19, [0, 1])]  # identical prompts: each keeps a token of its own
    assert prefix_groups([[*a[:10], 1], [*a[:10], 2]]) == [(0, [0, 1])]  # under MIN_SHARED_PREFIX: not shared
    assert MIN_SHARED_PREFIX > 10
    # a prompt that would shrink a group's prefix more than it saves starts a group of its own
    c = list(range(300, 340))
    assert prefix_groups([[*c, 1], [*c, 2], [*c[:18], 999]]) == [(40, [0, 1]), (0, [2])]
    assert prefix_groups([]) == []


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
@pytest.mark.parametrize("batch", [1, 3, 8])
def test_shared_prefixes_run_once_and_give_the_tokens_of_static_batches(kind: str, batch: int) -> None:
    torch.set_num_threads(1)
    import random

    rng = random.Random(batch)
    heads = [" ".join(rng.choice(WORDS[4:25]) for _ in range(18)) for _ in range(2)]
    texts = [f"{heads[i % 2]} {t}" for i, t in enumerate(prompts(21, seed=batch))]
    ps = _rendered(texts)
    model, tok = tiny_model(kind, seed=batch + 20), tiny_tokenizer()
    static = score_generate(model, tok, ps, batch_size=batch, max_new_tokens=12, continuous=False)
    counting = _Prefills(model)
    shared = score_generate(counting, tok, ps, batch_size=batch, max_new_tokens=12, continuous=True)
    plain = _Prefills(model)
    unshared = score_generate(plain, tok, ps, batch_size=batch, max_new_tokens=12, continuous=True, share_prefixes=False)
    assert [c.raw for c in shared] == [s.raw for s in static] == [u.raw for u in unshared]
    assert len({len(s.raw.split()) for s in static}) > 1  # rows really did stop at different lengths
    heads_run = [sh for sh in counting.shapes if sh[0] == 1 and sh[1] >= MIN_SHARED_PREFIX]
    assert len(heads_run) == 2  # each header once
    assert sum(r for r, _ in counting.shapes) - len(heads_run) == 21 == sum(r for r, _ in plain.shapes)
    tokens = sum(r * n for r, n in counting.shapes)
    assert tokens < sum(r * n for r, n in plain.shapes) - 15 * 18  # most rows did not run their header


@pytest.mark.slow
def test_same_answers_as_static_batches_on_the_demo_questions(models_data_dir: Path) -> None:
    """Every other question of the demo's snapshot (133 of 265, each of the 5 languages) with the embedded instruct
    target, at the demo's settings (8 new tokens, batches of 8): continuous generation gives the same completions,
    at that batch size and at the automatic size generation starts at on a CPU (`CPU_AUTO_GENERATE_BATCH`). All 265
    took 322 s of CI's 40 minutes of tests; half keep every language and both batch sizes."""
    from clkt.evaluate.memory import CPU_AUTO_GENERATE_BATCH
    from clkt.evaluate.prompts import render_mcq
    from clkt.snapshots.layout import QuestionRow
    from clkt.targets.loader import load_target

    torch.set_num_threads(2)
    target = TargetSettings(name="smol", model="embedded:smollm2-135m-instruct", kind="instruct")
    model, tok = load_target(target, data_dir=models_data_dir, device="cpu")
    rows = [QuestionRow.model_validate_json(line) for f in sorted((REPO / "tests/fixtures/demo_questions").glob("*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines() if line]
    assert len(rows) == 265
    rows = rows[::2]
    assert {r.lang for r in rows} == {"en", "ja", "zh", "fr", "es"}
    ps = [render_mcq(target, tok, r.question, r.options, r.lang) for r in rows]
    static = score_generate(model, tok, ps, batch_size=8, max_new_tokens=8, continuous=False)
    for batch in (8, CPU_AUTO_GENERATE_BATCH):
        cont = score_generate(model, tok, ps, batch_size=batch, max_new_tokens=8, continuous=True)
        assert [c.predicted for c in cont] == [s.predicted for s in static], batch
        assert sum(c.raw == s.raw for c, s in zip(cont, static, strict=True)) >= 0.98 * len(rows), batch
