"""The text layer of the normaliser: what an answer says once its form is set aside, per language.

`normalise(text, lang)`, in order: markup out (HTML tags and entities; Markdown marks go with the punctuation),
NFKC (full-width Latin and digits to half width, half-width katakana to full width, ligatures), zero-width and
other format characters out (ZWJ, ZWNJ, ZWSP, BOM, word joiner, soft hyphen: MultiLoKo found them inside gold
answers), case folded, diacritics folded on Latin letters (*Mexico* = *México*, *Beyonce* = *Beyoncé* in any language; never
on kana, whose dakuten are marks too), punctuation and symbols to spaces (`・` and `·` in names too), French elision
split (*l'Égypte* -> *l egypte*), leading articles dropped (en *the/a/an*, fr *le/la/les/l/un/une/des/du*, es
*el/la/los/las/lo/un/una/unos/unas*; German *der/die/das/ein/eine* for completeness), whitespace collapsed — and
removed for ja and zh, which write no spaces between words.

Articles are also "one" (fr *un*, es *una*, de *ein*): `normalise` drops them only in front of other words (so a
title *Un Chien andalou* and the answer *Chien andalou* meet), and answers whose kind is a number never pass
through it for their value (`clkt.openqa.numbers` reads *un* as 1 when it stands alone).

`answer_spans(answer, lang)`: the part of a generated answer that is scored: the first non-empty line (a base model
goes on with the next few-shot question: the stop rule cuts there too), without an answer frame (*Answer:*,
*The answer is*, *Réponse :*, *Respuesta:*, *答え：*, *答案是*, *It is*, *C'est*, *Es*) and the polite ending
(*です*, *。*). MultiLoKo lost a whole language to an unstripped frame.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["ARTICLES", "CJK_LANGS", "answer_spans", "fold", "is_refusal", "normalise", "states_answer", "strip_markup"]

CJK_LANGS = frozenset({"ja", "zh"})

ARTICLES: dict[str, frozenset[str]] = {
    "en": frozenset({"the", "a", "an"}),
    "fr": frozenset({"le", "la", "les", "l", "un", "une", "des", "du"}),
    "es": frozenset({"el", "la", "los", "las", "lo", "un", "una", "unos", "unas"}),
    "de": frozenset({"der", "die", "das", "ein", "eine", "einen", "einem", "einer"}),
}

_TAG = re.compile(r"<\s*/?\s*[a-zA-Z][^<>]{0,200}>")
_CODE = re.compile(r"<\s*(script|style)\b.*?(?:<\s*/\s*\1\s*>|$)", re.IGNORECASE | re.DOTALL)
_ELISION = re.compile(r"\b([ldjmnst]|qu)['’]", re.IGNORECASE)

_FRAMES: dict[str, tuple[str, ...]] = {
    "en": (r"(?:the\s+)?(?:short\s+|final\s+|correct\s+)?answer(?:\s+is)?\s*[:：\-–]?", r"a\s*[:：]",
           r"it\s+is\b", r"it['’]s\b", r"they\s+are\b"),
    "fr": (r"(?:la\s+)?r[ée]ponse(?:\s+est)?\s*[:：\-–]?", r"r\s*[:：]", r"c['’]est\b", r"ce\s+sont\b",
           r"il\s+s['’]agit\s+de\b"),
    "es": (r"(?:la\s+)?respuesta(?:\s+es)?\s*[:：\-–]?", r"r\s*[:：]", r"es\b", r"se\s+trata\s+de\b"),
    "ja": (r"答え\s*[:：は]?", r"回答\s*[:：は]?", r"解答\s*[:：は]?", r"正解\s*[:：は]?"),
    "zh": (r"答案\s*(?:[:：是为為])?", r"回答\s*[:：]?", r"答\s*[:：]"),
}
_ENDINGS: dict[str, str] = {
    "ja": r"(?:です|でした|である|だ)?\s*[。.．!！]*$",
    "zh": r"[。.．!！]*$",
}
_REFUSALS: dict[str, tuple[str, ...]] = {
    "en": (r"i\s+(?:do\s+not|don['’]t)\s+know", r"i['’]m\s+not\s+sure", r"i\s+am\s+not\s+sure", r"unknown",
           r"not\s+sure", r"i\s+cannot\s+(?:answer|say)", r"i\s+can['’]t\s+(?:answer|say)", r"no\s+idea",
           r"n/?a"),
    "fr": (r"je\s+ne\s+sais\s+pas", r"je\s+ne\s+suis\s+pas\s+s[ûu]r", r"inconnu", r"aucune\s+id[ée]e",
           r"je\s+ne\s+peux\s+pas\s+r[ée]pondre"),
    "es": (r"no\s+(?:lo\s+)?s[ée]", r"no\s+estoy\s+segur[oa]", r"desconocido", r"ni\s+idea",
           r"no\s+puedo\s+responder"),
    "ja": (r"わかりません", r"分かりません", r"知りません", r"不明", r"わからない", r"分からない"),
    "zh": (r"不知道", r"不清楚", r"未知", r"无法回答", r"無法回答", r"不确定"),
}


def strip_markup(text: str) -> str:
    """HTML tags out (script and style blocks with their content) and entities decoded, so `<b>Paris</b>`,
    `&lt;b&gt;Paris` and `<script>alert(1)</script>Paris` read as Paris."""
    once = _TAG.sub(" ", _CODE.sub(" ", text))
    return _TAG.sub(" ", _CODE.sub(" ", html.unescape(once)))


def _no_format_chars(text: str) -> str:
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _fold_marks(text: str) -> str:
    """Combining marks dropped from Latin letters only (*Beyoncé* = *Beyonce* in any language; kana keep their
    dakuten)."""
    out: list[str] = []
    base = ""
    for c in unicodedata.normalize("NFD", text):
        if unicodedata.category(c) == "Mn":
            if not ("a" <= base <= "z" or "A" <= base <= "Z"):
                out.append(c)
            continue
        base = c
        out.append(c)
    return unicodedata.normalize("NFC", "".join(out))


def _punct_to_space(text: str) -> str:
    return "".join(" " if unicodedata.category(c)[0] in "PSZ" else c for c in text)


def fold(text: str) -> str:
    """NFKC, case folded, Latin diacritics dropped: the form the number and date tables are written in."""
    return _fold_marks(unicodedata.normalize("NFKC", text).casefold())


def normalise(text: str, lang: str) -> str:
    """The comparable form of `text` in `lang` (see the module docstring); "" when nothing is left."""
    out = _no_format_chars(unicodedata.normalize("NFKC", strip_markup(text))).casefold()
    out = _fold_marks(out)
    if lang == "fr" or lang == "it":
        out = _ELISION.sub(r"\1 ", out)
    words = _punct_to_space(out).split()
    articles = ARTICLES.get(lang, frozenset())
    while len(words) > 1 and words[0] in articles:
        words = words[1:]
    return "".join(words) if lang in CJK_LANGS else " ".join(words)


def states_answer(question: str, gold: str, lang: str) -> bool:
    """Whether `question` states its own `gold` answer (a name in the entity's name, a number in its title)."""
    key = normalise(gold, lang)
    return bool(key) and key in normalise(question, lang)


def answer_spans(answer: str, lang: str) -> tuple[str, ...]:
    """The scored readings of an answer: its first non-empty line as written and, when it has one, without its
    answer frame (a title may begin like a frame: *It's Always Sunny*, so both are tried), polite ending removed."""
    text = _no_format_chars(unicodedata.normalize("NFKC", strip_markup(answer)))
    line = next((ln.strip() for ln in text.splitlines() if ln.strip(" \t*#>-_`")), "")
    line = _trim(line.strip(" \t*#>_`\"'“”«»「」『』"), lang)
    spans = [line]
    for frame in _FRAMES.get(lang, ()) + (_FRAMES["en"] if lang != "en" else ()):
        m = re.match(frame, line, flags=re.IGNORECASE)
        if m and line[m.end():].strip(" \t:："):
            spans.append(_trim(line[m.end():].strip(" \t:：*\"'“”«»「」『』"), lang))
            break
    return tuple(dict.fromkeys(s for s in spans if s))


def _trim(line: str, lang: str) -> str:
    ending = _ENDINGS.get(lang)
    if ending:
        line = re.sub(ending, "", line).strip()
    return line.rstrip(" .!。")


def is_refusal(span: str, lang: str) -> bool:
    """Whether the span says the model does not know (SimpleQA's NOT_ATTEMPTED), in `lang` or in English: a
    one-word refusal (*unknown*) only as the whole span (*Unknown Pleasures* is an album), a phrase at its start."""
    low = _fold_marks(span.casefold())
    for p in _REFUSALS.get(lang, ()) + (_REFUSALS["en"] if lang != "en" else ()):
        if re.fullmatch(rf"\W*(?:{p})\W*", low):
            return True
        if lang in CJK_LANGS and not p.isascii() and re.search(p, low):
            return True
        if "\\s" in p and re.match(rf"\W*(?:{p})\b", low):
            return True
    return False
