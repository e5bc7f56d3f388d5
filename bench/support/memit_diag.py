"""Diagnostic for the `memit` strategy (issue 31): on a copy of a demo snapshot, build the train language's edit
requests, edit the embedded Gemma 3 270M with `Memit.apply` and score the test questions of that language (and the
locality split in every language) with `option-loglik` before and after: Learn (gained / lost / exact McNemar p)
per scorer, kept % on the locality split, and the edit's wall time. The base answers are cached in `--work`.

    nice -n 19 .venv/bin/python bench/support/memit_diag.py --snapshot /tmp/x/snap --model /tmp/.../gemma-3-270m \
        [--entities N] [--work /tmp/memit-diag] [--show]

`--entities N`: only the first N real entities' documents are edited and their questions scored (the control
split's documents are always edited, as in a job). Not a bench: a tool to iterate on the editing method.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _score(model: Any, tok: Any, rows: list[Any], variant: Any) -> dict[tuple[int, str, str], bool]:
    from clkt.config import GpuSettings, TargetSettings
    from clkt.evaluate.runner import answer_questions

    target = TargetSettings(name="gemma-3-270m", model="embedded:gemma-3-270m")
    gpu = GpuSettings(devices=["cpu"], scorers=["option-loglik"])
    got = answer_questions(model, tok, target, rows, scorers=["option-loglik"], gpu=gpu, variant=variant)
    return {(r.qid, r.lang, r.scorer): bool(r.correct) for r in got}


def _learn(base: dict[Any, bool], inj: dict[Any, bool], keys: list[Any]) -> dict[str, Any]:
    from clkt.report.stats import mcnemar_exact

    g = sum(1 for k in keys if inj[k] and not base[k])
    lost = sum(1 for k in keys if base[k] and not inj[k])
    return {"n": len(keys), "base": round(sum(base[k] for k in keys) / max(1, len(keys)), 3),
            "injected": round(sum(inj[k] for k in keys) / max(1, len(keys)), 3), "gained": g, "lost": lost,
            "p": float(f"{mcnemar_exact(g, lost):.3g}")}


def main() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from clkt.evaluate.results import Variant
    from clkt.inject.editing.arch import num_layers
    from clkt.inject.editing.covariance import key_stats
    from clkt.inject.editing.requests import build_requests, parse_facts
    from clkt.inject.strategies.memit import Memit, edit_layers
    from clkt.snapshots.layout import load_snapshot_dir

    ap = argparse.ArgumentParser()
    ap.add_argument("--snapshot", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=Path("/tmp/memit-diag"))
    ap.add_argument("--entities", type=int, default=0)
    ap.add_argument("--lang", default="en")
    ap.add_argument("--no-control", action="store_true", help="leave the control split's documents out")
    ap.add_argument("--stats-tokens", type=int, default=0, help="read at most this many tokens for the statistics")
    ap.add_argument("--show", action="store_true", help="print the requests")
    args = ap.parse_args()
    torch.manual_seed(0)
    if args.stats_tokens:
        from clkt.inject.editing import covariance

        covariance.MAX_TOKENS = args.stats_tokens
    args.work.mkdir(parents=True, exist_ok=True)
    data = load_snapshot_dir(args.snapshot, verify_hashes=False)
    docs = data.docs_for(args.lang)
    if args.entities:
        docs = docs[: args.entities]
    keep = {d.entity_id for d in docs}
    if not args.no_control:
        docs = docs + data.control_docs_for(args.lang)
    facts, _bad = parse_facts(data.facts)
    slots: dict[int, set[str]] = {}
    for q in data.questions.get(args.lang, []):
        slots.setdefault(q.entity_id, set()).add(q.slot)
    reqs = build_requests(docs, facts, slots=slots)
    if args.show:
        for r in reqs.requests:
            print(f"  [{r.subject}] {r.prompt!r} -> {r.target!r}")
    tests = [q for q in data.questions_for(args.lang, "test") if q.entity_id in keep]
    local = [q for lang in data.languages for q in data.locality_questions_for(lang, "gemma-3-270m")]
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.float32).eval()
    cache = args.work / "base.json"
    base: dict[Any, bool] = {}
    if cache.is_file():
        base = {tuple(k): v for k, v in json.loads(cache.read_text())}
    todo = [q for q in tests + local if (q.qid, q.lang, "option-loglik") not in base]
    if todo:
        base.update(_score(model, tok, todo, Variant.base))
        cache.write_text(json.dumps([[list(k), v] for k, v in base.items()]))
    layers = Memit.LAYERS if Memit.LAYERS is not None else edit_layers(num_layers(model))
    texts = [d.text for lang in data.languages for d in (*data.docs_for(lang), *data.control_docs_for(lang))]
    t0 = time.monotonic()
    stats = key_stats(model, tok, layers, texts=texts, root=args.work / "stats", name="gemma-3-270m", source="diag", device="cpu")
    t1 = time.monotonic()
    record = Memit().apply(model, tok, reqs, layers, {k: s.second_moment for k, s in stats.items()}, device="cpu")
    t2 = time.monotonic()
    inj = _score(model, tok, tests + local, Variant.injected)
    out: dict[str, Any] = {"requests": len(reqs.requests), "subjects": reqs.subjects, "entities": len(keep),
                           "stats_s": round(t1 - t0, 1), "edit_s": round(t2 - t1, 1),
                           "record": {k: record.get(k) for k in ("target_nll_before", "target_nll_at_z", "written", "z_steps_run")}}
    for scorer in ("option-loglik-norm", "option-loglik"):
        keys = [(q.qid, q.lang, scorer) for q in tests]
        out[f"learn[{scorer}]"] = _learn(base, inj, keys)
        lk = [(q.qid, q.lang, scorer) for q in local if base[(q.qid, q.lang, scorer)]]
        out[f"kept[{scorer}]"] = {"right_before": len(lk), "kept": sum(inj[k] for k in lk)}
    if os.environ.get("DIAG_PER_Q"):
        for q in tests:
            k = (q.qid, q.lang, "option-loglik-norm")
            print(f"  {int(base[k])}->{int(inj[k])} {q.slot:14s} {q.question[:90]}")
    out["uptime"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
