"""MEMIT's closed-form update of one layer's MLP output projection (Meng et al. 2023, eq. 14).

The projection maps keys `k` (its input, size d_ff) to values (size d_model): `v = W k`. For the edits' keys
`K` (d_ff x n) and the residuals `R` (d_model x n) this layer must add, the update that writes them while
changing the outputs on the preserved keys as little as possible (least squares) is

    Δ = R Kᵀ (C + K Kᵀ)⁻¹,    C = λ · E[k kᵀ]

with `E[k kᵀ]` the keys' second moment over ordinary text (`clkt.inject.editing.covariance`) and λ weighing the
preserved keys against the edits. λ -> 0 writes the residuals exactly (`Δ K = R` when n <= d_ff); λ -> ∞ leaves
the layer as it was (Δ -> 0).

The residuals `R` are changes of the projection's own outputs (`clkt.inject.editing.values`), so they are what
its weights can write even where a norm sits between the projection and the residual stream (Gemma 2/3).
"""

from __future__ import annotations

from typing import Any

__all__ = ["JITTER", "memit_delta"]

JITTER = 1e-9  # relative ridge on the diagonal of C + K Kᵀ


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
