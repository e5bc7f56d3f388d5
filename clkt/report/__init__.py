"""Reporting: the paper's metrics over stored results, Learn, the report's data, figures and Markdown, the
report writer and the service that writes a snapshot's report once its GPU jobs have all finished.

What runs on the GPU side (prompts, parsing, scorers) is `clkt.evaluate`; this package reads what the jobs
stored and never imports `clkt.inject`.
"""

from __future__ import annotations

__all__: list[str] = []
