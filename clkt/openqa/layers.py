"""The scoring layers of one open answer, each kept with its own name and verdict, never merged into one figure.

- `normaliser` (`clkt.openqa.score`, offline, deterministic, always there): CORRECT / INCORRECT / NOT_ATTEMPTED,
  with the answer's language: `other_language` answers are INCORRECT and counted apart;
- `jury` (`agents.jury`, where configured): the majority of the LLM judges, or None when it is undecided, with the
  judges' votes, the judge prompt's version and the cost.

`LayerCounts` tallies answers per layer (n, each verdict, answered in another language, jury undecided), the raw
counts a report turns into rates with their intervals; the two layers are compared on the same answers by
`agreement` (the share of answers both decided that they grade alike: plumbing, not the judges' quality, which
needs human labels: `clkt audit`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from clkt.openqa.question import ShortAnswerQuestion
from clkt.openqa.score import ScoredAnswer, score

if TYPE_CHECKING:
    from agents.jury import Jury, JuryVerdict

__all__ = ["LayerCounts", "LayeredVerdict", "agreement", "agreement_of", "score_layers"]


@dataclass(frozen=True, kw_only=True, slots=True)
class LayeredVerdict:
    qid: str
    lang: str
    answer: str
    normaliser: ScoredAnswer
    jury: JuryVerdict | None = None  # None: no jury configured


async def score_layers(question: ShortAnswerQuestion, lang: str, answer: str, *, jury: Jury | None = None) -> LayeredVerdict:
    """Every configured layer's verdict on `answer` to `question` in `lang`."""
    norm = score(question, lang, answer)
    verdict = None
    if jury is not None:
        gold = question.gold(lang)
        verdict = await jury.grade(question=question.questions[lang], gold=gold.answer, aliases=gold.aliases,
                                   answer=answer, lang=lang)
    return LayeredVerdict(qid=question.qid, lang=lang, answer=answer, normaliser=norm, jury=verdict)


@dataclass
class LayerCounts:
    """Counts per layer and language: `normaliser[lang]` and `jury[lang]` by verdict; `other_language[lang]`."""

    n: Counter[str] = field(default_factory=Counter)
    normaliser: dict[str, Counter[str]] = field(default_factory=dict)
    jury: dict[str, Counter[str]] = field(default_factory=dict)
    other_language: Counter[str] = field(default_factory=Counter)

    def add(self, v: LayeredVerdict) -> None:
        self.n[v.lang] += 1
        self.normaliser.setdefault(v.lang, Counter())[v.normaliser.verdict.value] += 1
        self.other_language[v.lang] += v.normaliser.other_language
        if v.jury is not None:
            self.jury.setdefault(v.lang, Counter())[v.jury.verdict or "undecided"] += 1

    @classmethod
    def of(cls, verdicts: Iterable[LayeredVerdict]) -> LayerCounts:
        counts = cls()
        for v in verdicts:
            counts.add(v)
        return counts


def agreement(verdicts: Iterable[LayeredVerdict]) -> tuple[int, int]:
    """(alike, n): of the answers the jury decided, how many it grades as the normaliser does."""
    return agreement_of((v.normaliser.verdict.value, v.jury.verdict) for v in verdicts if v.jury is not None)


def agreement_of(pairs: Iterable[tuple[str, str | None]]) -> tuple[int, int]:
    """(alike, n) over (normaliser's verdict, jury's verdict or None) pairs: the jury's undecided ones left out (the
    stored verdicts' form of `agreement`, which the report reads)."""
    decided = [(a, b) for a, b in pairs if b]
    return sum(a == b for a, b in decided), len(decided)
