"""The entity bootstrap's draws, one rule for every interval over units: the report's pooled figures
(`clkt.report.pooled`) and the audit's kappa (`clkt.snapshots.agreement`).

`draw_counts(n, samples=..., seed=..., name=...)`: a (samples, n) array whose row r counts how many times each of
the `n` units was drawn (with replacement, n draws) in bootstrap sample r. The generator is seeded by the run's
seed and the crc32 of a name (a snapshot's id, a form's), so the same name and seed give the same draws in any
process."""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["draw_counts"]


def draw_counts(n: int, *, samples: int, seed: int, name: str) -> np.ndarray:
    """(samples, n) int counts of each unit in each of `samples` draws of `n` units with replacement."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])
    rows = np.arange(samples, dtype=np.intp)[:, None]
    draws = rng.integers(0, n, size=(samples, n))
    return np.bincount((rows * n + draws).ravel(), minlength=samples * n).reshape(samples, n)
