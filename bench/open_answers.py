"""Bench: the open track (issue 47) on the demo snapshot with the embedded target.

Takes the folder of a finished `clkt demo` (`--from DIR`), copies it (the converted models linked, not copied:
`bench.seeds`), removes the copy's jobs of the strategy (`--strategy`, default `cpt-lora`) and the shared base
answers, cancels the copy's unfinished jobs of any other strategy (`bench.seeds._reset`), enqueues the job
again (train language `--train`, default en; training seed `--seed`, default 0, as seed N of `[spec] seeds`;
`[gpu] open_answers = true`, which the demo's config leaves off) and runs it with `clkt worker --burst`, timed. Then, from the
store, through the report's open-track figures (`clkt.report.open_track`, the MCQ track's metric functions):

- the open-answer Learn in the train language: n, base and injected accuracy, gained / lost, exact McNemar p
  (goal: p < 0.01, `LEARN_P_GOAL`);
- the share answered in another language per test language, base and injected, with n;
- the job's open pass: questions x languages asked per variant and its seconds (`JobSummary.open_answer_s`) against
  the job's wall time;
- the checkpoints: the MCQ track's epoch (`best_epoch`) and the open track's (`open_epoch`, chosen on the
  snapshot's open validation questions, `clkt.inject.open_val`; None where the snapshot has none), with every
  epoch's loss and validation scores.

With `--throughput`, the embedded target (base weights) also answers the same facts both ways in this process:
the snapshot's test-split MCQs with each of its scorers (`clkt.evaluate.runner.answer_questions`) and its open
questions (`clkt.openqa.generate.generate_answers`), timed; questions per second of each.

Ends with one JSON line. The job takes minutes on 2 idle CPU cores (the demo's job time plus the open pass); run
it on a quiet machine.

    .venv/bin/python bench/open_answers.py --from DIR [--train en] [--strategy S] [--epochs N]
        [--learning-rate LR] [--seed 0] [--timeout-min 90] [--throughput]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.seeds import STRATEGY, _config, _copy_demo, _enqueue, _reset, _worker  # noqa: E402
from clkt.config import load_settings  # noqa: E402
from clkt.config.strategies import BUILTIN_STRATEGIES  # noqa: E402
from clkt.evaluate.summary import JobSummary  # noqa: E402
from clkt.report.metrics import ALL_DOMAINS  # noqa: E402
from clkt.report.open_track import OpenTrack, open_track  # noqa: E402
from storage.engine import Store  # noqa: E402
from storage.gpu_jobs import jobs_for_snapshot  # noqa: E402
from storage.open_results import open_results_for_snapshot  # noqa: E402
from storage.snapshots import find_snapshot  # noqa: E402

LEARN_P_GOAL = 0.01  # the open-answer Learn in the train language: exact McNemar p under this


def learn_figures(track: OpenTrack | None, train: str) -> dict[str, Any]:
    """The open-answer Learn of the train language (all domains pooled): n, accuracies, gained / lost, p."""
    tests = [t for t in (track.learn if track else []) if t.domain == ALL_DOMAINS and t.train_lang == train]
    if not tests:
        return {"open_learn_n": 0, "open_learn_p": None, "open_learned": False}
    st = tests[0].stat
    return {"open_learn_n": st.n, "open_learn_base_accuracy": st.base_accuracy,
            "open_learn_injected_accuracy": st.injected_accuracy, "open_learn_gained": st.gained,
            "open_learn_lost": st.lost, "open_learn_p": st.p_value, "open_learned": tests[0].learned,
            "open_learn_injected_ci": st.injected_ci}


def other_language_figures(track: OpenTrack | None) -> dict[str, dict[str, Any]]:
    """variant -> test language -> {n, other, share}: the answers the normaliser found in another language."""
    out: dict[str, dict[str, Any]] = {}
    for o in track.other_language if track else []:
        out.setdefault(o.variant, {})[o.lang] = {"n": o.n, "other": o.other, "share": round(o.share, 4)}
    return out


def goals_met(figures: dict[str, Any]) -> bool:
    p = figures.get("open_learn_p")
    return p is not None and p < LEARN_P_GOAL and figures.get("open_learn_n", 0) > 0


def per_second(n: int, seconds: float) -> float | None:
    return round(n / seconds, 3) if seconds > 0 else None


async def _measure(cfg: Path, sid: str, train: str, strategy: str) -> dict[str, Any]:
    settings = load_settings(cfg, environ={})
    async with Store(url=settings.resolved_store_url) as store, store.session() as s:
        jobs = [j for j in await jobs_for_snapshot(s, sid) if j.strategy == strategy and j.train_lang == train]
        # the bench's job only (a copied demo's finished job of another strategy is not this run's)
        rows = [r for r in await open_results_for_snapshot(s, sid) if r.job_id in {j.id for j in jobs}]
    track = await asyncio.to_thread(open_track, rows, languages=list(settings.spec.languages), snapshot_id=sid)
    figures = learn_figures(track, train) | {"other_language": other_language_figures(track), "open_answers": len(rows)}
    summary = JobSummary.from_stored(jobs[-1].summary) if jobs else None
    if summary is not None:
        figures |= {"open_questions_per_variant": summary.open_questions, "open_answer_s": summary.open_answer_s,
                    "job_wall_s": summary.wall_s, "best_epoch": jobs[-1].best_epoch, "open_epoch": summary.open_epoch,
                    "open_val_questions": summary.open_val_questions,
                    "epochs_val": [{"epoch": e.epoch, "loss": round(e.loss, 4), "mcq_val": e.val_accuracy,
                                    "open_val": e.open_val_accuracy, "open_val_loglik": e.open_val_loglik}
                                   for e in summary.epochs]}
    return figures


def _throughput(cfg: Path, sid: str, export: Path) -> dict[str, Any]:
    """The embedded target's base weights answering the same snapshot both ways, timed (questions per second)."""
    from clkt.evaluate.memory import BatchSizer
    from clkt.evaluate.results import Variant
    from clkt.evaluate.runner import answer_questions
    from clkt.evaluate.scorers import scorers_for
    from clkt.openqa.frozen import load_open_questions
    from clkt.openqa.generate import OpenPrompt, generate_answers
    from clkt.snapshots.layout import load_snapshot_dir
    from clkt.targets.loader import load_target

    settings = load_settings(cfg, environ={})
    target, gpu = settings.spec.targets[0], settings.gpu
    data = load_snapshot_dir(export)
    rows = [r for lang in data.languages for r in data.questions_for(lang, "test")]
    opens = [OpenPrompt(question=q.question.questions[lang], lang=lang)
             for q in load_open_questions(export) for lang in data.languages if lang in q.question.golds]
    model, tok = load_target(target, data_dir=settings.data_dir, device="cpu")
    out: dict[str, Any] = {"mcq_questions": len(rows), "open_prompts": len(opens)}
    for scorer in scorers_for(target, gpu):
        t0 = time.perf_counter()
        answer_questions(model, tok, target, rows, scorers=[scorer], gpu=gpu, variant=Variant.base, phase="bench")
        out[f"mcq_{scorer}_per_s"] = per_second(len(rows), time.perf_counter() - t0)
    t0 = time.perf_counter()
    generate_answers(model, tok, target, opens, sizer=BatchSizer.for_job(gpu, "cpu", name="generate"))
    out["open_per_s"] = per_second(len(opens), time.perf_counter() - t0)
    return out


