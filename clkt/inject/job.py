"""One GPU job, run inside the child process: base answers, injection, best epoch, injected answers.

1. Load the snapshot directory and the target model.
2. Answer the test split in every language with the base model (cached per snapshot x target, since every
   job of that pair asks the same questions).
3. Inject the train-language documents with the strategy, one checkpoint per epoch; after each epoch,
   the accuracy on the validation split in the train language.
4. Take the best epoch (the earliest of the best), answer the test split in every language again.
5. Write `predictions.jsonl` and return the `JobOutcome`.

Killed anywhere, a rerun resumes: finished epochs are checkpoints, their validation accuracies are files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clkt.errors import JobError, SnapshotError, UserError
from clkt.evaluate.learn import learn_stat
from clkt.evaluate.prompts import EVAL_PROMPT_VERSION
from clkt.evaluate.runner import accuracy, answer_questions
from clkt.evaluate.scorers import scorers_for, selection_scorer
from clkt.inject.contract import (
    CONTROL_SPLIT,
    PREDICTIONS_FILE,
    PROGRESS_FILE,
    EpochRecord,
    JobOutcome,
    JobProgress,
    JobSpec,
    ResultItem,
    Variant,
    write_json_atomic,
)
from clkt.inject.strategies import get_strategy
from clkt.inject.trainer import EpochResult, TrainLoop, completed_epochs, epoch_dir
from clkt.snapshots.layout import QuestionRow, SnapshotData, load_snapshot_dir
from clkt.targets.loader import load_target, resolve_device

__all__ = ["run_job", "check_spec", "learn_summary", "mean_margin", "ProgressWriter", "ValScore", "VAL_FILE", "CKPT_DIR"]

log = logging.getLogger(__name__)

VAL_FILE = "val.json"
CKPT_DIR = "checkpoints"


class ProgressWriter:
    """Writes `progress.json` for the parent at most every `every_s` seconds."""

    def __init__(self, path: Path, *, every_s: float = 2.0) -> None:
        self.path = path
        self.every_s = every_s
        self._last = 0.0

    def __call__(self, progress: JobProgress, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= self.every_s:
            self._last = now
            write_json_atomic(self.path, progress)


def _load_snapshot(spec: JobSpec) -> SnapshotData:
    data = load_snapshot_dir(spec.snapshot_dir)
    if spec.train_lang not in data.languages:
        raise SnapshotError(f"snapshot {spec.snapshot_id} has no language {spec.train_lang!r} (has {data.languages})")
    return data


def _base_answers(
    spec: JobSpec, model: Any, tok: Any, rows: list[QuestionRow], dtype: str, progress: ProgressWriter
) -> list[ResultItem]:
    """Base-model answers, shared through `spec.base_cache_dir` by every job of the same snapshot x target."""
    key = hashlib.sha256(
        json.dumps(
            [spec.target.model_dump(mode="json"), scorers_for(spec.target, spec.gpu), spec.gpu.parse,
             spec.gpu.max_new_tokens, spec.gpu.max_seq_len, spec.gpu.eval_batch_size, EVAL_PROMPT_VERSION, dtype,
             sorted((r.qid, r.lang) for r in rows)],
            sort_keys=True, default=str,
        ).encode()
    ).hexdigest()[:16]
    cache = spec.base_cache_dir / f"{spec.target.name}-{key}.jsonl" if spec.base_cache_dir else None
    if cache is not None and cache.is_file():
        return [ResultItem.model_validate_json(line) for line in cache.read_text(encoding="utf-8").splitlines() if line]
    items = answer_questions(
        model, tok, spec.target, rows, scorers=scorers_for(spec.target, spec.gpu), gpu=spec.gpu, variant=Variant.base, phase="base",
        progress=lambda ph, d, t: progress(JobProgress(phase=ph, done=d, total=t)),
    )
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.tmp-{os.getpid()}")
        tmp.write_text("".join(i.model_dump_json() + "\n" for i in items), encoding="utf-8")
        os.replace(tmp, cache)
    return items


def run_job(spec: JobSpec) -> JobOutcome:
    import torch

    if spec.gpu.torch_threads:
        torch.set_num_threads(spec.gpu.torch_threads)
    torch.manual_seed(spec.gpu.seed)
    strategy = get_strategy(spec.strategy)
    data = _load_snapshot(spec)
    # the control split's fictional documents are injected with the real ones and scored on their own
    docs = data.docs_for(spec.train_lang) + data.control_docs_for(spec.train_lang)
    if not docs:
        raise SnapshotError(f"snapshot {spec.snapshot_id} has no {spec.train_lang} documents to inject")
    control_rows = [r for lang in data.languages for r in data.control_questions_for(lang)]
    control_qids = {r.qid for r in control_rows}
    test_rows = [r for lang in data.languages for r in data.questions_for(lang, "test")] + control_rows
    val_rows = data.questions_for(spec.train_lang, "val")
    device = resolve_device(spec.device)
    # full fine-tuning keeps fp32 master weights (bf16 autocast on GPU); LoRA trains over a bf16 base on GPU
    dtype = torch.float32 if (spec.strategy == "full-ft" or not device.startswith("cuda")) else torch.bfloat16
    progress = ProgressWriter(spec.artifacts_dir / PROGRESS_FILE)
    progress(JobProgress(phase="loading"), force=True)
    model, tok = load_target(spec.target, data_dir=spec.data_dir, device=device, dtype=dtype)
    base = _base_answers(spec, model, tok, test_rows, str(dtype), progress)

    examples = strategy.examples(docs, tok, target=spec.target, gpu=spec.gpu)
    if not examples:
        raise SnapshotError(f"snapshot {spec.snapshot_id}: the {spec.train_lang} documents tokenize to nothing")
    model = strategy.prepare(model, spec.gpu)
    ckpt_root = spec.artifacts_dir / CKPT_DIR
    scorers = scorers_for(spec.target, spec.gpu)
    sel = selection_scorer(scorers)
    vals: dict[int, ValScore] = {}

    def validate(epoch: int) -> ValScore:
        f = epoch_dir(ckpt_root, epoch) / VAL_FILE
        if f.is_file():
            return ValScore.from_file(f)
        model.eval()
        items = answer_questions(
            model, tok, spec.target, val_rows, scorers=[sel], gpu=spec.gpu, variant=Variant.injected,
            phase=f"val@{epoch}", progress=lambda ph, d, t: progress(JobProgress(phase=ph, done=d, total=t, epoch=epoch)),
        )
        model.train()
        chosen = [i for i in items if i.scorer == sel]  # option-loglik: acc, not acc_norm
        score = ValScore(accuracy(chosen), mean_margin(chosen, {r.qid: r.answer for r in val_rows}))
        f.write_text(json.dumps({
            "epoch": epoch, "scorer": sel, "accuracy": score.accuracy, "margin": score.margin, "n": len(val_rows),
        }))
        return score

    def on_epoch(res: EpochResult) -> None:
        vals[res.epoch] = validate(res.epoch)
        log.info(
            "epoch %d: loss %.4f, %d tokens in %.1fs, val accuracy %s (margin %s)", res.epoch, res.loss, res.tokens,
            res.seconds, vals[res.epoch].accuracy, vals[res.epoch].margin,
        )
        _prune(res.epoch)

    def _prune(last: int) -> None:
        if strategy.keep_every_epoch:
            return
        keep = {last, _best(vals, last)}
        for e in list(vals):
            if e not in keep:
                for f in epoch_dir(ckpt_root, e).glob("*.safetensors"):
                    f.unlink()

    loop = TrainLoop(
        model=model, strategy=strategy, examples=examples, gpu=spec.gpu, ckpt_root=ckpt_root,
        pad_id=tok.pad_token_id if tok.pad_token_id is not None else 0, device=device,
        on_step=lambda e, s, loss: progress(JobProgress(phase="train", done=s, total=loop.steps_per_epoch, epoch=e, loss=loss)),
        on_epoch=on_epoch,
    )
    resumed = completed_epochs(ckpt_root)
    if resumed:  # validate the epoch a kill may have interrupted, with its own weights (already loaded by run())
        strategy.load(model, epoch_dir(ckpt_root, resumed[-1].epoch))
        for r in resumed:
            f = epoch_dir(ckpt_root, r.epoch) / VAL_FILE
            if f.is_file():
                vals[r.epoch] = ValScore.from_file(f)
        if resumed[-1].epoch not in vals:
            vals[resumed[-1].epoch] = validate(resumed[-1].epoch)
    epochs = loop.run()
    best = _best(vals, epochs[-1].epoch)
    strategy.load(model, epoch_dir(ckpt_root, best))
    model = strategy.for_inference(model)
    model.eval()
    injected = answer_questions(
        model, tok, spec.target, test_rows, scorers=scorers, gpu=spec.gpu, variant=Variant.injected,
        phase="test", progress=lambda ph, d, t: progress(JobProgress(phase=ph, done=d, total=t)),
    )
    results = base + injected
    _write_predictions(spec.artifacts_dir / PREDICTIONS_FILE, results)
    control_results = [r.model_copy(update={"split": CONTROL_SPLIT}) for r in results if r.qid in control_qids]
    results = [r for r in results if r.qid not in control_qids]
    records = [
        EpochRecord(
            epoch=e.epoch, loss=e.loss, tokens=e.tokens, seconds=e.seconds,
            val_accuracy=vals[e.epoch].accuracy if e.epoch in vals else None,
            val_margin=vals[e.epoch].margin if e.epoch in vals else None,
        )
        for e in epochs
    ]
    train_tokens = sum(e.tokens for e in epochs)
    train_s = sum(e.seconds for e in epochs)
    summary: dict[str, float | int | str | bool | None] = {
        "selection_scorer": sel,
        "scorers": ",".join(sorted({r.scorer for r in results})),
        "generate_parse": spec.gpu.parse if "generate" in scorers else None,
        "val_questions": len(val_rows),
        "test_questions": len(test_rows) - len(control_rows),
        "control_questions": len(control_rows),
        "train_examples": len(examples),
        "train_tokens_per_s": round(train_tokens / train_s, 2) if train_s else None,
        "resumed_after_epoch": resumed[-1].epoch if resumed else 0,
    }
    result_scorers = sorted({r.scorer for r in results})
    for variant in (Variant.base, Variant.injected):
        for scorer in result_scorers:
            subset = [r for r in results if r.variant is variant and r.scorer == scorer]
            summary[f"{variant.value}:{scorer}:accuracy"] = accuracy(subset)
            if scorer == "generate" and subset:
                summary[f"{variant.value}:generate:parse_failure_rate"] = sum(r.predicted is None for r in subset) / len(subset)
    summary.update(learn_summary(results, spec.train_lang))
    summary.update(learn_summary(control_results, spec.train_lang, prefix="learn-control"))
    return JobOutcome(
        job_id=spec.job_id, best_epoch=best, epochs=records, device=device, results=results, summary=summary,
        control_results=control_results,
    )


def learn_summary(results: list[ResultItem], train_lang: str, *, prefix: str = "learn") -> dict[str, float | int | bool | None]:
    """Learn per result scorer (`<prefix>:<scorer>:…`, see `clkt.evaluate.learn`): the train-language questions
    answered by both the base and the injected model (the test split, or the control split's)."""
    out: dict[str, float | int | bool | None] = {}
    for scorer in sorted({r.scorer for r in results}):
        sel = [r for r in results if r.scorer == scorer and r.lang == train_lang and r.split in ("test", CONTROL_SPLIT)]
        base = {r.qid: r.correct for r in sel if r.variant is Variant.base}
        inj = {r.qid: r.correct for r in sel if r.variant is Variant.injected}
        common = sorted(set(base) & set(inj))
        if common:
            out.update(learn_stat((base[q], inj[q]) for q in common).summary(f"{prefix}:{scorer}"))
    return out


@dataclass(frozen=True, slots=True)
class ValScore:
    """One epoch on the validation questions: accuracy, and the mean log-likelihood margin of the right option."""

    accuracy: float | None  # None: no validation questions
    margin: float | None = None  # None: the scorer gives no per-option scores (generate), or an older val.json

    @classmethod
    def from_file(cls, path: Path) -> ValScore:
        d = json.loads(path.read_text())
        return cls(d["accuracy"], d.get("margin"))


def mean_margin(items: list[ResultItem], answers: dict[int, str]) -> float | None:
    """Mean over questions of (score of the right option - best score of a wrong one), from the per-option
    scores in `raw` (`option-loglik`, `letter-logprob`: "A=-1.234 B=..."); None when a row has none."""
    margins: list[float] = []
    for it in items:
        scores: dict[str, float] = {}
        for part in it.raw.split():
            letter, sep, value = part.partition("=")
            try:
                scores[letter] = float(value) if sep else float("nan")
            except ValueError:
                return None
        right = answers.get(it.qid)
        if right not in scores or len(scores) < 2 or any(math.isnan(v) for v in scores.values()):
            return None
        margins.append(scores[right] - max(v for k, v in scores.items() if k != right))
    return sum(margins) / len(margins) if margins else None


def _best(vals: dict[int, ValScore], last: int) -> int:
    """The epoch with the best validation accuracy; among equal accuracies (7 to 15 validation questions tie
    often) the one with the larger mean margin of the right option, then the earliest. The last epoch when
    nothing was validated."""
    scored = {e: v for e, v in vals.items() if v.accuracy is not None}
    if not scored:
        return last
    top = max(v.accuracy for v in scored.values() if v.accuracy is not None)
    tied = {e: v for e, v in scored.items() if v.accuracy == top}
    margins = {e: v.margin for e, v in tied.items() if v.margin is not None}
    if len(margins) == len(tied) and len(tied) > 1:
        best_margin = max(margins.values())
        return min(e for e, m in margins.items() if m == best_margin)
    return min(tied)


def _write_predictions(path: Path, results: list[ResultItem]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text("".join(r.model_dump_json() + "\n" for r in results), encoding="utf-8")
    os.replace(tmp, path)


def check_spec(spec: JobSpec) -> None:
    """Cheap checks before any model is loaded."""
    get_strategy(spec.strategy)
    if not Path(spec.snapshot_dir).is_dir():
        raise UserError(f"snapshot directory {spec.snapshot_dir} does not exist")
    if spec.gpu.epochs < 1:
        raise JobError("epochs must be >= 1")
