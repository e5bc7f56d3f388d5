"""The evaluation batch size: configured or automatic, halved on out-of-memory, and the job's retry sizes."""

from __future__ import annotations

import pytest
import torch

from clkt.config import GpuSettings
from clkt.evaluate.memory import CPU_AUTO_BATCH, CPU_AUTO_GENERATE_BATCH, BatchSizer, OutOfMemory, is_oom
from clkt.evaluate.scorers import ScorerName


def test_automatic_size_starts_at_the_device_maximum() -> None:
    assert BatchSizer.for_job(GpuSettings(), "cuda:0").size == 64
    assert BatchSizer.for_job(GpuSettings(eval_batch_max=24), "cuda").size == 24
    assert BatchSizer.for_job(GpuSettings(), "cpu").size == CPU_AUTO_BATCH
    fixed = BatchSizer.for_job(GpuSettings(eval_batch_size=5), "cuda")
    assert (fixed.size, fixed.automatic) == (5, False)


def test_generation_on_a_cpu_starts_larger_than_the_scoring_passes() -> None:
    # a decoding step on a CPU costs little more for more rows; a scoring pass is compute-bound
    sizes = {name: BatchSizer.for_job(GpuSettings(), "cpu", name=name.value).size for name in ScorerName}
    assert sizes == {ScorerName.generate: CPU_AUTO_GENERATE_BATCH, ScorerName.letter_logprob: CPU_AUTO_BATCH,
                     ScorerName.option_loglik: CPU_AUTO_BATCH}
    assert CPU_AUTO_GENERATE_BATCH > CPU_AUTO_BATCH
    assert BatchSizer.for_job(GpuSettings(eval_batch_max=12), "cpu", name="generate").size == 12  # the maximum still caps it
    assert BatchSizer.for_job(GpuSettings(), "cuda", name="generate").size == 64  # a GPU starts at its maximum for every pass
    assert BatchSizer.for_job(GpuSettings(eval_batch_size=5), "cpu", name="generate").size == 5  # a configured size wins


def test_is_oom() -> None:
    assert is_oom(torch.cuda.OutOfMemoryError("CUDA out of memory"))
    assert is_oom(RuntimeError("MPS backend out of memory"))
    assert not is_oom(RuntimeError("shape mismatch"))
    assert not is_oom(ValueError("out of memory"))


def test_run_halves_and_reruns_the_failed_chunk() -> None:
    sizer = BatchSizer(size=8, automatic=True)
    seen: list[list[int]] = []

    def fn(chunk: list[int]) -> int:
        if len(chunk) > 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return sum(chunk)

    sizer.run(list(range(10)), fn, on_done=lambda c, _r: seen.append(c))
    assert [x for c in seen for x in c] == list(range(10))  # every item once, in order
    assert sizer.settled == 2 and all(len(c) <= 2 for c in seen)


def test_configured_size_and_the_smallest_automatic_one_raise() -> None:
    def boom(_: list[int]) -> None:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    with pytest.raises(OutOfMemory, match="configured batch size 4") as e:
        BatchSizer(size=4, automatic=False).run([1, 2, 3, 4], boom, on_done=lambda *_: None)
    assert (e.value.where, e.value.batch_size) == ("eval", 4)
    with pytest.raises(OutOfMemory, match="smallest batch size 1"):
        BatchSizer(size=2, automatic=True).run([1, 2], boom, on_done=lambda *_: None)


def test_other_errors_pass_through() -> None:
    def bad(_: list[int]) -> None:
        raise RuntimeError("index out of range")

    with pytest.raises(RuntimeError, match="index out of range"):
        BatchSizer(size=2, automatic=True).run([1], bad, on_done=lambda *_: None)
