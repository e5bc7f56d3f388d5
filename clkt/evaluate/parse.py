"""Strict parsing of an answer letter out of a generated completion.

The reference code searches for any capital A–D, so "A film directed by…" counts as answer A. Here a letter
counts only when it stands as an answer:

1. at the very start (after whitespace and markdown): `B`, `B.`, `B)`, `(B)`, `**B**`, `B: text`, `B\\n…` —
   but not a word such as the article in "A film…";
2. anywhere after an explicit answer cue: "answer is C", "Answer: (C)", "答案：C", "Réponse : C", "正解はC"…

A completion that merely lists the options again ("A. Berlin\nB. Paris…") chooses nothing. Anything else is
unparseable (None) and scored as wrong.

`parse = "reference"` reproduces the reference code's rule instead: the first stand-alone capital A–D
anywhere in the completion (so the article in "A film…" is answer A). Numbers compared with the paper's must
use it. `letter_decided` tells generation when it may stop: once more text can no longer change the parse.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

__all__ = ["ParseMode", "letter_decided", "parse_answer_letter", "parse_letter", "parse_reference"]

ParseMode = Literal["strict", "reference"]
_REFERENCE = re.compile(r"(?<![A-Za-z0-9_])([A-D])(?![A-Za-z0-9_])")

_LEAD = re.compile(r"^[\s\*_`'\"“”‘’>#\-]*")
_AT_START = re.compile(r"^[\(\[]?([A-D])(?:[\)\]]|(?=[\s.:,;!?*_`'\"]|$))")
_NEXT_WORD = re.compile(r"^[\(\[]?[A-D][\)\]]?[\s\*_`'\"]*(?:$|[\r\n]|[.:,;)\]!?])")
_CUE = re.compile(
    r"(?:answer|option|choice|réponse|respuesta|resposta|risposta|antwort|答え|答案|回答|正解|选项|選択肢|정답|ответ)"
    r"[^A-Za-z\n]{0,12}?(?:\b(?:is|est|es|é|è|ist)\b)?[\s:：\-\*\"'「]*(?:\(([a-dA-D])\)|\[([a-dA-D])\]|(?-i:([A-D]))(?![A-Za-z]))",
    re.IGNORECASE,
)


_OPTION_LINE = re.compile(r"^\s*[\(\[]?([A-D])[.)\]:]", re.MULTILINE)


def parse_answer_letter(text: str) -> str | None:
    """The answer letter A–D, or None when the completion does not state one unambiguously."""
    if not text:
        return None
    s = unicodedata.normalize("NFKC", text)
    lines = [ln for ln in s.splitlines() if ln.strip()][:2]
    firsts = [m.group(1) for ln in lines if (m := _OPTION_LINE.match(ln))]
    if len(firsts) == 2 and firsts[0] != firsts[1] and not _CUE.search(s):
        return None  # the model lists the options again ("A. Berlin\nB. Paris…"): no choice was made
    head = _LEAD.sub("", s, count=1)
    m = _AT_START.match(head)
    if m and _NEXT_WORD.match(head):
        return m.group(1)
    if m and not re.match(r"^[\(\[]?[A-D]\s+\S", head):
        return m.group(1)
    c = _CUE.search(s)
    if c:
        return next(g for g in c.groups() if g).upper()
    return None


def parse_reference(text: str) -> str | None:
    """The reference code's rule: the first stand-alone capital A–D anywhere, or None."""
    m = _REFERENCE.search(unicodedata.normalize("NFKC", text or ""))
    return m.group(1) if m else None


def parse_letter(text: str, mode: ParseMode = "strict") -> str | None:
    return parse_reference(text) if mode == "reference" else parse_answer_letter(text)


# Continuations that could still change a parse: a word glued to the letter ("A" -> "Apple"), a word after
# it ("A " -> "A film"), a second listed option ("A. Berlin" -> "A. Berlin\nB. Paris"), an answer cue.
_PROBES = ("Zq", " zq", " Zq", "\nB. zq", "\nC) zq", ". zq", "\nAnswer: D")


def letter_decided(text: str, mode: ParseMode = "strict") -> bool:
    """True when the completion names a letter that no continuation of the probed kinds would change.

    Generation stops there (the tokens after the letter cannot change the score). The probes cover every way
    the parsers' rules look ahead; a test checks stopped and full completions parse the same.
    """
    got = parse_letter(text, mode)
    if got is None:
        return False
    if mode == "reference":  # the first stand-alone letter: decided once a non-word character follows it
        m = _REFERENCE.search(unicodedata.normalize("NFKC", text))
        return m is not None and m.end() < len(unicodedata.normalize("NFKC", text))
    return all(parse_answer_letter(text + p) == got for p in _PROBES)
