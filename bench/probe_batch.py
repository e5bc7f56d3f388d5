"""What a recognition probe costs per prompt by batch size: the daemon's `probe_texts` (greedy, `--tokens` new
tokens) on the probe prompts of synthetic entities in two languages, for each embedded target, at batch sizes
2, 8 and 16, side by side in one process (the sizes alternate, `--repeats` rounds, the fastest round kept).

Why (issue 50): in `bench/year.py` the daemon's probes take about one core beside the GPU jobs, in batches of about
two prompts (entities trickle in); decoding a small batch on the CPU is bound by reading the weights once per step,
so a batch of 8 should cost far less per prompt than a batch of 2. The goal states that premise: a prompt in a
batch of 8 costs at most half of one in a batch of 2.

    python bench/probe_batch.py [--tokens 16] [--threads 1] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clkt.config import TargetSettings
from clkt.targets.summary import build_probe_prompt, probe_texts

TARGETS = ("gemma-3-270m", "smollm2-135m-instruct")
SIZES = (2, 8, 16)
_NAMES = ["Velmora Tide", "Quenford Derby", "Oskarel Lights", "Partenza Nord", "Ilsbrook Quake", "Marrow & Finch",
          "The Glass Orchard", "Harbour of Nine Bells"]


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=16, help="new tokens per probe answer (bench/year.py's: 16)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the daemon's beside a CPU job: 1)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "clkt-test-data")
    return ap.parse_args()


def per_prompt_s(target: TargetSettings, prompts: list[str], size: int, *, data_dir: Path, tokens: int) -> float:
    """Seconds per prompt for `prompts` answered in batches of `size`."""
    t0 = time.perf_counter()
    for i in range(0, len(prompts), size):
        probe_texts(target, prompts[i : i + size], data_dir=data_dir, max_new_tokens=tokens)
    return (time.perf_counter() - t0) / len(prompts)


def main() -> None:
    import torch

    a = _args()
    torch.set_num_threads(a.threads)
    figures: dict[str, object] = {"tokens": a.tokens, "threads": a.threads, "repeats": a.repeats}
    goals: dict[str, str] = {}
    met = True
    for name in TARGETS:
        target = TargetSettings(name=name, model=f"embedded:{name}", kind="instruct" if "instruct" in name else "base")
        prompts = [build_probe_prompt(target, n, lang) for n in _NAMES for lang in ("en", "fr")]
        probe_texts(target, prompts[:2], data_dir=a.data_dir, max_new_tokens=a.tokens)  # load and warm up
        best = {s: float("inf") for s in SIZES}
        for _ in range(a.repeats):
            for s in SIZES:
                best[s] = min(best[s], per_prompt_s(target, prompts, s, data_dir=a.data_dir, tokens=a.tokens))
        ratio = best[8] / best[2]
        figures[name] = {f"s_per_prompt_batch_{s}": round(v, 3) for s, v in best.items()} | {
            "batch8_over_batch2": round(ratio, 3), "prompts": len(prompts)}
        goals[f"{name}.batch8_over_batch2"] = "<= 0.5"
        met = met and ratio <= 0.5
    figures["load_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps({"bench": "probe_batch", "figures": figures, "goals": goals, "met": met}))


if __name__ == "__main__":
    main()
