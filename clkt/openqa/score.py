"""The normaliser layer: an answer against the gold and its aliases, offline and deterministic.

Verdicts are SimpleQA's: CORRECT, INCORRECT, NOT_ATTEMPTED. In order:
1. NOT_ATTEMPTED: an empty or whitespace-only answer, one left empty by its markup or frame, one that only echoes
   the question or the prompt's instruction (or a piece of them), a refusal (*I don't know*, *je ne sais pas*, *わかりません*, *不知道*).
2. INCORRECT (not a short answer): the scored line is over `MAX_SPAN_CHARS` (a 10 KB ramble is read no further
   than its first line: the stop rule's cut).
3. CORRECT when a reading of the answer (`clkt.openqa.text.answer_spans`) meets a gold form of the test language:
   - numbers (kind number): the one value the answer states, right to the gold's last significant figure
     (`clkt.openqa.numbers.matches`); several different values are a hedge, INCORRECT;
   - dates (kind date): the one date the answer states has every part the gold has (`clkt.openqa.dates`);
   - otherwise (and for a number or date answer written in words the readers miss): the normalised forms are
     equal, or the gold's words stand whole in a short answer (*Paris, France*) that names no alternative
     (*Paris or Lyon* is a hedge).
4. Answered in another language (counted apart, never right): the answer meets another language's gold and not
   this one's, or `clkt.openqa.langid.identify` finds it in another language (script, or lingua with confidence).
5. INCORRECT.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from clkt.openqa import dates, numbers
from clkt.openqa.langid import identify
from clkt.openqa.prompts import INSTRUCTIONS
from clkt.openqa.question import AnswerKind, LangGold, ShortAnswerQuestion
from clkt.openqa.text import CJK_LANGS, answer_spans, is_refusal, normalise

__all__ = ["DEFAULT_LANGS", "MAX_SPAN_CHARS", "ScoredAnswer", "Verdict", "score", "score_answer"]

DEFAULT_LANGS = ("en", "ja", "zh", "fr", "es")
MAX_SPAN_CHARS = 200  # a scored line longer than this is not a short answer
MIN_ECHO_CHARS = 12  # a repeated piece of the question this long (a third in ja/zh) is an echo, not an answer
MAX_EXTRA_WORDS = 4  # words beside the gold's that a containing answer may have (*Paris, France*)
NORMALISER = "normaliser.v1"  # the layer's name and version, recorded on each verdict

_HEDGES: dict[str, tuple[str, ...]] = {
    "en": ("or", "and", "either", "maybe", "perhaps"), "fr": ("ou", "et", "soit", "peut etre"),
    "es": ("o", "u", "y", "e", "quizas", "tal vez"), "ja": ("または", "あるいは", "か", "や", "と", "もしくは"),
    "zh": ("或", "或者", "还是", "還是", "和", "与", "與", "也许", "可能"),
}


class Verdict(StrEnum):
    CORRECT = "CORRECT"
    INCORRECT = "INCORRECT"
    NOT_ATTEMPTED = "NOT_ATTEMPTED"


@dataclass(frozen=True, kw_only=True, slots=True)
class ScoredAnswer:
    """One answer's verdict by the normaliser, with why; `other_language` answers are INCORRECT, counted apart."""

    verdict: Verdict
    reason: str
    other_language: bool = False
    answer_lang: str | None = None  # the answer's language where it could be told
    matched: str | None = None  # the gold form it met
    layer: str = NORMALISER


_QUESTION_LABEL = re.compile(r"^\s*(?:question|pregunta|q|問題|质问|質問|问题)\s*[:：]", re.IGNORECASE)


def _is_echo(span: str, texts: Iterable[str], lang: str) -> bool:
    """Whether the span only repeats (a piece of) the question or the prompt's instruction: a piece of at least
    `MIN_ECHO_CHARS` characters (a third of that in ja/zh), or the whole of a shorter text."""
    s = normalise(_QUESTION_LABEL.sub("", span), lang)
    least = MIN_ECHO_CHARS // 3 if lang in CJK_LANGS else MIN_ECHO_CHARS
    for text in texts:
        q = normalise(text, lang)
        if s and q and s in q and len(s) >= min(len(q), least):
            return True
    return False


def _echo_rest(span: str, question: str | None, lang: str) -> str | None:
    """What follows an echoed question in the span (None: it does not begin with the question)."""
    if not question:
        return None
    body = _QUESTION_LABEL.sub("", span).strip()
    if body.casefold().startswith(question.strip().casefold()):
        return body[len(question.strip()):].strip()
    q, s = normalise(question, lang), normalise(body, lang)
    return s[len(q):] if q and s.startswith(q) else None


def _not_attempted(answer: str, spans: tuple[str, ...], echoes: tuple[str, ...], lang: str) -> str | None:
    if not answer.strip():
        return "empty answer"
    if not spans:
        return "nothing left once markup and frame are removed"
    if _is_echo(spans[0], echoes, lang):
        return "only echoes the question or the prompt"
    if any(is_refusal(s, lang) for s in spans):
        return "refusal"
    return None


