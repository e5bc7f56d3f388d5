"""The device check: our real job code on a model of the paper's size, built from its config with random weights.

No weights travel and no hub is reached: the model is Qwen2.5-7B's shape (or Llama-3.1-8B's, `--shape`) written
below as a config dict, built on the GPU with random bf16 weights; the tokenizer is a byte-level BPE trained
here on synthetic multilingual text (vocabulary `--vocab`, the model keeps its own vocabulary size). Then, with
the paper's LoRA settings (r16, alpha 32, dropout 0.1 on the attention projections, lr 5e-4, batch 1, bf16):

- training (`InjectionJob.inject`: the cpt-lora injector, one epoch over `--docs` synthetic documents of about
  `--doc-tokens` tokens, each epoch validated): tokens/s and peak GPU memory, gradient checkpointing off and on;
- evaluation (`answer_questions`, every scorer: generate, letter-logprob, option-loglik, over `--questions`
  synthetic questions): questions/s, the evaluation batch size the automatic sizer settled on, peak memory.

- knowledge editing (`--parts memit`, figures under `figures.memit`): the `memit` strategy through the same job code
  (`InjectionJob.load_snapshot` then `inject`, strategy "memit") on a freshly built model of the same shape, on a
  synthetic snapshot folder written here (`memit_snapshot`: fictional entities from the control split's makers,
  with their typed facts in `facts.jsonl`, their documents in the five languages and every question the template
  engine asks; plus filler documents in the other languages, text for the key statistics only). Figures: the
  edit requests, the layers chosen, the key statistics' one-time pass (seconds in all and per layer, tokens read,
  peak memory, the cache's size) and a second `key_stats` call that must read the cache, the edit (requests,
  value optimisation, the closed-form update: seconds apart, peak memory), the edit targets' mean NLL before,
  with the optimised values, and after the update on the weights as stored (`edits.json`), the share of the
  residuals each layer's stored weights write, and the evaluation of the edited model (questions/s per scorer
  of `--memit-scorers`). Cut from a real job to fit the time budget: the statistics read at most
  `--memit-stats-tokens` (32,000; a job reads up to 100,000), the values are optimised for `--memit-z-steps`
  (10; a job: 25, fewer when every target is said), the snapshot has one entity per domain (about 30 requests),
  the evaluation runs one scorer (letter-logprob) on that snapshot's questions.

Random weights never decide a letter early, so `generate` runs every row to `max_new_tokens` (64): its figure is
the worst case. Ends with one JSON line (also written to `$OUT/gpu_check.json` when OUT is set). `--tiny`: a
tiny config on the CPU, to check the code path where no GPU is (a test runs it).

    python bench/gpu_check.py [--tiny] [--shape qwen2.5-7b|llama-3.1-8b] [--parts cpt,memit]
"""

from __future__ import annotations

import argparse
import gc as gc_module
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
        # 6 layers: memit edits 1-2 (MEMIT's band), so the first and last (the statistics' model identity) stay;
        # weights drawn with std 0.3 (not 0.02): at this width the next token then depends on the hidden state,
        # so an edit can move its targets' NLL (a 7B's width does that at 0.02)
        "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 6,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 2048, "max_position_embeddings": 2048,
        "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "hidden_act": "silu",
        "initializer_range": 0.3,
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


