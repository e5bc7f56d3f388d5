"""The training loop: plain torch, one checkpoint per epoch, resumable.

Same settings as a transformers `Trainer` with its defaults (AdamW, fused where available; linear decay, no
warmup; gradient clipping at `max_grad_norm`; the model's own shifted next-token loss), without its
overheads. Each epoch ends with an atomic checkpoint `epoch-<n>/` (the strategy's trainable weights as
safetensors, `state.json`, and the optimizer/scheduler state `optim.pt`, kept for the last epoch only), so a job
killed at any point restarts after its last finished epoch with the same data order and schedule.

A batch of `gpu.batch_size` examples may run in micro-batches of `gpu.micro_batch_size` (the gradients
accumulated, each micro-batch's loss weighted by its share of the batch's loss tokens: the same update as the
whole batch). A non-finite loss raises `TrainingDiverged`; a device out-of-memory error raises `OutOfMemory`
(`where="train"`, with the micro-batch size that did not fit: the job is retried at half of it).
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clkt.errors import JobError
from clkt.evaluate.memory import OutOfMemory, is_oom
from clkt.layout import EPOCH_PREFIX, OPTIM_FILE, STATE_FILE, epoch_dir, epoch_of

if TYPE_CHECKING:
    from clkt.config import GpuSettings
    from clkt.inject.strategies._recipe import TrainExample, TrainingRecipe

__all__ = [
    "EpochResult",
    "OutOfMemory",
    "TrainLoop",
    "TrainingDiverged",
    "collate",
    "completed_epochs",
    "epoch_dir",
]

log = logging.getLogger(__name__)

NAN_CHECK_EVERY = 8  # steps between host syncs that check the running loss (GPU: syncs are not free)


class TrainingDiverged(JobError):
    """The loss became NaN or infinite."""


@dataclass(frozen=True, slots=True)
class EpochResult:
    epoch: int
    loss: float
    tokens: int
    seconds: float


def completed_epochs(root: Path) -> list[EpochResult]:
    """Finished epochs, in order (a checkpoint counts once its state.json is in place)."""
    out: list[EpochResult] = []
    if not root.is_dir():
        return out
    for d in root.glob(f"{EPOCH_PREFIX}*"):
        f = d / STATE_FILE
        if epoch_of(d.name) is not None and f.is_file():
            s = json.loads(f.read_text())
            out.append(EpochResult(int(s["epoch"]), float(s["loss"]), int(s["tokens"]), float(s["seconds"])))
    return sorted(out, key=lambda e: e.epoch)


def collate(batch: list[TrainExample], pad_id: int) -> dict[str, Any]:
    import torch

    n = max(len(e.input_ids) for e in batch)
    ids = torch.full((len(batch), n), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), n), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), n), dtype=torch.long)
    for i, e in enumerate(batch):
        k = len(e.input_ids)
        ids[i, :k] = torch.tensor(e.input_ids)
        labels[i, :k] = torch.tensor(e.labels)
        mask[i, :k] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


class TrainLoop:
    """Train `model` on `examples` for `gpu.epochs` epochs, checkpointing under `ckpt_root`."""

    def __init__(
        self, *, model: Any, strategy: TrainingRecipe, examples: list[TrainExample], gpu: GpuSettings,
        ckpt_root: Path, pad_id: int, device: str,
        on_step: Callable[[int, int, float], None] | None = None,
        on_epoch: Callable[[EpochResult], None] | None = None,
    ) -> None:
        if not examples:
            raise JobError("nothing to train on: the train language has no documents")
        self.model = model
        self.strategy = strategy
        self.examples = examples
        self.gpu = gpu
        self.ckpt_root = ckpt_root
        self.pad_id = pad_id
        self.device = device
        self.on_step = on_step
        self.on_epoch = on_epoch
        self.steps_per_epoch = math.ceil(len(examples) / gpu.batch_size)
        self.micro_batch_size = min(gpu.micro_batch_size or gpu.batch_size, gpu.batch_size)

    def _optimizer(self) -> tuple[Any, Any]:
        import torch

        params = [p for p in self.model.parameters() if p.requires_grad]
        lr = self.strategy.learning_rate(self.gpu)
        try:
            opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0, fused=True)
        except (RuntimeError, TypeError):
            opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
        total = self.steps_per_epoch * self.gpu.epochs
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: max(0.0, (total - step) / max(1, total)))
        return opt, sched

    def _order(self, epoch: int) -> list[int]:
        import torch

        g = torch.Generator().manual_seed(self.gpu.seed * 100_003 + epoch)
        return torch.randperm(len(self.examples), generator=g).tolist()

    def run(self) -> list[EpochResult]:
        import torch

        done = completed_epochs(self.ckpt_root)
        opt, sched = self._optimizer()
        start = 1
        if done:
            last = done[-1]
            self.strategy.load(self.model, epoch_dir(self.ckpt_root, last.epoch))
            optim_path = epoch_dir(self.ckpt_root, last.epoch) / OPTIM_FILE
            if optim_path.is_file():
                state = torch.load(optim_path, map_location=self.device, weights_only=True)
                opt.load_state_dict(state["optimizer"])
                sched.load_state_dict(state["scheduler"])
            else:  # pruned: keep the schedule where it was
                for _ in range(self.steps_per_epoch * last.epoch):
                    sched.step()
            start = last.epoch + 1
            log.info("resuming after epoch %d of %d", last.epoch, self.gpu.epochs)
        results = list(done)
        self.model.train()
        for epoch in range(start, self.gpu.epochs + 1):
            try:
                res = self._epoch(epoch, opt, sched)
            except RuntimeError as e:
                if is_oom(e):
                    raise OutOfMemory(
                        f"out of memory while training on {self.device} (micro-batch {self.micro_batch_size}): {e}"[:2000],
                        where="train", batch_size=self.micro_batch_size,
                    ) from e
                raise
            self._checkpoint(res, opt, sched)
            results.append(res)
            if self.on_epoch is not None:
                self.on_epoch(res)
        return results

    def _epoch(self, epoch: int, opt: Any, sched: Any) -> EpochResult:
        import torch

        use_amp = self.device.startswith("cuda")
        t0 = time.perf_counter()
        running = torch.zeros((), device=self.device)
        order = self._order(epoch)
        from tqdm.auto import tqdm

        bar = tqdm(total=self.steps_per_epoch, desc=f"train epoch {epoch}/{self.gpu.epochs}", unit="step", leave=False)
        try:
            return self._steps(epoch, opt, sched, order, bar, t0, running, use_amp)
        finally:
            bar.close()

    def _steps(self, epoch: int, opt: Any, sched: Any, order: list[int], bar: Any, t0: float, running: Any, use_amp: bool) -> EpochResult:
        import torch

        tokens = 0
        bs = self.gpu.batch_size
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        for step in range(self.steps_per_epoch):
            examples = [self.examples[i] for i in order[step * bs : (step + 1) * bs]]
            if self.micro_batch_size >= len(examples):
                batch = collate(examples, self.pad_id)
                tokens += int(batch["attention_mask"].sum())
                batch = {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}
                with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_amp):
                    loss = self.model(**batch, use_cache=False).loss
                loss.backward()
            else:
                loss, n = self._accumulate(examples, use_amp)
                tokens += n
            if self.gpu.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(trainable, self.gpu.max_grad_norm)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            running += loss.detach()
            if (step + 1) % NAN_CHECK_EVERY == 0 or step + 1 == self.steps_per_epoch:
                value = float(running) / (step + 1)
                if not math.isfinite(value):
                    raise TrainingDiverged(f"the loss became {value} at epoch {epoch}, step {step + 1}")
                bar.set_postfix(loss=f"{value:.3f}", refresh=False)
                if self.on_step is not None:
                    self.on_step(epoch, step + 1, value)
            bar.update(1)
        return EpochResult(epoch, float(running) / self.steps_per_epoch, tokens, time.perf_counter() - t0)

    def _accumulate(self, examples: list[TrainExample], use_amp: bool) -> tuple[Any, int]:
        """One batch as micro-batches, gradients accumulated: each micro-batch's mean loss weighted by its share
        of the batch's loss tokens (the shifted labels that are not -100), so the sum is the batch's mean loss."""
        import torch

        mb = self.micro_batch_size
        chunks = [collate(examples[i : i + mb], self.pad_id) for i in range(0, len(examples), mb)]
        counts = [int((c["labels"][:, 1:] != -100).sum()) for c in chunks]
        total = max(1, sum(counts))
        loss = torch.zeros((), device=self.device)
        tokens = 0
        for chunk, k in zip(chunks, counts, strict=True):
            tokens += int(chunk["attention_mask"].sum())
            if k == 0:  # no loss token in this micro-batch: it adds nothing to the gradient
                continue
            chunk = {key: v.to(self.device, non_blocking=True) for key, v in chunk.items()}
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_amp):
                part = self.model(**chunk, use_cache=False).loss * (k / total)
            part.backward()
            loss = loss + part.detach()
        return loss, tokens

    def _checkpoint(self, res: EpochResult, opt: Any, sched: Any) -> None:
        import torch

        final = epoch_dir(self.ckpt_root, res.epoch)
        tmp = self.ckpt_root / f".epoch-{res.epoch}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        self.strategy.save(self.model, tmp)
        (tmp / STATE_FILE).write_text(
            json.dumps({"epoch": res.epoch, "loss": res.loss, "tokens": res.tokens, "seconds": res.seconds})
        )
        torch.save({"epoch": res.epoch, "optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, tmp / OPTIM_FILE)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        for older in range(1, res.epoch):  # only the last epoch's optimizer state is needed to resume
            (epoch_dir(self.ckpt_root, older) / OPTIM_FILE).unlink(missing_ok=True)
