"""MEMIT's closed-form update of one layer's MLP output projection (Meng et al. 2023, eq. 14).

The projection maps keys `k` (its input, size d_ff) to values (size d_model): `v = W k`. For the edits' keys
`K` (d_ff x n) and the residuals `R` (d_model x n) this layer must add, the update that writes them while
changing the outputs on the preserved keys as little as possible (least squares) is

    Δ = R Kᵀ (C + K Kᵀ)⁻¹,    C = λ · E[k kᵀ]

with `E[k kᵀ]` the keys' second moment over ordinary text (`clkt.inject.editing.covariance`) and λ weighing the
preserved keys against the edits. λ -> 0 writes the residuals exactly (`Δ K = R` when n <= d_ff); λ -> ∞ leaves
the layer as it was (Δ -> 0).

`through_norm` turns a residual into the projection's own change where a norm sits between the projection and the
residual stream (Gemma 2/3). `spread` is MEMIT's eq. 20: the residual still missing at the top edited layer, divided among the layers left.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GAIN_FLOOR", "JITTER", "memit_delta", "spread", "through_norm"]

JITTER = 1e-9  # relative ridge on the diagonal of C + K Kᵀ
GAIN_FLOOR = 1e-4  # relative to the largest |gain|: a norm coordinate below it is taken as closed (`through_norm`)


def memit_delta(keys: Any, residuals: Any, second_moment: Any, *, lam: float) -> Any:
    """Δ (d_model x d_ff) for `keys` (n x d_ff), `residuals` (n x d_model) and `second_moment` E[k kᵀ]
    (d_ff x d_ff), solved in float64 on the CPU and float32 on a GPU."""
    import torch

    dtype = torch.float64 if keys.device.type == "cpu" else torch.float32
    k = keys.to(dtype).T  # d_ff x n
    r = residuals.to(dtype=dtype, device=keys.device).T  # d_model x n
    a = lam * second_moment.to(dtype=dtype, device=keys.device) + k @ k.T
    a.diagonal().add_(JITTER * float(a.diagonal().mean()) + 1e-12)  # a key direction no text ever took stays solvable
    # Δ = R Kᵀ A⁻¹ with A symmetric: Δᵀ = A⁻¹ K Rᵀ
    return torch.linalg.solve(a, k @ r.T).T


def spread(z: Any, current: Any, *, layers_left: int) -> Any:
    """The residual each of the `layers_left` layers (this one included) writes: (z - h) / layers_left."""
    if layers_left < 1:
        raise ValueError("layers_left must be >= 1")
    return (z - current) / layers_left


def through_norm(outputs: Any, residuals: Any, *, gain: Any, eps: float) -> Any:
    """The change of the projection's outputs that adds `residuals` to the residual stream when an RMSNorm of
    scale `gain` sits between them (Gemma 2/3: stream += gain * o / rms(o)): the outputs whose norm gives the
    wanted stream, at the same rms as now (the norm forgets the scale). `outputs`, `residuals`: n x d_model."""
    import torch

    rms = (outputs.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    wanted = outputs / rms * gain + residuals
    # a coordinate whose gain is (near) zero passes nothing to the stream (Gemma 3 270M has exact zeros: layers 3
    # and 4): no change of the outputs can write it, so it is left as it is rather than divided by zero
    live = gain.abs() > GAIN_FLOOR * gain.abs().max().clamp_min(1e-30)
    safe = torch.where(live, gain, torch.ones_like(gain))
    return torch.where(live, wanted / safe * rms - outputs, torch.zeros_like(outputs))
