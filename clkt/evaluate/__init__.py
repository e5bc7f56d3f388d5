"""Evaluation, the GPU side: MCQ prompts, letter parsing, the scorers (generate, letter-logprob,
option-loglik), the runner that answers a snapshot's questions, and the records it produces (`results`:
per-question results and epochs; `summary`: a finished job's typed summary).

It imports neither `clkt.inject` (which drives it) nor `clkt.report` (which reads what was stored).
"""

from __future__ import annotations

__all__: list[str] = []
