"""Evaluation: MCQ prompts, strict letter parsing, the two scorers, the paper's metrics and the report."""

from __future__ import annotations

__all__: list[str] = []