def _contains(answer: str, gold: str, lang: str) -> bool:
    """The gold's words stand whole in a short answer that names no alternative."""
    if not gold or gold not in answer:
        return False
    if lang in CJK_LANGS:
        left = answer.replace(gold, " ")
        return len(left.strip()) <= 2 * MAX_EXTRA_WORDS and not any(h in left for h in _HEDGES.get(lang, ()))
    a, g = answer.split(), gold.split()
    for i in range(len(a) - len(g) + 1):
        if a[i:i + len(g)] == g:
            rest = a[:i] + a[i + len(g):]
            return len(rest) <= MAX_EXTRA_WORDS and not set(rest) & set(_HEDGES.get(lang, ()))
    return False


def _text_match(spans: Iterable[str], forms: Iterable[str], lang: str) -> str | None:
    keys = [(f, normalise(f, lang)) for f in forms]
    for span in spans:
        ns = normalise(span, lang)
        for form, key in keys:
            if ns == key:
                return form
        for form, key in keys:
            if _contains(ns, key, lang):
                return form
    return None


def _value_match(spans: tuple[str, ...], gold: LangGold, lang: str, kind: AnswerKind) -> tuple[bool | None, str]:
    """(True/False, why) when the answer states a number or date to judge; (None, "") when it states none."""
    span = spans[-1]
    if kind is AnswerKind.number:
        found_n = {n.value: n for n in numbers.find_numbers(span, lang)} or {
            n.value: n for n in numbers.find_numbers(span, lang, articles_as_one=True)}  # fr "un but": 1
        if len(found_n) > 1:
            return False, f"hedged: {len(found_n)} different numbers"
        golds_n = [g for g in (numbers.parse_gold_number(f, lang) for f in gold.forms()) if g is not None]
        for value in found_n.values():
            ok = any(numbers.matches(g, value) for g in golds_n)
            return ok, f"number {value.value} {'is' if ok else 'is not'} the gold to its last significant figure"
        return None, ""
    found_d = set(dates.find_dates(span, lang))
    if len(found_d) > 1:
        return False, f"hedged: {len(found_d)} different dates"
    golds_d = [g for g in (dates.parse_gold_date(f, lang) for f in gold.forms()) if g is not None]
    for d in found_d:
        ok = any(dates.matches(g, d) for g in golds_d)
        return ok, f"date {d} {'has' if ok else 'does not have'} the gold's parts"
    return None, ""


def score_answer(
    answer: str, *, gold: LangGold, lang: str, kind: AnswerKind, question: str | None = None,
    other_golds: Mapping[str, LangGold] | None = None, langs: Iterable[str] = DEFAULT_LANGS,
    echoes: Sequence[str] = (),
) -> ScoredAnswer:
    """The normaliser's verdict on `answer` to a question in `lang` (see the module docstring); `echoes`: prompt
    texts besides the question whose repetition is no answer (the instruction)."""
    spans = answer_spans(answer, lang)
    why = _not_attempted(answer, spans, (*([question] if question else []), *echoes), lang)
    if why is not None:
        return ScoredAnswer(verdict=Verdict.NOT_ATTEMPTED, reason=why)
    rest = _echo_rest(spans[0], question, lang)
    if rest:
        spans = (*spans, rest)
    if len(spans[0]) > MAX_SPAN_CHARS:
        return ScoredAnswer(verdict=Verdict.INCORRECT, reason=f"not a short answer ({len(spans[0])} characters)")
    if kind in (AnswerKind.number, AnswerKind.date):
        ok, why = _value_match(spans, gold, lang, kind)
        if ok:
            return ScoredAnswer(verdict=Verdict.CORRECT, reason=why, answer_lang=lang, matched=gold.answer)
        if ok is False:  # the value read is the verdict ("5" is not "-5", though their letters are); its language
            # is told by its script only (lingua reads "113万" as Chinese)
            return _elsewhere(spans, lang, None, langs, lingua=False) or ScoredAnswer(
                verdict=Verdict.INCORRECT, reason=why)
    form = _text_match(spans, gold.forms(), lang)
    if form is not None:
        return ScoredAnswer(verdict=Verdict.CORRECT, reason="meets a gold form", answer_lang=lang, matched=form)
    return _elsewhere(spans, lang, other_golds, langs) or ScoredAnswer(
        verdict=Verdict.INCORRECT, reason="meets no gold form")


def _elsewhere(
    spans: tuple[str, ...], lang: str, other_golds: Mapping[str, LangGold] | None, langs: Iterable[str],
    *, lingua: bool = True,
) -> ScoredAnswer | None:
    """An INCORRECT answered in another language, or None when it cannot be told to be."""
    for other, gold in (other_golds or {}).items():
        if other != lang and (form := _text_match(spans[-1:], gold.forms(), other)) is not None:
            return ScoredAnswer(verdict=Verdict.INCORRECT, reason=f"meets the {other} gold {form!r}",
                                other_language=True, answer_lang=other)
    guess = identify(spans[-1], lang, langs=langs, lingua=lingua)
    if guess.other:
        return ScoredAnswer(verdict=Verdict.INCORRECT, reason=f"answered in another language: {guess.why}",
                            other_language=True, answer_lang=guess.lang)
    return None


def score(question: ShortAnswerQuestion, lang: str, answer: str) -> ScoredAnswer:
    """The normaliser's verdict on `answer` to `question` asked in `lang`."""
    return score_answer(
        answer, gold=question.gold(lang), lang=lang, kind=question.kind, question=question.questions[lang],
        other_golds={k: v for k, v in question.golds.items() if k != lang}, langs=question.langs,
        echoes=(INSTRUCTIONS[lang],) if lang in INSTRUCTIONS else (),
    )
