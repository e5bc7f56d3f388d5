"""The decoded text of a completion that grows one token at a time, decoding only its last few tokens per step.

`StreamText.text` is `tokenizer.decode(tokens, skip_special_tokens=True)` after every `add`, as continuous
generation checks it at every step (`letter_decided`), without decoding the whole completion again each time
(that is O(n^2) tokenizer work per row, and with a GPU's fast steps and large batches a share of every step).
It does what streaming decoders do: the text is a stable part, the whole decode of the tokens up to a boundary,
and the text of the tokens after it, decoded with `CONTEXT` tokens before them (a tokenizer may drop the leading
space of the first token it decodes, or join a piece to the one before it) less the context's own text. That is the
whole decode while both parts are clean: a byte that is not (yet) part of a whole character (U+FFFD, the bytes of
a character split over byte tokens, or a stray byte) can turn the text of the bytes before it into U+FFFD as well
(byte fallback decodes a run of byte tokens together), beyond the context. So a step whose new text holds U+FFFD,
or whose decoded context is not the start of its decoded window, decodes whole, and the boundary moves only past
clean new text; a tokenizer whose clean decoding does not concatenate decodes whole from then on. Tests check the
text against whole decodes after every token with both embedded targets' tokenizer families.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CONTEXT", "StreamText"]

CONTEXT = 4  # tokens decoded before the new ones: a piece's text may depend on the tokens just before it

_INCOMPLETE = "\ufffd"


class StreamText:
    """One row's completion: its tokens and their decoded text (`skip_special_tokens=True`)."""

    __slots__ = ("_context_text", "_stable", "_start", "_tok", "_whole", "text", "tokens")

    def __init__(self, tokenizer: Any) -> None:
        self._tok = tokenizer
        self.tokens: list[int] = []
        self.text = ""
        self._stable = ""  # the decoded text of tokens[:_start]
        self._start = 0
        self._context_text = ""  # the decoded text of tokens[_start - CONTEXT : _start]
        self._whole = False  # decode whole from now on

    @property
    def decodes_whole(self) -> bool:
        """Whether the tokenizer turned out not to concatenate, so that every step decodes the whole completion."""
        return self._whole

    def _decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids, skip_special_tokens=True))

    def add(self, token: int) -> str:
        """Append `token`; returns the text of all the tokens so far."""
        self.tokens.append(token)
        if self._whole:
            self.text = self._decode(self.tokens)
            return self.text
        window = self._decode(self.tokens[max(0, self._start - CONTEXT) :])
        concatenates = window.startswith(self._context_text)
        tail = window[len(self._context_text) :]
        if not concatenates or _INCOMPLETE in tail:
            # a byte that is not (yet) part of a whole character can change the text of the bytes before it
            self.text = self._decode(self.tokens)
            self._whole = not concatenates and _INCOMPLETE not in self.text  # a tokenizer that does not concatenate
            return self.text  # the boundary stays after clean text
        self.text = self._stable + tail
        if not tail:
            return self.text  # the boundary stays after a token with text: the context has some
        self._stable, self._start = self.text, len(self.tokens)
        self._context_text = self._decode(self.tokens[max(0, self._start - CONTEXT) :])
        return self.text
