"""Small tokenizers of the two families the embedded targets use, trained in memory (no download): byte-level BPE
(SmolLM2, GPT-2) and SentencePiece-style BPE with byte fallback (Gemma, Llama 2: characters outside the vocabulary
are spelled by one token per UTF-8 byte, so a character can be split over tokens and its text is incomplete until
its last byte). Their vocabularies are a few hundred pieces, so answers are split over several tokens."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["CORPUS", "byte_fallback_tokenizer", "byte_level_tokenizer"]

CORPUS = [
    "The answer is C.", "Answer: (B)", "A film directed by Osric Palandri", "B. Paris\nC. Rome\nD. Berlin",
    "I think the answer is A because the film premiered in Rome.", "**D** is right", "Option B is the best choice",
    "Réponse : D", "Respuesta: A", "La respuesta es B", "Die Antwort ist C", "答案：C。", "正解はB です",
    "The final score was 3-1 after the second half.", "Who directed the film? The critics loved it.",
]
SPECIALS = ["<pad>", "<s>", "</s>"]


def _wrap(core: Any) -> Any:
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    tok.padding_side = "left"
    return tok


def byte_level_tokenizer(vocab_size: int = 320) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    core.train_from_iterator(CORPUS, trainer)
    return _wrap(core)


def byte_fallback_tokenizer(*, strip_first_space: bool = False, vocab_size: int = 200) -> Any:
    """Gemma's decoder (`strip_first_space=False`) or Llama 2's (which drops the space its pre-tokenizer added)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    trained = Tokenizer(models.BPE())
    trained.normalizer = normalizers.Replace(" ", "▁")
    trained.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, limit_alphabet=40, show_progress=False)
    trained.train_from_iterator(CORPUS, trainer)
    spec = json.loads(trained.to_str())["model"]
    vocab: dict[str, int] = dict(spec["vocab"])
    for b in range(256):  # the byte pieces, after the trained ones
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    merges = [(str(m[0]), str(m[1])) for m in (x.split(" ") if isinstance(x, str) else x for x in spec["merges"])]
    core = Tokenizer(models.BPE(vocab, merges, byte_fallback=True))
    core.normalizer = normalizers.Sequence(
        ([normalizers.Prepend("▁")] if strip_first_space else []) + [normalizers.Replace(" ", "▁")])
    core.pre_tokenizer = pre_tokenizers.Split("▁", behavior="merged_with_next")
    steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    core.decoder = decoders.Sequence(steps + ([decoders.Strip(" ", 1, 0)] if strip_first_space else []))
    core.add_special_tokens(SPECIALS)
    return _wrap(core)
