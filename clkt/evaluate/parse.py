"""Strict parsing of an answer letter out of a generated completion.

The reference code searches for any capital A–D, so "A film directed by…" counts as answer A. Here a letter
counts only when it stands as an answer:

1. at the very start (after whitespace and markdown): `B`, `B.`, `B)`, `(B)`, `**B**`, `B: text`, `B\\n…` —
   but not a word such as the article in "A film…";
2. anywhere after an explicit answer cue: "answer is C", "Answer: (C)", "答案：C", "Réponse : C", "正解はC"…

A completion that merely lists the options again ("A. Berlin\nB. Paris…") chooses nothing. Anything else is
unparseable (None) and scored as wrong.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["parse_answer_letter"]

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
