"""What a job costs, measured in the job process: the peak memory it held (the job summary's `peak_memory_bytes`
and `peak_memory_kind`, beside its `wall_s` and `inject_s`).

On a CUDA device the peak is the bytes torch allocated on it (`torch.cuda.max_memory_allocated`, reset when the
job starts); elsewhere, the process's peak resident set (`resource.getrusage`: the job runs in its own process,
so the peak is the job's). None where neither can be read (no `resource` module)."""

from __future__ import annotations

import sys

__all__ = ["peak_memory", "reset_peak_memory"]


def _cuda(device: str) -> bool:
    if not device.startswith("cuda"):
        return False
    import torch

    return bool(torch.cuda.is_available())


def reset_peak_memory(device: str) -> None:
    """Start the device's peak over (a CUDA device; the process's peak RSS cannot be reset)."""
    if _cuda(device):
        import torch

        torch.cuda.reset_peak_memory_stats()


def peak_memory(device: str) -> tuple[int | None, str | None]:
    """(bytes, "cuda" or "rss"); (None, None) where it cannot be read."""
    if _cuda(device):
        import torch

        return int(torch.cuda.max_memory_allocated()), "cuda"
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None, None
    peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak * (1 if sys.platform == "darwin" else 1024), "rss"  # bytes on macOS, KiB on Linux
