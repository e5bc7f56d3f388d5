"""What evaluating a model produces: one `ResultItem` per (question, scorer, variant), and one `EpochRecord`
per training epoch with its validation score.

These records sit below everything that passes them on: the runner (`clkt.evaluate.runner`) makes them,
the job process (`clkt.inject.job`) and its contract with the consumer (`clkt.inject.contract`) carry them,
the job's typed summary (`clkt.evaluate.summary`) keeps its epochs, and the report reads what was stored.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CONTROL_SPLIT", "LOCALITY_SPLIT", "EpochRecord", "ResultItem", "Variant"]

CONTROL_SPLIT = "control"  # ResultItem.split of a control-split question
LOCALITY_SPLIT = "locality"  # ResultItem.split of a locality-split question (an entity the target knew before)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Variant(str, Enum):
    base = "base"
    injected = "injected"


class ResultItem(_Model):
    qid: int
    lang: str
    variant: Variant
    scorer: str
    split: str
    predicted: str | None
    correct: bool
    raw: str = ""


class EpochRecord(_Model):
    epoch: int  # 1-based
    loss: float
    tokens: int
    seconds: float
    val_accuracy: float | None = None  # None: no validation questions
    val_margin: float | None = None  # mean margin of the right option's score (ties of val_accuracy); None: none
    # the open track's validation (`clkt.inject.open_val`): share right, the gold's mean token log-probability
    open_val_accuracy: float | None = Field(default=None, exclude_if=lambda v: v is None)
    open_val_loglik: float | None = Field(default=None, exclude_if=lambda v: v is None)
