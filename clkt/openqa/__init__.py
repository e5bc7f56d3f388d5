"""The open track: short-answer questions beside the MCQs (issue 47; the paper's first future work).

- `question`: the typed short-answer question (gold and aliases per language; an empty gold refused);
- `from_facts`: questions from an entity's typed facts, offline, for every domain;
- `prompts`, `generate`: the answer prompt per target kind, the token budget, the stop rule, greedy answers
  (local targets through the evaluation's batches, API targets through the agents' stack);
- `text`, `numbers`, `dates`, `langid`, `score`: the normaliser layer (offline, deterministic) and the answer's
  language (answered in another language: counted apart, never right);
- `layers`: the normaliser and the jury (`agents.jury`) side by side, each with its own verdict.
"""

from __future__ import annotations

from clkt.openqa.question import AnswerKind, LangGold, ShortAnswerQuestion
from clkt.openqa.score import ScoredAnswer, Verdict, score, score_answer

__all__ = ["AnswerKind", "LangGold", "ScoredAnswer", "ShortAnswerQuestion", "Verdict", "score", "score_answer"]
