"""The typed facts of a science entity: a new arXiv paper."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from clkt.domain_base import Facts

__all__ = ["PaperFacts"]


class PaperFacts(Facts):
    """A new arXiv paper (science): its first version's metadata, as the arXiv API lists it."""

    kind: Literal["paper"] = "paper"
    arxiv_id: str  # without its version ("2511.18882")
    title: str  # plain text: markup stripped, whitespace folded
    authors: list[str] = Field(min_length=1)  # in the paper's order
    primary_category: str  # "cs.CV"
    categories: list[str] = Field(default_factory=list)  # the primary first, then the cross-lists
    submitted: datetime  # aware UTC: the first version's submission
    version: int = 1
    comment: str | None = None
    journal_ref: str | None = None
    doi: str | None = None
    summary: str | None = None  # the abstract, whitespace folded (TeX kept as written)
