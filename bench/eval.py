"""Bench: scoring throughput of the scorers, side by side on the same questions.

Figures (questions/s):
- `generate` (greedy, up to --max-new-tokens = 64 new tokens, the reference's setting), run to the end and
  stopped as soon as the letter is decided (`letter_decided`), in both parse modes, alternating `--stop-reps`
  times (`--only stop` runs this part alone, on continuous batches); the stopped completions must parse exactly
  as the full ones (agreement, goal 1.0) and save time on the path `generate` takes, where a decided row leaves
  the batch (`generate_stop_speedup`, the slower parse mode's: the one whose rows stop later, strict).
  The goal was >= 2x; stopping cannot give that here. It saves the decoding of the tokens it does not generate
  and nothing else: a decoding pass costs a + b x rows, the full run's passes are all full (8 rows, each to the
  64th token) and the stopped run's passes hold at most 8 rows, so the stopped run takes at least 1/8 of its
  rows' tokens in passes and the speedup is at most the ratio of the rows' tokens, full / stopped
  (`generate_stop_ceiling`, counted from the decoding passes; the prompts' prefill, which both runs pay, lowers
  it further). Gemma 3 270M, a base model, states no letter in strict mode in many of its completions, which
  run to the 64th token: its stopped rows generate 36.9 of 64 tokens (measured: 861 rows in 157 decoding
  passes against 1512 in 189), a token ceiling of 1.73x (the reference parse's rows generate 14.2: 4.5x).
  That ceiling assumed b > 0; measured on 2 CPU cores (2026-12-04, two alternating repetitions), a pass costs the
  same whatever rows it carries: 0.137 s with 8 rows (full: 25.9 s / 189 passes) and 0.138 s with 5.5 (strict:
  21.6 s / 157), so a saved token saves nothing unless its whole pass goes, and the time follows the passes.
  The passes a stopped run still needs are set by its slowest rows (a completion with no letter runs to the 64th
  token, and the last prompts decode with the batch part empty). So the goal is the share of the pass ceiling
  (`generate_stop_pass_ratio`, full / stopped passes) the speedup reaches (`generate_stop_of_pass_ceiling`, goal
  >= 0.9: stopping pays what it saves in passes); the token ceiling and its share (`generate_stop_ceiling`,
  `generate_stop_of_ceiling`) stay in the figures, without a goal, with the seconds per pass of both runs
  (`generate_s_per_pass_full`, `generate_s_per_pass_stop`)). On static batches
  (`generate_stop_speedup_static`, no goal) a batch stops only once its every row is decided, and a base
  model's completion that never states a letter keeps its batch of 8 running to the 64th token: there stopping
  saves little;
- `letter-logprob` (one forward pass per prompt, last position only) against a bare forward pass computing
  every position's logits (the limit; goal >= 0.9 of its rate);
- `option-loglik` with the options sharing the question's prefix (KV cache) against every (question + option)
  sequence run whole: the same answers (goal: agreement >= 0.98, float ties aside) and faster (goal >= 1.2x);
- `generate` on the demo's questions (`tests/fixtures/demo_questions`, the first `--demo-n` of each language)
  with the embedded instruct target (`--instruct-model`), side by side, all stopping at the decided letter:
  `generate` as it runs now (continuous: decided rows leave the batch, queued ones join it, the prompts' shared
  first tokens run once per group; at the automatic generation batch of the device, `BatchSizer.for_job`: 16 on a
  CPU) against `generate` as it ran before (static batches of `--baseline-batch-size`, 8: each batch until its
  slowest row is done): the same letters (goal: agreement 1.0) in less wall time (`demo_continuous_speedup`, goal
  >= 1.5x). Without goals: static batches at the automatic size (`demo_equal_batch_speedup`: what continuous
  batches save at the same batch size), and the continuous path without shared prefixes
  (`demo_unshared_equal_batch_speedup`: what leaving the batch early saves alone).
Ends with one JSON line; about 4-8 minutes on 2 CPU cores with Gemma 3 270M, plus the demo part (`--only demo`
runs that part alone).

    .venv/bin/python bench/eval.py [--model embedded:gemma-3-270m] [--n 24] [--device auto] [--only all|synthetic|stop|demo]
        [--stop-reps 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.support.targets import add_target_args, synthetic_mcqs, target_from_args  # noqa: E402
from clkt.config import GpuSettings, TargetSettings  # noqa: E402
from clkt.evaluate.loglik import loglik_item, score_option_loglik  # noqa: E402
from clkt.evaluate.memory import BatchSizer  # noqa: E402
from clkt.evaluate.parse import parse_letter  # noqa: E402
from clkt.evaluate.prompts import render_mcq  # noqa: E402
from clkt.evaluate.scorers import ScorerName, _batches, _positions, score_generate, score_letter_logprob  # noqa: E402
from clkt.snapshots.layout import QuestionRow  # noqa: E402
from clkt.targets.loader import load_target, resolve_device  # noqa: E402
from clkt.targets.prompting import RenderedPrompt, encode_left_padded  # noqa: E402

STOP_OF_CEILING_GOAL = ">= 0.9"  # `generate_stop_speedup` / `generate_stop_pass_ratio` (the module's docstring)


def bare_forward(model: Any, tok: Any, prompts: Sequence[RenderedPrompt], batch_size: int) -> None:
    import torch

    with torch.inference_mode():
        for idx in _batches(prompts, tok, batch_size):
            b = encode_left_padded(tok, [prompts[i] for i in idx]).to(model.device)
            model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], position_ids=_positions(b["attention_mask"]),
                  use_cache=False).logits.float().sum().item()


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn: Callable[[], object], reps: int = 1) -> float:
    best = float("inf")
    for _ in range(reps):
        _sync()
        t = time.perf_counter()
        fn()
        _sync()
        best = min(best, time.perf_counter() - t)
    return best


class DecodePasses:
    """Counts a model's decoding passes (one new token per row) and the rows they ran, by a forward pre-hook: the
    decoding work of a run, whatever schedule ran it (`model.generate`'s static batches or continuous batches)."""

    def __init__(self, model: Any) -> None:
        self.passes = self.rows = 0
        self._handle = model.register_forward_pre_hook(self._count, with_kwargs=True)

    def _count(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None and ids.shape[1] == 1:
            self.passes += 1
            self.rows += int(ids.shape[0])

    def take(self) -> tuple[int, int]:
        """(passes, rows) since the last take."""
        out = (self.passes, self.rows)
        self.passes = self.rows = 0
        return out

    def close(self) -> None:
        self._handle.remove()


def _alternate(
    model: Any, tok: Any, prompts: Sequence[RenderedPrompt], a: argparse.Namespace, runs: dict[str, dict[str, Any]], reps: int,
) -> tuple[dict[str, float], dict[str, list[float]], dict[str, list[Any]], dict[str, tuple[int, int]]]:
    """Each run of `generate` in turn, `reps` times: the best time of each, every time, the answers and the decoding
    work (passes, rows) of each."""
    best = dict.fromkeys(runs, float("inf"))
    times: dict[str, list[float]] = {k: [] for k in runs}
    got: dict[str, list[Any]] = {}
    work: dict[str, tuple[int, int]] = {}
    counter = DecodePasses(model)
    try:
        for _ in range(reps):
            for key, kw in runs.items():
                counter.take()
                t = timed(lambda kw=kw, key=key: got.__setitem__(key, score_generate(  # type: ignore[misc]
                    model, tok, prompts, batch_size=a.batch_size, max_new_tokens=a.max_new_tokens, **kw)))
                work[key], best[key] = counter.take(), min(best[key], t)
                times[key].append(round(t, 1))
                print(f"{key}: {t:.1f}s ({work[key][0]} decoding passes, {work[key][1]} rows)", file=sys.stderr, flush=True)
    finally:
        counter.close()
    return best, times, got, work


def stopping_figures(
    model: Any, tok: Any, prompts: Sequence[RenderedPrompt], a: argparse.Namespace, *, reps: int, static: bool = True,
) -> tuple[dict[str, object], dict[str, str]]:
    """`generate` run to the end against stopped at the decided letter (both parse modes; on continuous batches, the
    path `generate` takes, and with `static` on static batches too), alternating `reps` times, best of each. Returns
    the figures (with the full run's time as `_full_s`) and their goals."""
    runs: dict[str, dict[str, Any]] = {"full": {"stop_early": False}, "strict": {"parse": "strict"}, "reference": {"parse": "reference"}}
    if static:
        runs |= {"strict_static": {"parse": "strict", "continuous": False}, "reference_static": {"parse": "reference", "continuous": False}}
    best, times, got, work = _alternate(model, tok, prompts, a, runs, reps)
    n = len(prompts)
    agree = {k: sum(parse_letter(f.raw, k.split("_")[0]) == s.predicted for f, s in zip(got["full"], got[k], strict=True)) / n  # type: ignore[arg-type]
             for k in runs if k != "full"}

    def tokens(key: str) -> float:  # a row's first token comes from its prefill, the others from decoding passes
        return (work[key][1] + n) / n

    slow = max(("strict", "reference"), key=tokens)  # the slower parse mode: its rows stop later (not the noisier time)

    speedup = best["full"] / best[slow]
    ceiling = tokens("full") / tokens(slow)
    figures: dict[str, object] = {
        "max_new_tokens": a.max_new_tokens, "generate_stop_reps": reps, "generate_stop_times_s": times,
        "generate_stop_strict_qps": round(n / best["strict"], 3), "generate_stop_reference_qps": round(n / best["reference"], 3),
        "generate_stop_speedup": round(speedup, 2), "generate_stop_slower_mode": slow,
        "generate_row_tokens_full": round(tokens("full"), 1), "generate_row_tokens_stop_strict": round(tokens("strict"), 1),
        "generate_row_tokens_stop_reference": round(tokens("reference"), 1),
        "generate_decode_passes_full": work["full"][0], "generate_decode_passes_stop_strict": work["strict"][0],
        "generate_decode_passes_stop_reference": work["reference"][0],
        "generate_stop_ceiling": round(ceiling, 2), "generate_stop_of_ceiling": round(speedup / ceiling, 2),
        "generate_stop_pass_ratio": round(work["full"][0] / work[slow][0], 2),
        "generate_stop_of_pass_ceiling": round(speedup / (work["full"][0] / work[slow][0]), 2),
        "generate_s_per_pass_full": round(best["full"] / work["full"][0], 4),
        "generate_s_per_pass_stop": round(best[slow] / work[slow][0], 4),
        "generate_new_tokens_full": round(_new_tokens(tok, got["full"]), 1),
        "generate_new_tokens_stop_strict": round(_new_tokens(tok, got["strict"]), 1),
        "generate_new_tokens_stop_reference": round(_new_tokens(tok, got["reference"]), 1),
        "generate_stop_agreement_strict": round(min(v for k, v in agree.items() if k.startswith("strict")), 3),
        "generate_stop_agreement_reference": round(min(v for k, v in agree.items() if k.startswith("reference")), 3),
        "generate_parse_modes_disagree": round(sum(parse_letter(f.raw, "strict") != parse_letter(f.raw, "reference") for f in got["full"]) / n, 3),
    }
    if static:
        figures["generate_stop_speedup_static"] = round(best["full"] / max(best["strict_static"], best["reference_static"]), 2)
        figures["generate_stop_static_strict_qps"] = round(n / best["strict_static"], 3)
        figures["generate_stop_static_reference_qps"] = round(n / best["reference_static"], 3)
    goals = {"generate_stop_agreement_strict": ">= 1.0", "generate_stop_agreement_reference": ">= 1.0",
             "generate_stop_of_pass_ceiling": STOP_OF_CEILING_GOAL}
    figures["_full_s"] = best["full"]
    return figures, goals


def _new_tokens(tok: Any, scored: Sequence[Any]) -> float:
    """The completions' tokens, re-encoded from their text (as the figures of earlier turns counted them)."""
    return float(sum(len(tok.encode(x.raw, add_special_tokens=False)) for x in scored) / len(scored))


def demo_rows(per_lang: int) -> list[QuestionRow]:
    rows: list[QuestionRow] = []
    for f in sorted((ROOT / "tests/fixtures/demo_questions").glob("*.jsonl")):
        lang = [QuestionRow.model_validate_json(line) for line in f.read_text(encoding="utf-8").splitlines() if line]
        rows += lang[:per_lang]
    return rows


def continuous_vs_static(a: argparse.Namespace) -> tuple[dict[str, object], dict[str, str]]:
    """`generate` on the demo's questions: now (continuous, the automatic batch) against before (static batches of
    `--baseline-batch-size`), and static batches at the automatic size; alternating, best of each."""
    target = TargetSettings(name=Path(a.instruct_model).name, model=a.instruct_model, kind="instruct")
    device = resolve_device(a.device)
    model, tok = load_target(target, data_dir=a.data_dir, device=device)
    rows = demo_rows(a.demo_n)
    prompts = [render_mcq(target, tok, r.question, r.options, r.lang) for r in rows]
    size = a.demo_batch_size or BatchSizer.for_job(GpuSettings(), device, name=ScorerName.generate.value).size
    score_generate(model, tok, prompts[:4], batch_size=2, max_new_tokens=2)  # warm
    runs = {  # key: (continuous, shared prefixes, batch size)
        "static": (False, False, a.baseline_batch_size), "static_same_batch": (False, False, size),
        "continuous": (True, True, size), "unshared": (True, False, size),
    }
    if size == a.baseline_batch_size:
        del runs["static_same_batch"]
    best = dict.fromkeys(runs, float("inf"))
    got: dict[str, list] = {}  # type: ignore[type-arg]
    for _ in range(a.demo_reps):
        for key, (cont, share, batch) in runs.items():
            t = time.perf_counter()
            got[key] = score_generate(model, tok, prompts, batch_size=batch, max_new_tokens=a.max_new_tokens,
                                      continuous=cont, share_prefixes=share)
            best[key] = min(best[key], time.perf_counter() - t)
            print(f"demo {key} (batch {batch}): {time.perf_counter() - t:.1f}s", file=sys.stderr, flush=True)
    n = len(prompts)
    same_batch = best.get("static_same_batch", best["static"])

    def same_as_static(key: str, field: str) -> float:
        """The share of questions where run `key` gives static batches' `field` (the letter, or the whole text)."""
        return sum(getattr(x, field) == getattr(y, field) for x, y in zip(got["static"], got[key], strict=True)) / n

    figures: dict[str, object] = {
        "demo_model": target.model, "demo_questions": n, "demo_max_new_tokens": a.max_new_tokens,
        "demo_baseline_batch_size": a.baseline_batch_size, "demo_batch_size": size,
        "demo_static_s": round(best["static"], 1), "demo_static_same_batch_s": round(same_batch, 1),
        "demo_continuous_s": round(best["continuous"], 1), "demo_unshared_s": round(best["unshared"], 1),
        "demo_static_qps": round(n / best["static"], 3), "demo_continuous_qps": round(n / best["continuous"], 3),
        "demo_continuous_speedup": round(best["static"] / best["continuous"], 2),
        "demo_equal_batch_speedup": round(same_batch / best["continuous"], 2),
        "demo_unshared_equal_batch_speedup": round(same_batch / best["unshared"], 2),
        "demo_unshared_agreement": round(same_as_static("unshared", "predicted"), 3),
        "demo_continuous_agreement": round(same_as_static("continuous", "predicted"), 3),
        "demo_continuous_same_text": round(same_as_static("continuous", "raw"), 3),
    }
    if "static_same_batch" in got:
        figures["demo_static_same_batch_agreement"] = round(same_as_static("static_same_batch", "predicted"), 3)
    return figures, {"demo_continuous_speedup": ">= 1.5", "demo_continuous_agreement": ">= 1.0"}


def synthetic(a: argparse.Namespace, model: Any, tok: Any, target: TargetSettings, device: str) -> tuple[dict[str, object], dict[str, str]]:
    """The scorers on `--n` synthetic questions: letter-logprob, option-loglik, and `generate` run to the end and
    stopped (`stopping`)."""
    mcqs = synthetic_mcqs(a.n)
    prompts = [render_mcq(target, tok, q, o, lang) for q, o, lang in mcqs]
    items = [loglik_item(target, tok, q, o, lang) for q, o, lang in mcqs]
    warm = prompts[: a.batch_size]
    score_letter_logprob(model, tok, warm, batch_size=a.batch_size)
    bare_forward(model, tok, warm, a.batch_size)
    score_generate(model, tok, warm[:2], batch_size=2, max_new_tokens=2)
    score_option_loglik(model, tok, items[:2], batch_size=2)
    if a.only == "stop":
        return stopping_figures(model, tok, prompts, a, reps=a.stop_reps, static=False)
    reps = 3 if device.startswith("cuda") else 1  # on CPU: run the whole bench twice instead
    t_fwd = timed(lambda: bare_forward(model, tok, prompts, a.batch_size), reps)
    t_lp = timed(lambda: score_letter_logprob(model, tok, prompts, batch_size=a.batch_size), reps)
    got: dict[str, list[Any]] = {}

    def run(key: str, fn: Callable[[], list[Any]]) -> Callable[[], None]:
        def go() -> None:
            t = time.perf_counter()
            got[key] = fn()
            print(f"{key}: {time.perf_counter() - t:.1f}s", file=sys.stderr, flush=True)
        return go

    # the two option-loglik variants alternate, 3 times each, best of each: a shared machine's load shifts
    t_ll = t_ll_whole = float("inf")
    for _ in range(3):
        t_ll = min(t_ll, timed(run("ll", lambda: score_option_loglik(model, tok, items, batch_size=a.batch_size))))
        t_ll_whole = min(t_ll_whole, timed(run("ll_whole", lambda: score_option_loglik(
            model, tok, items, batch_size=a.batch_size, share_prefix=False))))
    ll_agree = sum(x.acc == y.acc and x.acc_norm == y.acc_norm for x, y in zip(got["ll"], got["ll_whole"], strict=True)) / len(items)
    figures, goals = stopping_figures(model, tok, prompts, a, reps=a.stop_reps)
    t_gen = float(figures.pop("_full_s"))  # type: ignore[arg-type]
    n = len(prompts)
    figures |= {
        "generate_qps": round(n / t_gen, 3), "letter_logprob_qps": round(n / t_lp, 3), "bare_forward_qps": round(n / t_fwd, 3),
        "letter_logprob_vs_forward": round(t_fwd / t_lp, 3), "letter_logprob_speedup_over_generate": round(t_gen / t_lp, 2),
        "option_loglik_qps": round(n / t_ll, 3), "option_loglik_whole_qps": round(n / t_ll_whole, 3),
        "option_loglik_shared_speedup": round(t_ll_whole / t_ll, 2), "option_loglik_shared_agreement": round(ll_agree, 3),
    }
    goals |= {"letter_logprob_vs_forward": ">= 0.9", "option_loglik_shared_agreement": ">= 0.98", "option_loglik_shared_speedup": ">= 1.2"}
    return figures, goals


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    add_target_args(p)
    p.add_argument("--n", type=int, default=24)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--only", choices=["all", "synthetic", "stop", "demo"], default="all",
                   help="stop: only generate run to the end against stopped at the letter (continuous batches)")
    p.add_argument("--stop-reps", type=int, default=1, help="alternating repetitions of the stopping part (best of each)")
    p.add_argument("--instruct-model", default="embedded:smollm2-135m-instruct")
    p.add_argument("--demo-n", type=int, default=20, help="questions per language of the demo's (53 each: all)")
    p.add_argument("--demo-reps", type=int, default=1)
    p.add_argument("--demo-batch-size", type=int, default=None, help="generate's batch now (unset: the automatic size)")
    p.add_argument("--baseline-batch-size", type=int, default=8, help="the static batches generate ran before")
    a = p.parse_args()
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    figures: dict[str, object] = {}
    goals: dict[str, str] = {}
    if a.only in ("all", "synthetic", "stop"):
        target = target_from_args(a)
        device = resolve_device(a.device)
        model, tok = load_target(target, data_dir=a.data_dir, device=device)
        figures, goals = synthetic(a, model, tok, target, device)
        figures = {"model": target.model, "device": device, "questions": a.n, "batch_size": a.batch_size, **figures}
        figures.pop("_full_s", None)
    if a.only in ("all", "demo"):
        extra = continuous_vs_static(a)
        figures |= extra[0]
        goals |= extra[1]
    figures["threads"] = torch.get_num_threads()
    met = all(float(figures[k]) >= float(v.split()[1]) for k, v in goals.items())  # type: ignore[arg-type]
    print(json.dumps({"bench": "eval", "figures": figures, "goals": goals, "met": met}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
