"""A tiny causal LM with random weights and a word-level tokenizer, built in memory (no download): for tests that
compare two ways of computing the same thing (continuous against static generation, checkpointing on and off)."""

from __future__ import annotations

from typing import Any

WORDS = ["A", "B", "C", "D", "the", "answer", "is", "a", "film", "score", "Paris", "Rome", ".", ",", ":", "of", "in",
         "team", "won", "lost", "year", "city", "who", "what", "?", "\n", "x", "y", "z", "yes", "no", "maybe"]


def tiny_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{w: i + 4 for i, w in enumerate(WORDS)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece(prefix="##")  # joins the words with spaces
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>")
    tok.padding_side = "left"
    return tok


def tiny_model(kind: str = "llama", *, seed: int = 0, sliding_window: int | None = None, vocab: int = 36) -> Any:
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    common: dict[str, Any] = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                  pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model: Any
    if kind == "gemma3":
        cfg = Gemma3TextConfig(**common, head_dim=8, sliding_window=sliding_window or 64,
                               layer_types=["sliding_attention", "full_attention"])
        model = Gemma3ForCausalLM(cfg)
    else:
        model = LlamaForCausalLM(LlamaConfig(**common))
    model.eval()
    return model


def prompts(n: int, *, seed: int = 0) -> list[str]:
    import random

    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS[4:25]) for _ in range(rng.randint(3, 14))) for _ in range(n)]
