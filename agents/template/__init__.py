"""The offline template engine: a deterministic `AgentBackend` for the structured domains.

Entry point: `TemplateBackend()`. Submodules: `engine` (plan a slot, render it in any language),
`sports`/`movies`/`music`/`disasters` (templates per domain x slot x language), `distractors`, `values`,
`judge` (the fact matcher) and `parsing` (numbers, dates and scores in 5 languages).
"""

from __future__ import annotations

from agents.template.backend import ENGINE_NAME, PROMPT_VERSION, TemplateBackend
from agents.template.judge import judge_response
from agents.template.plans import build_mcqs, plan

__all__ = ["ENGINE_NAME", "PROMPT_VERSION", "TemplateBackend", "build_mcqs", "judge_response", "plan"]
