"""The in-context track's prompt: the entity's document (in the context language), then the multiple-choice
question and its options in the test language (`clkt.evaluate.prompts.mcq_text`, the paper's generate prompt).

```
Document:
<document, possibly cut: see below>

<instruction>

<question>
A. <option> ... D. <option>
<answer cue>            (base models; instruct models and API targets get the text without it as one user turn)
```
The floor (no context) is the same prompt without the document block.

A local target scored by `option-loglik-norm` (a base model: `clkt.incontext.askers.incontext_scorer`) reads the
same document block, then the question and the answer cue, and each option's text is scored as the continuation
(`clkt.evaluate.loglik`, the parametric jobs' context with the document in front). The document is fitted with the
MCQ prompt above either way: that context is shorter, so the same documents are cut and the counts are the same.

The truncation rule (documented in the README): the prompt must leave `max_new_tokens` free in the model's
context (`context_tokens`). The question block is never cut. When the whole document does not fit, its head is
kept, the longest prefix that fits, cut back to the last paragraph break, else sentence end, else whitespace in
that prefix, and the marker `TRUNCATION_MARK` appended (the facts a question asks about are mostly near the top
of an entity's document, which opens with its summary). When not even `MIN_DOCUMENT_TOKENS` of the document fit,
the prompt cannot be built: the entity is skipped in that context language, and counted.
Token counts come from the model's tokenizer for local targets and from `estimate_tokens` (UTF-8 bytes / 3,
rounded up: a safe over-estimate for Latin and CJK scripts alike) for API targets.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from clkt.evaluate.prompts import mcq_text

__all__ = [
    "DOCUMENT_HEADER",
    "INCONTEXT_PROMPT_VERSION",
    "MIN_DOCUMENT_TOKENS",
    "TRUNCATION_MARK",
    "BuiltPrompt",
    "build_prompt",
    "document_block",
    "estimate_tokens",
    "fit_document",
]

INCONTEXT_PROMPT_VERSION = "incontext-v1"
DOCUMENT_HEADER = "Document:\n"
TRUNCATION_MARK = " [...]"
MIN_DOCUMENT_TOKENS = 32  # less of the document than this is no context: the entity is skipped instead
_BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"(?<=[.!?。！？])\s"), re.compile(r"\s"))

Counter = Callable[[str], int]  # text -> tokens


def estimate_tokens(text: str) -> int:
    """A safe over-estimate of a text's tokens when the model's tokenizer is not at hand (API targets)."""
    return math.ceil(len(text.encode("utf-8")) / 3)


@dataclass(frozen=True, slots=True, kw_only=True)
class BuiltPrompt:
    text: str | None  # None: it cannot fit the context even with the document cut (skipped)
    truncated: bool = False
    document: str | None = None  # the document as it is in the prompt (cut when `truncated`); None: the floor


def document_block(document: str | None) -> str:
    """The prompt's text before the question block: the (fitted) document under its header, "" for the floor."""
    return "" if document is None else f"{DOCUMENT_HEADER}{document}\n\n"


def _cut(document: str, keep_chars: int) -> str:
    """The document's first `keep_chars` characters, cut back to the last paragraph / sentence / word break."""
    head = document[:keep_chars]
    for pattern in _BREAKS:
        ends = [m.start() for m in pattern.finditer(head)]
        if ends and ends[-1] > keep_chars // 2:
            return head[: ends[-1]].rstrip()
    return head.rstrip()


def fit_document(document: str, *, budget: int, count: Counter) -> tuple[str, bool] | None:
    """(the document, or its head that fits in `budget` tokens with the mark, whether it was cut), or None when
    not even `MIN_DOCUMENT_TOKENS` fit."""
    if count(document) <= budget:
        return document, False
    if budget < MIN_DOCUMENT_TOKENS + count(TRUNCATION_MARK):
        return None
    lo, hi = 0, len(document)  # the longest prefix (in characters) whose cut fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(_cut(document, mid) + TRUNCATION_MARK) <= budget:
            lo = mid
        else:
            hi = mid - 1
    cut = _cut(document, lo)
    if not cut or count(cut) < MIN_DOCUMENT_TOKENS:
        return None
    return cut + TRUNCATION_MARK, True


def build_prompt(
    *, document: str | None, question: str, options: list[str], lang: str, cue: bool, context_tokens: int,
    max_new_tokens: int, count: Counter,
) -> BuiltPrompt:
    """The track's prompt for one question (`document` None: the no-context floor), fitted to the context."""
    mcq = mcq_text(question, options, lang, cue=cue)
    if document is None:
        return BuiltPrompt(text=mcq if count(mcq) + max_new_tokens <= context_tokens else None)
    frame = f"{DOCUMENT_HEADER}\n\n{mcq}"
    budget = context_tokens - max_new_tokens - count(frame)
    fitted = fit_document(document.strip(), budget=budget, count=count)
    if fitted is None:
        return BuiltPrompt(text=None)
    doc, truncated = fitted
    return BuiltPrompt(text=f"{document_block(doc)}{mcq}", truncated=truncated, document=doc)
