"""Continuous generation checks a row's letter after every token on text decoded incrementally (`StreamText`): the
text, and so every stop decision and letter, is the whole decode's, with the tokenizers of both embedded targets'
families, characters split over byte tokens, letters split over tokens and special tokens among the rest."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from clkt.evaluate import decoding
from clkt.evaluate._stream_text import StreamText
from clkt.evaluate.parse import ParseMode, letter_decided
from clkt.evaluate.scorers import score_generate
from clkt.targets.prompting import RenderedPrompt
from tests.evaluate._tiny import prompts, tiny_model, tiny_tokenizer
from tests.evaluate._tokenizers import byte_fallback_tokenizer, byte_level_tokenizer

TOKENIZERS: dict[str, Callable[[], Any]] = {
    "byte-level": byte_level_tokenizer,
    "byte-fallback": byte_fallback_tokenizer,
    "byte-fallback-strip": lambda: byte_fallback_tokenizer(strip_first_space=True),
    "word-level": tiny_tokenizer,
}

ANSWERS = [
    "B", " B. Paris\n\nQuestion: next", "A film about A", "A. Berlin\nB. Paris\nC. Rome", "(C) Paris", "**D**",
    "The answer is C.", "The answer is Cairo", "Answer: (b) yes", "答案：C。", "正解はB です", "Ａ．", "Réponse : D",
    "日本語 😀 B", "I think A is right", "Because D", "D\n", "nothing here", "The final score was 3-1. Answer: A",
]


def _old_stop(tok: Any, tokens: list[int], mode: ParseMode) -> tuple[int, str] | None:
    """Today's rule before this change: the whole completion decoded again at every token."""
    for t in range(1, len(tokens) + 1):
        text = tok.decode(tokens[:t], skip_special_tokens=True)
        if letter_decided(text, mode):
            return t, text
    return None


def _new_stop(tok: Any, tokens: list[int], mode: ParseMode) -> tuple[int, str] | None:
    stream = StreamText(tok)
    for t, token in enumerate(tokens, start=1):
        if letter_decided(stream.add(token), mode):
            return t, stream.text
    return None


@pytest.mark.parametrize("name", list(TOKENIZERS))
def test_the_text_is_the_whole_decode_after_every_token(name: str) -> None:
    tok = TOKENIZERS[name]()
    rng = random.Random(7)
    sequences = [tok.encode(a, add_special_tokens=False) for a in ANSWERS]
    sequences += [[rng.randrange(len(tok)) for _ in range(40)] for _ in range(80)]  # stray bytes, specials, unknowns
    pieces = [tok.encode(a, add_special_tokens=False) for a in ANSWERS]
    sequences += [[t for _ in range(4) for t in rng.choice(pieces)] for _ in range(40)]
    if name.startswith("byte-fallback"):  # a stray byte, then characters spelled by bytes: U+FFFD for all of them
        stray = tok.convert_tokens_to_ids("<0x97>")
        sequences += [[stray, *tok.encode("日本語 B.", add_special_tokens=False)], [*pieces[9], stray, *pieces[13]]]
    split = 0
    for k, tokens in enumerate(sequences):
        stream = StreamText(tok)
        for t, token in enumerate(tokens, start=1):
            whole = tok.decode(tokens[:t], skip_special_tokens=True)
            assert stream.add(token) == whole, (name, tokens[:t])
            split += whole.endswith("\ufffd")
        assert stream.tokens == tokens
        assert k >= len(ANSWERS) or not stream.decodes_whole  # text decoded incrementally, not whole each time
    if name.startswith("byte"):
        assert split > 0  # characters really were split over tokens


@pytest.mark.parametrize("name", ["byte-level", "byte-fallback", "byte-fallback-strip"])
@pytest.mark.parametrize("mode", ["strict", "reference"])
def test_stop_decisions_and_letters_are_those_of_whole_decodes(name: str, mode: ParseMode) -> None:
    tok = TOKENIZERS[name]()
    decided = 0
    for answer in ANSWERS:
        tokens = tok.encode(answer, add_special_tokens=False) + tok.encode(" the film is x", add_special_tokens=False)
        old = _old_stop(tok, tokens, mode)
        assert _new_stop(tok, tokens, mode) == old, (name, answer)
        decided += old is not None
    assert decided >= (8 if mode == "strict" else 14)


