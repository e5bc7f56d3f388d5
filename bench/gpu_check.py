"""The device check: our real job code on a model of the paper's size, built from its config with random weights.

No weights travel and no hub is reached: the model is Qwen2.5-7B's shape (or Llama-3.1-8B's, `--shape`) written
below as a config dict, built on the GPU with random bf16 weights; the tokenizer is a byte-level BPE trained
here on synthetic multilingual text (vocabulary `--vocab`, the model keeps its own vocabulary size). Then, with
the paper's LoRA settings (r16, alpha 32, dropout 0.1 on the attention projections, lr 5e-4, batch 1, bf16):

- training (`InjectionJob.inject`: the cpt-lora injector, one epoch over `--docs` synthetic documents of about
  `--doc-tokens` tokens, each epoch validated): tokens/s and peak GPU memory, gradient checkpointing off and on;
- evaluation (`answer_questions`, every scorer: generate, letter-logprob, option-loglik, over `--questions`
  synthetic questions): questions/s, the evaluation batch size the automatic sizer settled on, peak memory.

Random weights never decide a letter early, so `generate` runs every row to `max_new_tokens` (64): its figure is
the worst case. Ends with one JSON line (also written to `$OUT/gpu_check.json` when OUT is set). `--tiny`: a
tiny config on the CPU, to check the code path where no GPU is (a test runs it).

    python bench/gpu_check.py [--tiny] [--shape qwen2.5-7b|llama-3.1-8b]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SHAPES: dict[str, dict[str, Any]] = {
    # Qwen/Qwen2.5-7B-Instruct config.json (architecture fields)
    "qwen2.5-7b": {
        "model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
        "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768,
        "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "hidden_act": "silu",
        "sliding_window": None, "use_sliding_window": False,
    },
    # meta-llama/Llama-3.1-8B-Instruct config.json (architecture fields; rope scaling left out: same cost)
    "llama-3.1-8b": {
        "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "rope_theta": 500000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "hidden_act": "silu",
    },
    "tiny": {
        "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 2048, "max_position_embeddings": 2048,
        "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "hidden_act": "silu",
    },
}
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
_WORDS = {
    "en": "the film premiered in directed by runs minutes score ended at stadium after goal second half earthquake "
          "magnitude depth kilometres released album label tracks critics award festival city region team won",
    "fr": "le film est sorti réalisé par dure minutes score terminé au stade après but seconde mi-temps séisme "
          "magnitude profondeur kilomètres album label pistes critiques prix festival ville région équipe",
    "es": "la película se estrenó dirigida por dura minutos marcador terminó en estadio tras gol segundo tiempo "
          "terremoto magnitud profundidad kilómetros álbum sello pistas críticos premio festival ciudad región",
    "ja": "映画 公開 監督 上映 時間 分 試合 終了 スタジアム 後半 ゴール 地震 マグニチュード 深さ キロ アルバム レーベル 曲 批評 受賞 祭 都市 地域",
    "zh": "电影 上映 导演 时长 分钟 比赛 结束 球场 下半场 进球 地震 震级 深度 公里 专辑 唱片 曲目 评论 获奖 节日 城市 地区",
}
WORDS = {lang: words.split(" ") for lang, words in _WORDS.items()}
NAMES = ["Velmora Tide", "Quenford Derby", "Oskarel Lights", "Partenza Nord", "Ilsbrook Quake", "Marrow & Finch"]


def _text(rng: random.Random, lang: str, words: int) -> str:
    sep = "" if lang in ("ja", "zh") else " "
    return sep.join(rng.choice(WORDS[lang]) for _ in range(words))


def tokenizer(vocab: int, seed: int = 0) -> Any:
    """A byte-level BPE trained on synthetic text of the five languages, with ChatML's template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(seed)
    corpus = [_text(rng, lang, 60) for lang in WORDS for _ in range(200)] + NAMES + ["A B C D Answer:"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    core.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=vocab, special_tokens=specials,
                                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  bos_token=None, unk_token=None)
    tok.chat_template = CHATML
    tok.padding_side = "left"
    return tok


