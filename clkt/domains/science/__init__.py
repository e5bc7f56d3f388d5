"""science: new arXiv papers (metadata under CC0 1.0; one request every 3 s on a single connection)."""

from __future__ import annotations

from clkt.domains.science.facts import PaperFacts
from clkt.domains.science.settings import ArxivOptions, ArxivSettings
from clkt.domains.spec import DomainSpec

__all__ = ["SPEC", "ArxivOptions", "ArxivSettings", "PaperFacts"]

SPEC = DomainSpec(
    name="science", package=__name__, facts=PaperFacts, source="arxiv", settings=ArxivSettings, quota=20,
    slots=("submitted", "first_author", "last_author", "author_count", "primary_category", "category_count"),
)