class _NonConcatenating:
    """A tokenizer whose decoding of a slice is not a piece of the whole's (here: every decode is upper-cased when it
    starts with the first token): the stream falls back to whole decodes and still gives the whole decode."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok

    def decode(self, ids: list[int], **kw: Any) -> str:
        text = str(self.tok.decode(ids, **kw))
        return text.upper() if len(ids) % 2 else text


def test_a_tokenizer_that_does_not_concatenate_decodes_whole() -> None:
    tok = _NonConcatenating(byte_level_tokenizer())
    tokens = tok.tok.encode("The answer is probably C, then.", add_special_tokens=False)
    stream = StreamText(tok)
    for t, token in enumerate(tokens, start=1):
        assert stream.add(token) == tok.decode(tokens[:t], skip_special_tokens=True)


def _rendered(texts: list[str]) -> list[RenderedPrompt]:
    return [RenderedPrompt(t, True) for t in texts]


@pytest.mark.parametrize("name", ["byte-fallback", "byte-level"])
@pytest.mark.parametrize("mode", ["strict", "reference"])
def test_continuous_generation_gives_the_letters_of_whole_decodes(name: str, mode: ParseMode) -> None:
    """A tiny random model over a tokenizer with byte pieces: continuous generation (incremental text) against static
    batches (whose stopping criterion decodes each completion whole at every step)."""
    torch.set_num_threads(1)
    tok = TOKENIZERS[name]()
    model = tiny_model(seed=3, vocab=len(tok))
    rng = random.Random(3)
    texts = [" ".join(rng.choice(ANSWERS) for _ in range(rng.randint(1, 3))) for _ in range(24)]
    ps = _rendered(texts)
    static = score_generate(model, tok, ps, batch_size=4, max_new_tokens=16, parse=mode, continuous=False)
    cont = score_generate(model, tok, ps, batch_size=4, max_new_tokens=16, parse=mode, continuous=True)
    assert [c.raw for c in cont] == [s.raw for s in static]
    assert [c.predicted for c in cont] == [s.predicted for s in static]


class _Recording(StreamText):
    made: list[StreamText] = []  # noqa: RUF012 - every completion of the run

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(tokenizer)
        _Recording.made.append(self)


class _DecodeRows:
    """The tiny model, recording the rows of every decoding pass (one new token per row)."""

    def __init__(self, model: Any) -> None:
        self.model, self.rows = model, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def __call__(self, **kw: Any) -> Any:
        if kw["input_ids"].shape[1] == 1:
            self.rows += int(kw["input_ids"].shape[0])
        return self.model(**kw)


@pytest.mark.parametrize("mode", ["strict", "reference"])
def test_finished_rows_leave_the_forward_pass(mode: ParseMode, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every decoding pass runs only the rows still generating: a row that has generated k tokens took part in k - 1
    of them (its first token comes from its prefill), and none after it stopped."""
    torch.set_num_threads(1)
    monkeypatch.setattr(decoding, "StreamText", _Recording)
    _Recording.made = []
    model, tok = _DecodeRows(tiny_model(seed=2)), tiny_tokenizer()
    got = score_generate(model, tok, _rendered(prompts(20, seed=2)), batch_size=8, max_new_tokens=12, parse=mode)
    lengths = [len(s.tokens) for s in _Recording.made]
    assert len(lengths) == len(got) == 20
    assert min(lengths) < 12 == max(lengths)  # some rows stopped early, some ran to the end
    assert model.rows == sum(k - 1 for k in lengths)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemma-3-270m", "smollm2-135m-instruct"])
def test_the_embedded_targets_tokenizers_decode_incrementally(name: str, models_data_dir: Path) -> None:
    from transformers import AutoTokenizer

    from clkt.targets.embedded import EMBEDDED_MODELS, ensure_converted

    tok = AutoTokenizer.from_pretrained(ensure_converted(EMBEDDED_MODELS[name], models_data_dir / "models"))
    rng = random.Random(11)
    pieces = [tok.encode(a, add_special_tokens=False) for a in ANSWERS]
    sequences = [[t for _ in range(5) for t in rng.choice(pieces)] for _ in range(60)]
    sequences += [[rng.randrange(len(tok)) for _ in range(30)] for _ in range(60)]
    for tokens in sequences:
        stream = StreamText(tok)
        for t, token in enumerate(tokens, start=1):
            assert stream.add(token) == tok.decode(tokens[:t], skip_special_tokens=True), (name, tokens[:t])
    for mode in ("strict", "reference"):
        for answer in ANSWERS:
            tokens = tok.encode(answer + " and more", add_special_tokens=False)
            assert _new_stop(tok, tokens, mode) == _old_stop(tok, tokens, mode)
