"""Bench: scoring throughput of the two scorers against a bare forward pass over the same prompts.

Figures (questions/s): `generate` (greedy, up to --max-new-tokens = 64 new tokens, the reference's setting),
`letter-logprob` (one forward pass per prompt, last position only), and a bare forward pass computing every
position's logits (the limit). Goal: letter-logprob >= 0.9 of the bare-forward rate. Also its speedup over
`generate`. Ends with one JSON line; about 2-4 minutes on 2 CPU cores with Gemma 3 270M.

    .venv/bin/python bench/eval.py [--model embedded:gemma-3-270m] [--n 24] [--device auto]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.support.targets import add_target_args, synthetic_mcqs, target_from_args  # noqa: E402
from clkt.evaluate.prompts import render_mcq  # noqa: E402
from clkt.evaluate.scorers import _batches, _positions, score_generate, score_letter_logprob  # noqa: E402
from clkt.targets.loader import load_target, resolve_device  # noqa: E402
from clkt.targets.prompting import encode_left_padded  # noqa: E402


def bare_forward(model, tok, prompts, batch_size: int) -> None:  # type: ignore[no-untyped-def]
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


def timed(fn, reps: int = 1) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(reps):
        _sync()
        t = time.perf_counter()
        fn()
        _sync()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    add_target_args(p)
    p.add_argument("--n", type=int, default=24)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=64)
    a = p.parse_args()
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    target = target_from_args(a)
    device = resolve_device(a.device)
    model, tok = load_target(target, data_dir=a.data_dir, device=device)
    prompts = [render_mcq(target, tok, q, o, lang) for q, o, lang in synthetic_mcqs(a.n)]
    warm = prompts[: a.batch_size]
    score_letter_logprob(model, tok, warm, batch_size=a.batch_size)
    bare_forward(model, tok, warm, a.batch_size)
    score_generate(model, tok, warm[:2], batch_size=2, max_new_tokens=2)
    reps = 3 if device.startswith("cuda") else 2
    t_fwd = timed(lambda: bare_forward(model, tok, prompts, a.batch_size), reps)
    t_lp = timed(lambda: score_letter_logprob(model, tok, prompts, batch_size=a.batch_size), reps)
    t_gen = timed(lambda: score_generate(model, tok, prompts, batch_size=a.batch_size, max_new_tokens=a.max_new_tokens))
    n = len(prompts)
    figures = {
        "model": target.model, "device": device, "questions": n, "batch_size": a.batch_size,
        "generate_qps": round(n / t_gen, 3), "letter_logprob_qps": round(n / t_lp, 3), "bare_forward_qps": round(n / t_fwd, 3),
        "letter_logprob_vs_forward": round(t_fwd / t_lp, 3), "letter_logprob_speedup_over_generate": round(t_gen / t_lp, 2),
        "max_new_tokens": a.max_new_tokens,
    }
    goals = {"letter_logprob_vs_forward": ">= 0.9"}
    met = figures["letter_logprob_vs_forward"] >= 0.9
    print(json.dumps({"bench": "eval", "figures": figures, "goals": goals, "met": met}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
