"""The in-context track: a target (API or local) answers a snapshot's questions with the entity's document in the
prompt (a contextual track, reported apart from the parametric results: `clkt.report.incontext`)."""

from __future__ import annotations

from clkt.incontext.askers import DEFAULT_API_CONTEXT, ApiAsker, Ask, Asker, LocalAsker, Reply, incontext_scorer
from clkt.incontext.prompt import INCONTEXT_PROMPT_VERSION, build_prompt, estimate_tokens, fit_document
from clkt.incontext.track import InContextTrack, TrackCounts

__all__ = [
    "DEFAULT_API_CONTEXT",
    "INCONTEXT_PROMPT_VERSION",
    "ApiAsker",
    "Ask",
    "Asker",
    "InContextTrack",
    "LocalAsker",
    "Reply",
    "TrackCounts",
    "build_prompt",
    "estimate_tokens",
    "fit_document",
    "incontext_scorer",
]