def build_model(shape: dict[str, Any], device: str, dtype: Any, attn: str | None, seed: int) -> Any:
    """The architecture of `shape` with random weights, allocated and initialised on `device` (no CPU copy)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(**shape)
    torch.manual_seed(seed)
    kwargs = {"attn_implementation": attn} if attn else {}
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, **kwargs)
    model.eval()
    return model


def snapshot_rows(n_docs: int, n_questions: int, doc_words: int, seed: int) -> tuple[list[Any], list[Any], list[Any]]:
    """Documents (en), test questions (every language) and validation questions (en), as the job reads them."""
    from clkt.snapshots.layout import DocRow, QuestionRow

    rng = random.Random(seed)
    docs = [DocRow(entity_id=i, domain="movies", source="synthetic", lang="en", name=NAMES[i % len(NAMES)],
                   text=f"{NAMES[i % len(NAMES)]} — {_text(rng, 'en', doc_words)}.") for i in range(n_docs)]

    def question(i: int, lang: str, split: str) -> Any:
        opts = [_text(rng, lang, 2) for _ in range(4)]
        k = rng.randrange(4)
        return QuestionRow(qid=i, entity_id=i, domain="movies", lang=lang, split=split,  # type: ignore[arg-type]
                           question=f"{NAMES[i % len(NAMES)]}: {_text(rng, lang, 12)}?", options=opts,
                           answer="ABCD"[k], answer_index=k, slot="s", source="synthetic")  # type: ignore[arg-type]

    langs = list(WORDS)
    test = [question(i, langs[i % len(langs)], "test") for i in range(n_questions)]
    val = [question(10_000 + i, "en", "val") for i in range(max(2, n_questions // 20))]
    return docs, test, val


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tiny", action="store_true", help="a tiny config on the CPU (checks the code path)")
    p.add_argument("--shape", choices=["qwen2.5-7b", "llama-3.1-8b"], default="qwen2.5-7b")
    p.add_argument("--docs", type=int, default=96)
    p.add_argument("--doc-tokens", type=int, default=400, help="about this many tokens per document")
    p.add_argument("--questions", type=int, default=320)
    p.add_argument("--vocab", type=int, default=16000)
    p.add_argument("--attn", default="sdpa")
    p.add_argument("--work", type=Path, default=Path("/tmp/clkt-gpu-check"))
    a = p.parse_args()
    if a.tiny:
        a.docs, a.doc_tokens, a.questions, a.vocab = min(a.docs, 6), min(a.doc_tokens, 60), min(a.questions, 15), 600
    import torch

    from clkt.config import GpuSettings, TargetSettings
    from clkt.evaluate.results import Variant
    from clkt.inject.contract import JobSpec
    from clkt.inject.job import InjectionJob, JobQuestions

    t_start = time.perf_counter()
    cuda = torch.cuda.is_available() and not a.tiny
    device = "cuda" if cuda else "cpu"
    dtype = torch.bfloat16 if cuda else torch.float32
    shape = SHAPES["tiny" if a.tiny else a.shape]
    tok = tokenizer(a.vocab)
    docs, test, val = snapshot_rows(a.docs, a.questions, max(8, int(a.doc_tokens / 1.6)), seed=0)
    target = TargetSettings(name=f"random-{'tiny' if a.tiny else a.shape}", model="(built from its config)", kind="instruct")
    a.work.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {"shape": "tiny" if a.tiny else a.shape, "device": torch.cuda.get_device_name() if cuda else "cpu",
                               "dtype": str(dtype).removeprefix("torch."), "attn_implementation": a.attn,
                               "docs": a.docs, "test_questions": len(test)}

    def job(gc: bool, name: str) -> InjectionJob:
        gpu = GpuSettings(epochs=1, max_seq_len=1024, gradient_checkpointing=gc, attn_implementation=a.attn,  # type: ignore[arg-type]
                          scorers=["generate", "letter-logprob", "option-loglik"], eval_batch_max=128,
                          torch_threads=None)
        spec = JobSpec(job_id=1, snapshot_id="gpu-check", snapshot_dir=a.work, target=target, strategy="cpt-lora",
                       train_lang="en", gpu=gpu, data_dir=a.work, artifacts_dir=a.work / name, device=device)
        spec.artifacts_dir.mkdir(parents=True, exist_ok=True)
        j = InjectionJob(spec)
        j.device, j.dtype = device, str(dtype)
        return j

    def peak_gb() -> float | None:
        return round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None

    model: Any = None
    for gc in (False, True):
        tag = "gc_on" if gc else "gc_off"
        model = None
        if cuda:
            torch.cuda.empty_cache()
        t = time.perf_counter()
        model = build_model(shape, device, dtype, a.attn if cuda else None, seed=0)
        figures["parameters_b"] = round(sum(x.numel() for x in model.parameters()) / 1e9, 3)
        figures[f"build_s_{tag}"] = round(time.perf_counter() - t, 1)
        j = job(gc, tag)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        injection = j.inject(model, tok, JobQuestions(docs=docs, test_rows=test, control_rows=[], val_rows=val))
        if cuda:
            torch.cuda.synchronize()
        e = injection.epochs[-1]
        figures[f"train_tokens_per_s_{tag}"] = round(e.tokens / e.seconds, 1)
        figures[f"train_tokens_{tag}"] = e.tokens
        figures[f"train_peak_gb_{tag}"] = peak_gb()
        print(f"{tag}: {e.tokens} tokens in {e.seconds:.1f}s, peak {peak_gb()} GB", file=sys.stderr, flush=True)
    # evaluation: the last trained model, merged (as the job answers), every scorer with the automatic batch size
    model = injection.model
    for scorer in ("generate", "letter-logprob", "option-loglik"):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t = time.perf_counter()
        j._answer(model, tok, test, scorers=[scorer], variant=Variant.injected, phase="gpu-check")
        if cuda:
            torch.cuda.synchronize()
        dt = time.perf_counter() - t
        key = scorer.replace("-", "_")
        figures[f"eval_qps_{key}"] = round(len(test) / dt, 2)
        figures[f"eval_batch_{key}"] = j.sizers[scorer].settled
        figures[f"eval_batch_halvings_{key}"] = j.sizers[scorer].halvings
        figures[f"eval_peak_gb_{key}"] = peak_gb()
        print(f"{scorer}: {len(test)} questions in {dt:.1f}s at batch {j.sizers[scorer].settled}", file=sys.stderr, flush=True)
    figures["total_s"] = round(time.perf_counter() - t_start, 1)
    on, off = figures["train_peak_gb_gc_on"], figures["train_peak_gb_gc_off"]
    figures["gc_peak_memory_ratio"] = round(on / off, 3) if on and off else None
    figures["gc_tokens_per_s_ratio"] = round(figures["train_tokens_per_s_gc_on"] / figures["train_tokens_per_s_gc_off"], 3)
    goals = {"total_s": "<= 480", "gc_peak_memory_ratio": "< 1.0 (GPU only)"}
    met = figures["total_s"] <= 480 and (figures["gc_peak_memory_ratio"] is None or figures["gc_peak_memory_ratio"] < 1.0)
    line = json.dumps({"bench": "gpu_check", "figures": figures, "goals": goals, "met": met})
    print(line)
    out = os.environ.get("OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gpu_check.json").write_text(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
