"""Bench: does the instrument measure? The embedded target on a control-only snapshot.

A snapshot holding only the control split (fictional entities no model can know; `--per-domain` per domain,
>= 100 questions per language) goes through the real GPU job (`clkt.inject.job.InjectionJob`) with the demo's
settings (`[gpu]` of the embedded default: lr 2e-3; `--lr` overrides) for the paper's 5 epochs (`--epochs`): base answers, LoRA injection of
the train-language documents, injected answers in every language, scored as the target's kind says
(option-loglik for the base model). Figures:

- learn: accuracy in the train language before and after injection on the same questions, the gain, its
  exact McNemar p and the Wilson 95% intervals (n = questions);
- transfer: Transfer = A/(A+B) per test language (A: right in the train and the test language, B: right in
  the train language only), their mean, and a seeded bootstrap 95% CI of the mean (resampling questions);
- runtime: wall seconds of the whole job, and of its phases.

Goals: learn gain >= 0.25 absolute with p < 0.001, on >= 100 questions. Ends with one JSON line. Cost: about
(questions x languages x 2) option-loglik answers plus 5 epochs over 4 x per-domain documents. Measured with
`--languages en,fr` (120 questions) on 2 CPU cores: attention-only LoRA at 2e-3, 3 epochs 221 s (gain +0.20,
p 7e-4: gain goal missed), 5 epochs 272 s (gain +0.39, p 1e-9); LoRA on every linear layer (the demo's
default now), 5 epochs: 430 s at load average 5.5 (gain +0.57, p 5e-16, Transfer fr 0.77 [0.68, 0.85]).

    .venv/bin/python bench/validity.py [--per-domain 4] [--train-lang en] [--epochs E] [--lr LR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.support.targets import add_target_args, target_from_args  # noqa: E402
from clkt.config import load_settings  # noqa: E402
from clkt.evaluate.results import ResultItem, Variant  # noqa: E402
from clkt.inject.contract import JobSpec  # noqa: E402
from clkt.inject.job import InjectionJob  # noqa: E402
from clkt.report.learn import learn_stat  # noqa: E402
from clkt.snapshots.control_only import write_control_snapshot  # noqa: E402
from clkt.snapshots.layout import load_snapshot_dir  # noqa: E402

GOAL_GAIN = 0.25
GOAL_P = 0.001
GOAL_N = 100
BOOTSTRAP = 2000


def _scorer(items: list[ResultItem]) -> str:
    have = {r.scorer for r in items}
    for s in ("option-loglik", "letter-logprob", "generate"):
        if s in have:
            return s
    return sorted(have)[0]


def transfer(injected: dict[tuple[int, str], bool], qids: list[int], train: str, tests: list[str]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for lang in tests:
        a = sum(injected[(q, train)] and injected[(q, lang)] for q in qids)
        b = sum(injected[(q, train)] and not injected[(q, lang)] for q in qids)
        out[lang] = a / (a + b) if a + b else None
    return out


def _mean(xs: list[float | None]) -> float | None:
    v = [x for x in xs if x is not None]
    return sum(v) / len(v) if v else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(p)
    p.add_argument("--per-domain", type=int, default=4, help="control entities per domain (4: about 120 questions)")
    p.add_argument("--languages", default="en,ja,zh,fr,es")
    p.add_argument("--train-lang", default="en")
    p.add_argument("--epochs", type=int, default=5, help="the paper's 5 (the demo's too)")
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    langs = a.languages.split(",")
    if a.train_lang not in langs:
        p.error(f"--train-lang {a.train_lang} is not one of --languages {langs}")
    demo = load_settings(None, environ={})
    gpu = demo.gpu
    upd: dict[str, object] = {"devices": [a.device]}
    if a.epochs is not None:
        upd["epochs"] = a.epochs
    if a.lr is not None:
        upd["learning_rate"] = a.lr
    if a.threads:
        upd["torch_threads"] = a.threads
    gpu = gpu.model_copy(update=upd)
    target = target_from_args(a)
    with tempfile.TemporaryDirectory(prefix="clkt-validity-") as tmp:
        snap = write_control_snapshot(
            Path(tmp) / "snapshot", spec="validity", period="2026-11", seed=a.seed, start=date(2026, 11, 1),
            end=date(2026, 12, 1), languages=langs, domains=["movies", "music", "sports", "disasters"],
            per_domain=a.per_domain,
        )
        data = load_snapshot_dir(snap)
        n_questions = len(data.control_questions_for(a.train_lang))
        spec = JobSpec(
            job_id=1, snapshot_id=data.manifest.snapshot_id, snapshot_dir=snap, target=target, strategy="cpt-lora",
            train_lang=a.train_lang, gpu=gpu, data_dir=a.data_dir, artifacts_dir=Path(tmp) / "job", device=a.device,
        )
        spec.artifacts_dir.mkdir()
        t0 = time.perf_counter()
        outcome = InjectionJob(spec).run()
        runtime = time.perf_counter() - t0
    items = outcome.control_results
    scorer = _scorer(items)
    got = {(r.qid, r.lang, r.variant): r.correct for r in items if r.scorer == scorer}
    qids = sorted({r.qid for r in items if r.lang == a.train_lang})
    stat = learn_stat([(got[(q, a.train_lang, Variant.base)], got[(q, a.train_lang, Variant.injected)]) for q in qids])
    injected = {(q, lang): c for (q, lang, v), c in got.items() if v is Variant.injected}
    tests = [lang for lang in langs if lang != a.train_lang]
    per_lang = transfer(injected, qids, a.train_lang, tests)
    mean = _mean(list(per_lang.values()))
    rng = random.Random(a.seed)
    boots: list[float] = []
    for _ in range(BOOTSTRAP):
        sample = [rng.choice(qids) for _ in qids]
        m = _mean(list(transfer(injected, sample, a.train_lang, tests).values()))
        if m is not None:
            boots.append(m)
    boots.sort()
    ci = [boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]] if boots else None
    base_by_lang = {
        lang: round(sum(got[(q, lang, Variant.base)] for q in qids) / len(qids), 3) for lang in langs
    }
    inj_by_lang = {lang: round(sum(injected[(q, lang)] for q in qids) / len(qids), 3) for lang in langs}

    def r3(x: float | None) -> float | None:
        return None if x is None else round(x, 3)

    figures = {
        "model": target.model, "device": outcome.device, "scorer": scorer, "train_lang": a.train_lang,
        "epochs": gpu.epochs, "learning_rate": gpu.learning_rate, "target_modules": gpu.target_modules or "attention",
        "best_epoch": outcome.best_epoch,
        "n_questions": n_questions, "control_entities": len(data.control_docs_for(a.train_lang)),
        "learn_base_accuracy": r3(stat.base_accuracy), "learn_injected_accuracy": r3(stat.injected_accuracy),
        "learn_base_ci": [round(x, 3) for x in stat.base_ci or ()], "learn_injected_ci": [round(x, 3) for x in stat.injected_ci or ()],
        "learn_gain": r3(stat.gain), "learn_gained": stat.gained, "learn_lost": stat.lost, "learn_p": float(f"{stat.p_value:.3g}"),
        "transfer_by_lang": {k: r3(v) for k, v in per_lang.items()}, "transfer_mean": r3(mean),
        "transfer_mean_ci95": [round(x, 3) for x in ci] if ci else None, "transfer_bootstrap": BOOTSTRAP,
        "base_accuracy_by_lang": base_by_lang, "injected_accuracy_by_lang": inj_by_lang,
        "runtime_s": round(runtime, 1), "epoch_seconds": [round(e.seconds, 1) for e in outcome.epochs],
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }
    met = (
        n_questions >= GOAL_N and stat.gain is not None and stat.gain >= GOAL_GAIN and stat.p_value < GOAL_P
    )
    print(
        f"learn ({a.train_lang}, n={n_questions}): {stat.base_accuracy:.3f} -> {stat.injected_accuracy:.3f}, "
        f"gain {stat.gain:+.3f}, McNemar p = {stat.p_value:.2g}; transfer mean {mean if mean is None else round(mean, 3)} "
        f"(95% CI {figures['transfer_mean_ci95']}); runtime {runtime:.0f} s",
        file=sys.stderr,
    )
    goals = {"learn_gain": f">= {GOAL_GAIN}", "learn_p": f"< {GOAL_P}", "n_questions": f">= {GOAL_N}"}
    print(json.dumps({"bench": "validity", "figures": figures, "goals": goals, "met": met}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
