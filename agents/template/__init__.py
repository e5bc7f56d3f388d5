"""The offline template engine: a deterministic `AgentBackend` for the structured domains.

Entry point: `TemplateBackend()`. Submodules: `plans` (plan a slot, render it in any language), `distractors`,
`values`, `judge` + `matchers` (the fact matcher) and `parsing` (numbers, dates and scores in 5 languages). The
templates per kind of facts (per slot x language, proper names and judge facts, each registered once in
`domains.AGENT_KINDS`) are each domain folder's `templates.py` (`clkt/domains/<name>/`), imported here for every
registered domain (`import_side`), so a new kind of facts is its domain folder.
"""

from __future__ import annotations

from agents.template.backend import ENGINE_NAME, PROMPT_VERSION, TemplateBackend
from agents.template.judge import judge_response
from agents.template.plans import build_mcqs, plan
from clkt.documents.registry import load_modules
from clkt.domains import import_side

__all__ = ["ENGINE_NAME", "PROMPT_VERSION", "TemplateBackend", "build_mcqs", "judge_response", "plan"]

load_modules(__name__, __path__)
import_side("templates")  # each domain folder's templates.py
