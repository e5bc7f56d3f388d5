"""The arXiv API's settings (`[sources.arxiv]`): its real endpoint, its documented rate, its options."""

from __future__ import annotations

from pydantic import Field

from clkt.domain_base import Burst, Concurrency, RatePerS, SourceOptions, SourceSettings

__all__ = ["ArxivOptions", "ArxivSettings"]


class ArxivOptions(SourceOptions):
    page_size: int = Field(default=100, ge=1, le=2000)  # entries per query (arXiv asks for slices of at most 2000)
    # the search, ANDed to the submission window (arXiv's query syntax: cat:, au:, ti:, abs:, AND / OR / ANDNOT)
    query: str = Field(default="cat:cs.CL OR cat:cs.LG OR cat:astro-ph.EP", min_length=1, max_length=500)


class ArxivSettings(SourceSettings):
    """arXiv API (science, Atom XML): no key; one request every 3 s on a single connection (the API's terms);
    metadata under CC0 1.0."""

    base_url: str = "https://export.arxiv.org/api"
    rate_per_s: RatePerS = 1 / 3
    burst: Burst = 1
    concurrency: Concurrency = 1
    user_agent: str | None = "clkt/0.1 (+https://github.com/clkt; mailto:clkt@example.org)"
    poll_interval_s: float = Field(default=3600.0, gt=0, le=7 * 86400)
    lookback_days: int = Field(default=3, ge=1, le=3650)
    # a paper is listed once announced (the next weekday evening, ET): a Friday's submission appears on Monday,
    # so each window re-reads four days before the watermark
    overlap_hours: float = Field(default=96.0, ge=0, le=24 * 366)
    options: ArxivOptions = Field(default_factory=ArxivOptions)
