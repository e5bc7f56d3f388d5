"""The injector of every strategy that trains: epochs, a checkpoint and a validation score per epoch, the best
epoch, pruning and resuming, around a `TrainingRecipe` (its examples, model preparation, learning rate, weights).

1. The recipe's examples from the train-language documents; the model made trainable (with gradient
   checkpointing when `gpu.gradient_checkpointing`).
2. `gpu.epochs` epochs (`clkt.inject.trainer.TrainLoop`), one checkpoint each under the job's `work_dir`
   (`epoch-<n>/`); after each, the accuracy on the validation split in the train language with the selection
   scorer, written beside the checkpoint (`val.json`); earlier weights pruned unless the recipe keeps them all.
   With the open pass on and open validation questions in the train language, their score too
   (`clkt.inject.open_val`: the open track's checkpoint, chosen apart).
3. The best epoch (`clkt.inject.best_epoch`), its weights loaded, the model made ready to answer; before it, where
   the open track's epoch is another, that epoch's weights answer the job's open pass (`InjectionContext.open_answer`).

Killed anywhere, a rerun resumes: finished epochs are checkpoints, their validation accuracies are files.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clkt.errors import JobError, SnapshotError, UserError
from clkt.evaluate.results import EpochRecord
from clkt.evaluate.runner import accuracy
from clkt.inject.best_epoch import ValScore, best_epoch, mean_margin
from clkt.inject.contract import JobProgress
from clkt.inject.injector import Injection, InjectionContext, Spare, WeightsDtype
from clkt.inject.open_val import OPEN_KEY, OpenValScore, best_open_epoch, open_val_scores
from clkt.inject.trainer import EpochResult, TrainLoop, completed_epochs
from clkt.layout import EPOCH_PREFIX, OPTIM_FILE, STATE_FILE, VAL_FILE, epoch_dir, epoch_of

if TYPE_CHECKING:
    from clkt.inject.contract import InjectorSpec
    from clkt.inject.strategies._recipe import TrainExample, TrainingRecipe
    from clkt.snapshots.layout import DocRow, QuestionRow

__all__ = ["TrainedInjector", "enable_checkpointing"]

log = logging.getLogger(__name__)


class TrainedInjector:
    """An `Injector` that trains `recipe` for `gpu.epochs` epochs and answers with the best one."""

    def __init__(self, recipe: TrainingRecipe, *, full_precision: bool = False) -> None:
        self.recipe = recipe
        self.full_precision = full_precision  # True: fp32 master weights on GPU too (every weight trains)

    @property
    def name(self) -> str:
        return self.recipe.name

    def check(self, spec: InjectorSpec) -> None:
        if spec.gpu.epochs < 1:
            raise JobError("epochs must be >= 1")

    def weights_dtype(self, device: str) -> WeightsDtype:
        return "float32" if self.full_precision or not device.startswith("cuda") else "bfloat16"

    def inject(
        self, model: Any, tokenizer: Any, *, docs: list[DocRow], val_rows: list[QuestionRow], ctx: InjectionContext,
    ) -> Injection:
        spec = ctx.spec
        examples = self.recipe.examples(docs, tokenizer, target=spec.target, gpu=spec.gpu, facts=ctx.facts)
        if not examples:
            raise SnapshotError(f"snapshot {spec.snapshot_id}: the {spec.train_lang} documents tokenize to nothing")
        model = self.recipe.prepare(model, spec.gpu)
        if spec.gpu.gradient_checkpointing:
            enable_checkpointing(model)
        run = _Run(recipe=self.recipe, ctx=ctx, model=model, pad_id=_pad_id(tokenizer), val_rows=val_rows)
        run.train(examples)
        open_epoch = run.open_pass()
        best = run.pick_best()
        tokens, seconds = sum(e.tokens for e in run.epochs), sum(e.seconds for e in run.epochs)
        return Injection(
            model=run.model, examples=len(examples), best_epoch=best, open_epoch=open_epoch, epochs=run.records(),
            resumed_after=run.resumed_after, tokens_per_s=round(tokens / seconds, 2) if seconds else None,
        )

    def returned_files(self, work_dir: Path, *, best_epoch: int | None) -> list[Path]:
        """Every epoch's state and validation score, and the best epoch's checkpoint (and the open track's, where
        it is another) without its optimizer state (nor its weights when the recipe's do not travel)."""
        out: list[Path] = []
        kept = {epoch_dir(work_dir, e) for e in _kept(work_dir, best_epoch)}
        for d in sorted(work_dir.glob(f"{EPOCH_PREFIX}*")) if work_dir.is_dir() else []:
            for f in sorted(d.iterdir()) if d.is_dir() else []:
                if not f.is_file() or f.name == OPTIM_FILE:
                    continue
                is_best = d in kept
                if f.name in (STATE_FILE, VAL_FILE) or (is_best and (self.recipe.weights_travel or f.suffix != ".safetensors")):
                    out.append(f)
        return out


    def spare(self, work_dir: Path, *, best_epoch: int | None) -> list[Spare]:
        """Every epoch's checkpoint but the best one's (and the open track's), and their optimizer state."""
        if best_epoch is None or not work_dir.is_dir():
            return []
        out: list[Spare] = []
        kept = _kept(work_dir, best_epoch)
        for d in sorted(work_dir.glob(f"{EPOCH_PREFIX}*")):
            n = epoch_of(d.name)
            if not d.is_dir() or n is None:
                continue
            if n not in kept:
                out.append(Spare(d, f"epoch {n} is not its best epoch ({best_epoch}) nor the open track's"))
            elif (d / OPTIM_FILE).is_file():
                out.append(Spare(d / OPTIM_FILE, "optimizer state (only a resumed training reads it)"))
        return out


@dataclass(slots=True, kw_only=True)
class _Run:
    """One job's training: its model, its validation scores, the epochs done."""

    recipe: TrainingRecipe
    ctx: InjectionContext
    model: Any
    pad_id: int
    val_rows: list[QuestionRow]
    vals: dict[int, ValScore] = field(default_factory=dict)
    opens: dict[int, OpenValScore] = field(default_factory=dict)  # the open validation's, where the job asks it
    epochs: list[EpochResult] = field(default_factory=list)
    resumed_after: int = 0  # 0: trained from the start

    @property
    def root(self) -> Path:
        return self.ctx.work_dir

    def train(self, examples: list[TrainExample]) -> None:
        """Every epoch, validated after it; earlier checkpoints pruned unless the recipe keeps them all."""

        def on_epoch(res: EpochResult) -> None:
            val = self.vals[res.epoch] = self.validate(res.epoch)
            log.info("epoch %d: loss %.4f, %d tokens in %.1fs, val accuracy %s (margin %s)%s", res.epoch, res.loss,
                     res.tokens, res.seconds, val.accuracy, val.margin,
                     f", open val {o.accuracy:.3f} (log-likelihood {o.loglik:.3f})" if (o := self.opens.get(res.epoch)) else "")
            self.prune(res.epoch)

        spec = self.ctx.spec
        loop = TrainLoop(
            model=self.model, strategy=self.recipe, examples=examples, gpu=spec.gpu, ckpt_root=self.root,
            pad_id=self.pad_id, device=self.ctx.device,
            on_step=lambda e, s, loss: self.ctx.progress(
                JobProgress(phase="train", done=s, total=loop.steps_per_epoch, epoch=e, loss=loss)),
            on_epoch=on_epoch,
        )
        resumed = completed_epochs(self.root)
        if resumed:  # validate the epoch a kill may have interrupted, with its own weights
            last = resumed[-1].epoch
            self.recipe.load(self.model, epoch_dir(self.root, last))
            self.opens.update(open_val_scores(self.root))
            for r in resumed:
                f = epoch_dir(self.root, r.epoch) / VAL_FILE
                if f.is_file():
                    self.vals[r.epoch] = ValScore.from_file(f)
            if last not in self.vals:
                self.vals[last] = self.validate(last)
            self.resumed_after = last
        self.epochs = loop.run()

    def validate(self, epoch: int) -> ValScore:
        """The validation score of `epoch` (read back from its `val.json` when a run already wrote it)."""
        f = epoch_dir(self.root, epoch) / VAL_FILE
        if f.is_file():
            if (opened := open_val_scores(self.root).get(epoch)) is not None:
                self.opens[epoch] = opened
            return ValScore.from_file(f)
        selection = self.ctx.selection_scorer
        self.model.eval()
        items = self.ctx.answer(self.model, self.val_rows, scorers=[selection], phase=f"val@{epoch}", epoch=epoch)
        opened = self.ctx.open_validate(self.model) if self.ctx.open_validate is not None else None
        self.model.train()
        chosen = [i for i in items if i.scorer == selection]  # option-loglik: acc, not acc_norm
        score = ValScore(accuracy(chosen), mean_margin(chosen, {r.qid: r.answer for r in self.val_rows}))
        record: dict[str, object] = {
            "epoch": epoch, "scorer": selection, "accuracy": score.accuracy, "margin": score.margin, "n": len(self.val_rows),
        }
        if opened is not None:
            self.opens[epoch] = opened
            record[OPEN_KEY] = opened.as_json()
        f.write_text(json.dumps(record))
        return score

    def prune(self, last: int) -> None:
        if self.recipe.keep_every_epoch:
            return
        keep = {last, best_epoch(self.vals, last), best_open_epoch(self.opens)}
        for e in list(self.vals):
            if e not in keep:
                for f in epoch_dir(self.root, e).glob("*.safetensors"):
                    f.unlink()

    def open_pass(self) -> int | None:
        """The open track's epoch (None: no open validation); where it is not the MCQ track's, its weights answer
        the job's open pass now, before the best epoch's are loaded."""
        if self.ctx.open_validate is None:  # the pass is off (a rerun's earlier scores are not this job's choice)
            return None
        chosen = best_open_epoch(self.opens)
        if chosen is None or chosen == best_epoch(self.vals, self.epochs[-1].epoch) or self.ctx.open_answer is None:
            return chosen
        self.recipe.load(self.model, epoch_dir(self.root, chosen))
        self.model.eval()
        self.ctx.open_answer(self.model)
        return chosen

    def pick_best(self) -> int:
        """The best epoch; the model takes its weights and is made ready to answer."""
        best = best_epoch(self.vals, self.epochs[-1].epoch)
        self.recipe.load(self.model, epoch_dir(self.root, best))
        self.model = self.recipe.for_inference(self.model)
        self.model.eval()
        return best

    def records(self) -> list[EpochRecord]:
        vals = self.vals
        return [
            EpochRecord(
                epoch=e.epoch, loss=e.loss, tokens=e.tokens, seconds=e.seconds,
                val_accuracy=vals[e.epoch].accuracy if e.epoch in vals else None,
                val_margin=vals[e.epoch].margin if e.epoch in vals else None,
                open_val_accuracy=o.accuracy if (o := self.opens.get(e.epoch)) else None,
                open_val_loglik=o.loglik if o else None,
            )
            for e in self.epochs
        ]


def _kept(work_dir: Path, best_epoch: int | None) -> set[int]:
    """The epochs whose checkpoints a finished job keeps: the best one, and the open track's (`val.json`)."""
    kept = {best_epoch} if best_epoch is not None else set()
    open_epoch = best_open_epoch(open_val_scores(work_dir))
    return kept | {open_epoch} if open_epoch is not None and kept else kept


def _pad_id(tokenizer: Any) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0


def enable_checkpointing(model: Any) -> None:
    """Gradient checkpointing on the (peft-wrapped) model: activations recomputed in the backward pass. The
    non-reentrant kind, which needs no input gradients under frozen base weights and replays the dropout's
    random state, so a step computes the same loss and gradients as without it."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    if not getattr(inner, "supports_gradient_checkpointing", False):
        raise UserError(f"gradient_checkpointing: {type(inner).__name__} does not support gradient checkpointing")
    inner.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    inner.config.use_cache = False
