"""Device memory in evaluation and training: what an out-of-memory error is, and the evaluation batch size.

`BatchSizer` holds one job's evaluation batch size for one kind of pass (generation, one forward pass per
prompt, option log-likelihoods: their memory grows differently with the batch). Configured
(`gpu.eval_batch_size`), it is that size, and an out-of-memory error raises `OutOfMemory` (the job is retried
at half of it, `clkt.inject.consumer`). Automatic (`eval_batch_size` unset), it starts at the largest size the
device is given (`gpu.eval_batch_max` on a GPU; on a CPU, where an allocation failure is the host's, not a
device's, `CPU_AUTO_BATCH`, or `CPU_AUTO_GENERATE_BATCH` for generation) and halves on each out-of-memory error,
the failed batch run again at the smaller size, down to 1; the size it settles on is kept for the rest of the job (`settled`).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar

from clkt.errors import JobError

if TYPE_CHECKING:
    from clkt.config import GpuSettings

__all__ = ["CPU_AUTO_BATCH", "CPU_AUTO_GENERATE_BATCH", "BatchSizer", "OutOfMemory", "free_device_memory", "is_oom"]

log = logging.getLogger(__name__)

CPU_AUTO_BATCH = 8  # the automatic evaluation batch on a CPU (the fixed size before it was automatic)
# generation on a CPU: a decoding step reads every weight for a few rows, so more rows cost little more (the embedded
# instruct target on 2 cores, 300 cached tokens: 82 ms a step for 8 rows, 122 ms for 16, 137 ms for 24); a prefill
# or a scoring pass is compute-bound, and gains nothing from a larger batch
CPU_AUTO_GENERATE_BATCH = 16

T = TypeVar("T")
R = TypeVar("R")


class OutOfMemory(JobError):
    """The model or a batch does not fit in the device's memory. `where` is "train" or "eval"; `batch_size` the
    size that did not fit (None: the model itself)."""

    def __init__(self, message: str, *, where: Literal["train", "eval", "load"] = "eval", batch_size: int | None = None) -> None:
        super().__init__(message)
        self.where = where
        self.batch_size = batch_size


def is_oom(e: BaseException) -> bool:
    """A device (CUDA, MPS, XPU) or allocator out-of-memory error, as torch raises it."""
    import torch

    if isinstance(e, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(e, RuntimeError) and "out of memory" in str(e).lower()


def free_device_memory() -> None:
    """Give the cached blocks of a failed allocation back (after an out-of-memory error)."""
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class BatchSizer:
    """The evaluation batch size of one kind of pass of one job (see the module's docstring)."""

    MIN_SIZE: ClassVar[int] = 1

    def __init__(self, *, size: int, automatic: bool, name: str = "eval") -> None:
        if size < 1:
            raise ValueError(f"batch size must be >= 1, got {size}")
        self.size = size
        self.automatic = automatic
        self.name = name
        self.halvings = 0

    @classmethod
    def for_job(cls, gpu: GpuSettings, device: str, *, name: str = "eval") -> BatchSizer:
        """The configured size, or the automatic one for `device` and the pass `name` (a scorer's name)."""
        if gpu.eval_batch_size is not None:
            return cls(size=gpu.eval_batch_size, automatic=False, name=name)
        # "generate": `ScorerName.generate` (clkt.evaluate.scorers imports this module; a test ties the two)
        cpu = CPU_AUTO_GENERATE_BATCH if name == "generate" else CPU_AUTO_BATCH
        start = gpu.eval_batch_max if device.startswith(("cuda", "mps", "xpu")) else min(cpu, gpu.eval_batch_max)
        return cls(size=start, automatic=True, name=name)

    @property
    def settled(self) -> int:
        return self.size

    def shrink(self, error: BaseException) -> None:
        """After an out-of-memory error at the current size: halve it (automatic), or raise `OutOfMemory`."""
        free_device_memory()
        if not self.automatic or self.size <= self.MIN_SIZE:
            how = "configured" if not self.automatic else "smallest"
            raise OutOfMemory(
                f"out of memory in evaluation ({self.name}) at the {how} batch size {self.size}: {error}"[:2000],
                where="eval", batch_size=self.size,
            ) from error
        self.size = max(self.MIN_SIZE, self.size // 2)
        self.halvings += 1
        log.warning("%s: out of memory; evaluation batch size halved to %d", self.name, self.size)

    def run(self, order: Sequence[T], fn: Callable[[list[T]], R], *, on_done: Callable[[list[T], R], None]) -> None:
        """`fn` over consecutive chunks of `order` of the current size; a chunk that runs out of memory runs
        again at the smaller size. `on_done(chunk, result)` after each chunk that succeeded."""
        pos = 0
        while pos < len(order):
            chunk = list(order[pos : pos + self.size])
            try:
                result = fn(chunk)
            except RuntimeError as e:
                if not is_oom(e):
                    raise
                self.shrink(e)
                continue
            on_done(chunk, result)
            pos += len(chunk)