def memit_snapshot(root: Path, *, per_domain: int, filler: int, filler_words: int, seed: int) -> Path:
    """A snapshot folder as a job reads it: `per_domain` fictional entities per domain (the control split's makers:
    typed facts -> `facts.jsonl`, their documents rendered in the five languages, every question the template
    engine asks them, one in five for validation), and `filler` synthetic documents in each language but the
    train language (en): text for the key statistics only, no entity of the train language, so no edit request."""
    from datetime import date

    from clkt.snapshots.control import build_control
    from clkt.snapshots.layout import (
        FACTS_FILE,
        MANIFEST_FILE,
        AgentInfo,
        DocRow,
        DomainCounts,
        FactsRow,
        SnapshotManifest,
        TargetInfo,
        docs_path,
        dumps_row,
        questions_path,
    )

    langs, domains = list(WORDS), ["movies", "music", "sports", "disasters"]
    ctl = build_control(spec="gpu-check", period="2026-12", seed=seed, start=date(2026, 11, 1), end=date(2026, 12, 1),
                        languages=langs, domains=domains, per_domain=per_domain)
    val = {q.qid for q in ctl.questions_in("en")[::5]}
    rng = random.Random(seed)

    def write(path: Path, rows: list[Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(dumps_row(r) + "\n" for r in rows), encoding="utf-8")

    for lang in langs:
        fill = [DocRow(entity_id=900_000 + i, domain="movies", source="synthetic", lang=lang, name=f"filler {i}",
                       text=_text(rng, lang, filler_words)) for i in range(filler if lang != "en" else 0)]
        write(docs_path(root, lang), [*ctl.docs_in(lang), *fill])
        write(questions_path(root, lang), [q.model_copy(update={"split": "val" if q.qid in val else "test"})
                                           for q in ctl.questions_in(lang)])
    write(root / FACTS_FILE, [FactsRow(entity_id=e.entity_id, facts=e.facts.model_dump(mode="json")) for e in ctl.entities])
    n = len(ctl.questions_in("en"))
    manifest = SnapshotManifest(
        snapshot_id="gpu-check-memit", spec="gpu-check", period="2026-12", period_start="2026-11-01",
        period_end="2026-12-01", cadence="monthly", seed=seed, val_ratio=0.2, content_sha256="0" * 64, languages=langs,
        domains=domains, targets=[TargetInfo(name="random", model="(built from its config)")],
        agents=AgentInfo(backend="template"),
        counts={"total": DomainCounts(entities=len(ctl.entities), fact_qas=n, val=len(val), test=n - len(val))},
    )
    (root / MANIFEST_FILE).write_text(manifest.model_dump_json(), encoding="utf-8")
    return root


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tiny", action="store_true", help="a tiny config on the CPU (checks the code path)")
    p.add_argument("--shape", choices=["qwen2.5-7b", "llama-3.1-8b"], default="qwen2.5-7b")
    p.add_argument("--parts", default="cpt,memit", help="comma-separated, of: cpt (LoRA training), memit (knowledge editing)")
    p.add_argument("--docs", type=int, default=96)
    p.add_argument("--doc-tokens", type=int, default=400, help="about this many tokens per document")
    p.add_argument("--questions", type=int, default=320)
    p.add_argument("--vocab", type=int, default=16000)
    p.add_argument("--attn", default="sdpa")
    p.add_argument("--memit-entities", type=int, default=1, help="fictional entities per domain (4 domains)")
    p.add_argument("--memit-stats-tokens", type=int, default=32_000, help="tokens the key statistics read at most")
    p.add_argument("--memit-z-steps", type=int, default=10, help="value optimisation steps at most")
    p.add_argument("--memit-scorers", default="letter-logprob", help="comma-separated scorers after the edit")
    p.add_argument("--work", type=Path, default=Path("/tmp/clkt-gpu-check"))
    a = p.parse_args()
    a.parts = [x.strip() for x in a.parts.split(",") if x.strip()]
    if not a.parts or set(a.parts) - {"cpt", "memit"}:
        p.error(f"--parts {','.join(a.parts)!r}: give cpt, memit or both (comma-separated)")
    if a.tiny:
        a.docs, a.doc_tokens, a.questions, a.vocab = min(a.docs, 6), min(a.doc_tokens, 60), min(a.questions, 15), 600
        a.memit_stats_tokens, a.memit_z_steps = min(a.memit_stats_tokens, 3000), min(a.memit_z_steps, 6)
    return a


class Check:
    """What every part shares: the arguments, the device, the shape, the tokenizer and the figures."""

    def __init__(self, a: argparse.Namespace) -> None:
        import torch

        self.a = a
        self.cuda = torch.cuda.is_available() and not a.tiny
        self.device = "cuda" if self.cuda else "cpu"
        self.dtype = torch.bfloat16 if self.cuda else torch.float32
        self.shape = SHAPES["tiny" if a.tiny else a.shape]
        self.tok = tokenizer(a.vocab)
        self.figures: dict[str, Any] = {
            "shape": "tiny" if a.tiny else a.shape, "device": torch.cuda.get_device_name() if self.cuda else "cpu",
            "dtype": str(self.dtype).removeprefix("torch."), "attn_implementation": a.attn, "parts": a.parts}

    def job(self, name: str, *, strategy: str = "cpt-lora", gc: bool = False, snapshot: Path | None = None,
            scorers: list[str] | None = None) -> Any:
        from clkt.config import GpuSettings, TargetSettings
        from clkt.inject.contract import JobSpec
        from clkt.inject.job import InjectionJob

        a = self.a
        target = TargetSettings(name=f"random-{self.figures['shape']}", model="(built from its config)", kind="instruct")
        gpu = GpuSettings(epochs=1, max_seq_len=1024, gradient_checkpointing=gc, attn_implementation=a.attn,
                          scorers=scorers or ["generate", "letter-logprob", "option-loglik"],  # type: ignore[arg-type]
                          eval_batch_max=128,
                          torch_threads=None)
        spec = JobSpec(job_id=1, snapshot_id="gpu-check", snapshot_dir=snapshot or a.work, target=target, strategy=strategy,
                       train_lang="en", gpu=gpu, data_dir=a.work, artifacts_dir=a.work / name, device=self.device)
        spec.artifacts_dir.mkdir(parents=True, exist_ok=True)
        j = InjectionJob(spec)
        j.device, j.dtype = self.device, str(self.dtype)
        return j

    def model(self) -> Any:
        import torch

        if self.cuda:
            torch.cuda.empty_cache()
        return build_model(self.shape, self.device, self.dtype, self.a.attn if self.cuda else None, seed=0)

    def sync_reset(self) -> None:
        import torch

        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()

    def peak_gb(self) -> float | None:
        import torch

        if not self.cuda:
            return None
        torch.cuda.synchronize()
        return round(torch.cuda.max_memory_allocated() / 2**30, 2)

    def evaluate(self, j: Any, model: Any, rows: list[Any], scorers: list[str], into: dict[str, Any]) -> None:
        """Questions/s, the settled batch size and peak memory per scorer (the job's `_answer`, as after injection)."""
        from clkt.evaluate.results import Variant

        for scorer in scorers:
            self.sync_reset()
            t = time.perf_counter()
            j._answer(model, self.tok, rows, scorers=[scorer], variant=Variant.injected, phase="gpu-check")
            peak = self.peak_gb()
            dt = time.perf_counter() - t
            key = scorer.replace("-", "_")
            into[f"eval_qps_{key}"] = round(len(rows) / dt, 2)
            into[f"eval_batch_{key}"] = j.sizers[scorer].settled
            into[f"eval_batch_halvings_{key}"] = j.sizers[scorer].halvings
            into[f"eval_peak_gb_{key}"] = peak
            print(f"{scorer}: {len(rows)} questions in {dt:.1f}s at batch {j.sizers[scorer].settled}", file=sys.stderr, flush=True)


def cpt_part(c: Check) -> None:
    """LoRA training with checkpointing off and on, then every scorer on the last trained model, merged."""
    from clkt.inject.job import JobQuestions

    a, figures = c.a, c.figures
    docs, test, val = snapshot_rows(a.docs, a.questions, max(8, int(a.doc_tokens / 1.6)), seed=0)
    figures.update(docs=a.docs, test_questions=len(test))
    model: Any = None
    injection: Any = None
    j: Any = None
    for gc in (False, True):
        tag = "gc_on" if gc else "gc_off"
        # the run before is let go first: its injection (the trained model) and job held the first model's 15 GB,
        # which the second run's peak counted (gc_on read 29.1 GB against 16.2, 2026-12-04)
        model = injection = j = None
        gc_module.collect()
        t = time.perf_counter()
        model = c.model()
        figures["parameters_b"] = round(sum(x.numel() for x in model.parameters()) / 1e9, 3)
        figures[f"build_s_{tag}"] = round(time.perf_counter() - t, 1)
        j = c.job(tag, gc=gc)
        c.sync_reset()
        injection = j.inject(model, c.tok, JobQuestions(docs=docs, test_rows=test, control_rows=[], val_rows=val))
        e = injection.epochs[-1]
        figures[f"train_tokens_per_s_{tag}"] = round(e.tokens / e.seconds, 1)
        figures[f"train_tokens_{tag}"] = e.tokens
        figures[f"train_peak_gb_{tag}"] = c.peak_gb()
        print(f"{tag}: {e.tokens} tokens in {e.seconds:.1f}s, peak {c.peak_gb()} GB", file=sys.stderr, flush=True)
    c.evaluate(j, injection.model, test, ["generate", "letter-logprob", "option-loglik"], figures)
    on, off = figures["train_peak_gb_gc_on"], figures["train_peak_gb_gc_off"]
    figures["gc_peak_memory_ratio"] = round(on / off, 3) if on and off else None
    figures["gc_tokens_per_s_ratio"] = round(figures["train_tokens_per_s_gc_on"] / figures["train_tokens_per_s_gc_off"], 3)


class _PhasePeaks:
    """The job's progress callback, wrapped: peak GPU memory of the key statistics (up to the edit's first report)
    and of the edit (from there), reset in between."""

    def __init__(self, c: Check, inner: Any) -> None:
        self.c, self.inner = c, inner
        self.stats_peak_gb: float | None = None

    def __call__(self, progress: Any, **kw: Any) -> None:
        if progress.phase == "edit" and progress.done == 0:
            self.stats_peak_gb = self.c.peak_gb()
            self.c.sync_reset()
        self.inner(progress, **kw)


def memit_part(c: Check) -> None:
    """The `memit` strategy as a job runs it (load the snapshot, inject), then a second `key_stats` call that must
    read the statistics' cache, then the evaluation of the edited model."""
    from clkt.inject.editing import covariance
    from clkt.inject.editing.corpus import stats_corpus
    from clkt.inject.editing.values import ZSettings
    from clkt.inject.strategies import memit
    from clkt.layout import EDIT_STATS_DIR, EDITS_FILE

    a = c.a
    covariance.MAX_TOKENS = a.memit_stats_tokens
    memit.Memit.Z = ZSettings(steps=a.memit_z_steps)
    snap = memit_snapshot(a.work / "memit-snapshot", per_domain=a.memit_entities, filler=a.docs,
                          filler_words=max(8, int(a.doc_tokens / 1.6)), seed=0)
    scorers = [x.strip() for x in a.memit_scorers.split(",") if x.strip()]
    f: dict[str, Any] = c.figures.setdefault("memit", {})
    t = time.perf_counter()
    model = c.model()
    f["build_s"] = round(time.perf_counter() - t, 1)
    j = c.job("memit", strategy="memit", snapshot=snap, scorers=scorers)
    qs = j.load_snapshot()
    j.progress = phases = _PhasePeaks(c, j.progress)
    c.sync_reset()
    t = time.perf_counter()
    injection = j.inject(model, c.tok, qs)
    f["inject_s"] = round(time.perf_counter() - t, 2)
    f["edit_peak_gb"], f["stats_peak_gb"] = c.peak_gb(), phases.stats_peak_gb
    record = json.loads((j.ckpt_root / EDITS_FILE).read_text(encoding="utf-8"))
    layers = record["layers"]
    f.update({k: record[k] for k in ("requests", "subjects", "entities_from_facts", "entities_from_documents", "layers",
                                     "z_steps", "target_nll_before", "target_nll_at_z", "target_nll_after", "written",
                                     "delta_norms", "requests_seconds", "stats_seconds", "values_seconds",
                                     "update_seconds", "edit_seconds")})
    f["stats_tokens"] = record["stats"][str(layers[0])]["tokens"]
    f["stats_computed"] = not any(s["cached"] for s in record["stats"].values())
    f["stats_seconds_per_layer"] = round(record["stats_seconds"] / len(layers), 3)
    root = j.spec.data_dir / EDIT_STATS_DIR
    f["stats_cache_files"] = sorted(p.name for p in root.glob("*.safetensors"))
    f["stats_cache_mb"] = round(sum(p.stat().st_size for p in root.glob("*.safetensors")) / 2**20, 2)
    t = time.perf_counter()
    again = covariance.key_stats(model, c.tok, layers, corpus=stats_corpus(), root=root, name=j.spec.target.model,
                                 device=c.device)
    f["stats_reread_s"] = round(time.perf_counter() - t, 2)
    f["stats_reread_cached"] = all(s.cached for s in again.values()) and sorted(again) == layers
    rows = qs.test_rows[: a.questions]  # all of them but in --tiny
    f["test_questions"] = len(rows)
    c.evaluate(j, injection.model, rows, scorers, f)
    print(f"memit: {f['requests']} requests at layers {layers}: statistics {f['stats_seconds']}s ({f['stats_tokens']} "
          f"tokens), edit {f['edit_seconds']}s, target NLL {f['target_nll_before']} -> {f['target_nll_after']}",
          file=sys.stderr, flush=True)


def main() -> int:
    a = _args()
    t_start = time.perf_counter()
    a.work.mkdir(parents=True, exist_ok=True)
    c = Check(a)
    figures = c.figures
    goals: dict[str, str] = {"total_s": "<= 480"}
    met = True
    if "cpt" in a.parts:
        cpt_part(c)
        goals["gc_peak_memory_ratio"] = "< 1.0 (GPU only)"
        met = met and (figures["gc_peak_memory_ratio"] is None or figures["gc_peak_memory_ratio"] < 1.0)
    if "memit" in a.parts:
        memit_part(c)
        m = figures["memit"]
        goals.update({"memit.target_nll_after": "< memit.target_nll_before (the edit fitted, on the stored weights)",
                      "memit.stats_reread_cached": "true (a second call reads the statistics' cache)"})
        met = met and m["target_nll_after"] < m["target_nll_before"] and m["stats_reread_cached"]
    figures["total_s"] = round(time.perf_counter() - t_start, 1)
    met = met and figures["total_s"] <= 480
    line = json.dumps({"bench": "gpu_check", "figures": figures, "goals": goals, "met": met})
    print(line)
    out = os.environ.get("OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gpu_check.json").write_text(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