async def _export_path(cfg: Path, sid: str) -> Path:
    settings = load_settings(cfg, environ={})
    async with Store(url=settings.resolved_store_url) as store, store.session() as s:
        snap = await find_snapshot(s, sid)
    if snap is None or not snap.export_path:
        raise SystemExit(f"snapshot {sid} has no export folder")
    return Path(snap.export_path)


def _train_overrides(cfg: Path, *, strategy: str, epochs: int | None, learning_rate: float | None) -> None:
    """Append the job's training overrides to the copy's config (its `[gpu]` table, which `_config` ends with)."""
    lines = [f"epochs = {epochs}"] if epochs else []
    if learning_rate:  # the strategy's own rate, in place of the profile's (`[gpu] learning_rates`)
        lines.append(f'learning_rates = {{ "{strategy}" = {learning_rate!r} }}')
    if lines:
        with cfg.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--from", dest="from_dir", type=Path, required=True, help="a finished `clkt demo` folder")
    ap.add_argument("--train", default="en")
    ap.add_argument("--strategy", default=STRATEGY, choices=[s.name for s in BUILTIN_STRATEGIES],
                    help="the job's strategy (default: the demo's, cpt-lora)")
    ap.add_argument("--epochs", type=int, default=None, help="[gpu] epochs of the job (default: the demo's, 5)")
    ap.add_argument("--learning-rate", type=float, default=None,
                    help="the strategy's learning rate ([gpu] learning_rates; default: the demo's)")
    ap.add_argument("--seed", type=int, default=0, help="the job's training seed (`[spec] seeds`; default 0)")
    ap.add_argument("--timeout-min", type=float, default=90.0, help="the job's worker")
    ap.add_argument("--throughput", action="store_true", help="also time both tracks' answering in this process")
    a = ap.parse_args(argv)
    if not (a.from_dir / "clkt-data" / "clkt.db").is_file():  # before any temporary folder is made
        raise SystemExit(f"{a.from_dir} holds no finished demo (no clkt-data/clkt.db)")
    work = _copy_demo(a.from_dir.resolve(), Path(tempfile.mkdtemp(prefix="clkt-open-bench-")) / "demo")
    cfg = _config(work, [a.seed], open_answers=True)  # the demo's config leaves the pass off
    _train_overrides(cfg, strategy=a.strategy, epochs=a.epochs, learning_rate=a.learning_rate)
    sid, target = asyncio.run(_reset(cfg, a.strategy))
    asyncio.run(_enqueue(cfg, sid, target, a.train, a.seed, a.strategy))
    figures: dict[str, Any] = {"snapshot": sid, "target": target, "train": a.train, "strategy": a.strategy, "seed": a.seed,
                               **({"epochs": a.epochs} if a.epochs else {}),
                               **({"learning_rate": a.learning_rate} if a.learning_rate else {}),
                               "worker_wall_s": round(_worker(work, cfg, a.timeout_min * 60), 1)}
    figures |= asyncio.run(_measure(cfg, sid, a.train, a.strategy))
    if a.throughput:
        export = asyncio.run(_export_path(cfg, sid))  # as the store keeps it: relative to the demo's folder
        figures["throughput"] = _throughput(cfg, sid, export if export.is_absolute() else work / export)
    goals = {"open_learn_p": f"< {LEARN_P_GOAL} (exact McNemar, base -> injected, train language)"}
    print(json.dumps({"bench": "open_answers", "figures": figures, "goals": goals, "met": goals_met(figures)}))


if __name__ == "__main__":
    main()
