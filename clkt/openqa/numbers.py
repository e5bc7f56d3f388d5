"""Numbers in short answers, per language, and SimpleQA's rule for them: right to the gold's last significant figure.

What is read (`find_numbers`): digits in the language's convention (en `1,234.5`; fr `1 234,5`; es `1.234,5`; a
space or a thin space groups thousands in every language), full-width digits (NFKC), a minus sign, a magnitude
word or suffix after a number (`1.2 million`, `120k`, `1,5 millones`, `3.5万`, `2億`), number words (en *twenty-one*,
fr *quatre-vingt-dix*, es *ciento veinte*) and CJK numerals (`三万五千`, `二〇二四`).

The article trap (MultiLoKo): fr *un/une* and es *un/una/uno* are articles and "one". Here they read as 1 only
alone (the whole answer) or before another number word (*un millón*); en *a* only before a magnitude
(*a hundred*). Anywhere else they are articles, so *un total de 5* is 5, not 1 and 5.

Precision (`Num.exponent`): the place of the last significant figure as written. Every written digit counts
(`120,000` is exact to the unit), except that a magnitude word or suffix makes the digits before it the
significant ones (`120k`, `120 thousand`: to the ten thousand; `1.2 million`: to the hundred thousand).
`matches(gold, answer)`: the answer rounded (half up) at the gold's last significant figure equals the gold
(SimpleQA: gold `120k` accepts 115k-124k and refuses 113k and 100k).

Hand-written tables rather than a library: `text2num` (alpha2digit) knows en/fr/es but neither Japanese nor
Chinese, and number words in these five languages are a few dozen entries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext

from clkt.openqa.text import fold

__all__ = ["Num", "cjk_to_digits", "find_numbers", "matches", "parse_gold_number"]


@dataclass(frozen=True, slots=True)
class Num:
    """A number read from text: its value and the power of ten of its last significant figure."""

    value: Decimal
    exponent: int

    def rounded_at(self, exponent: int) -> Decimal:
        step = Decimal(1).scaleb(exponent)
        return (self.value / step).quantize(Decimal(1), rounding=ROUND_HALF_UP) * step


def matches(gold: Num, answer: Num) -> bool:
    """SimpleQA's rule: the answer, rounded at the gold's last significant figure, is the gold. An answer whose
    magnitude is beyond any rounding to the gold (a run of hundreds of digits in a hostile or runaway answer) is
    not the gold: it is refused before the rounding, which would exceed the decimal context's precision."""
    if answer.value and gold.value and answer.value.adjusted() > gold.value.adjusted() + 1:
        return False
    with localcontext() as ctx:
        ctx.prec = max(ctx.prec, gold.value.adjusted() - gold.exponent + 8)
        try:
            return answer.rounded_at(gold.exponent) == gold.value
        except InvalidOperation:  # an answer's digits far below the gold's precision: still not the gold
            return False


_MINUS = "-\u2212\u2012\u2013"
_GROUP = {"en": ",", "fr": ".", "es": "."}  # thousands separator besides a space (ja, zh: as en)
_DECIMAL = {"en": ".", "fr": ",", "es": ","}

_MAGNITUDE_WORDS: dict[str, dict[str, int]] = {
    "en": {"thousand": 3, "k": 3, "million": 6, "millions": 6, "mn": 6, "billion": 9, "billions": 9, "bn": 9,
           "trillion": 12},
    "fr": {"mille": 3, "k": 3, "million": 6, "millions": 6, "milliard": 9, "milliards": 9, "md": 9, "mds": 9},
    "es": {"mil": 3, "k": 3, "millon": 6, "millones": 6, "mil millones": 9, "millardo": 9, "millardos": 9},
}
_CJK_MAGNITUDE = {"万": 4, "萬": 4, "億": 8, "亿": 8, "千": 3, "百": 2}
_CJK_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
               "八": 8, "九": 9}
_CJK_UNITS = {"十": 1, "百": 2, "千": 3}
_CJK_BIG = {"万": 4, "萬": 4, "億": 8, "亿": 8}
_CJK_EXPONENT = ("千", "万", "萬", "億", "亿")
_CJK_RUN = re.compile(r"[〇零一二两兩三四五六七八九十百千万萬億亿]+")
_MIXED_RUN = re.compile(r"(?:\d+|[〇零一二两兩三四五六七八九十百千万萬億亿])+")

# number words (after case folding and diacritics folding): value, or a multiplier's power of ten as ("x", n)
_UNITS: dict[str, dict[str, int]] = {
    "en": {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
           "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
           "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90},
    "fr": {"zero": 0, "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "six": 6, "sept": 7,
           "huit": 8, "neuf": 9, "dix": 10, "onze": 11, "douze": 12, "treize": 13, "quatorze": 14, "quinze": 15,
           "seize": 16, "vingt": 20, "vingts": 20, "trente": 30, "quarante": 40, "cinquante": 50, "soixante": 60},
    "es": {"cero": 0, "un": 1, "uno": 1, "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6,
           "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "once": 11, "doce": 12, "trece": 13, "catorce": 14,
           "quince": 15, "dieciseis": 16, "diecisiete": 17, "dieciocho": 18, "diecinueve": 19, "veinte": 20,
           "veintiuno": 21, "veintiuna": 21, "veintidos": 22, "veintitres": 23, "veinticuatro": 24,
           "veinticinco": 25, "veintiseis": 26, "veintisiete": 27, "veintiocho": 28, "veintinueve": 29,
           "treinta": 30, "cuarenta": 40, "cincuenta": 50, "sesenta": 60, "setenta": 70, "ochenta": 80,
           "noventa": 90, "cien": 100, "ciento": 100, "doscientos": 200, "doscientas": 200, "trescientos": 300,
           "cuatrocientos": 400, "quinientos": 500, "seiscientos": 600, "setecientos": 700,
           "ochocientos": 800, "novecientos": 900},
}
_HUNDRED = {"en": ("hundred",), "fr": ("cent", "cents"), "es": ()}
_BIG_WORDS = {"en": {"thousand": 3, "million": 6, "billion": 9}, "fr": {"mille": 3, "million": 6, "millions": 6,
              "milliard": 9, "milliards": 9}, "es": {"mil": 3, "millon": 6, "millones": 6}}
_JOINERS = {"en": ("and",), "fr": ("et",), "es": ("y",)}
_ARTICLE_ONES = {"en": ("a", "an"), "fr": ("un", "une"), "es": ("un", "una", "uno")}


def _digits_pattern(lang: str) -> re.Pattern[str]:
    group = re.escape(_GROUP.get(lang, ","))
    dec = re.escape(_DECIMAL.get(lang, "."))
    return re.compile(  # a minus only after a space, a bracket or the start ("COVID-19" is 19)
        rf"(?<![\d.,])(?:(?<![^\s(])(-))?(\d{{1,3}}(?:(?:{group}|[ \u202f\u2009])\d{{3}})+|\d+)"
        rf"(?:(?:{dec}|[.,])(\d+))?(?!\d)"
    )


def _magnitude_after(text: str, end: int, lang: str) -> tuple[int, int]:
    """The magnitude word or suffix right after a number (its power of ten, where it ends), else (0, end)."""
    rest = text[end:end + 16]
    if lang in ("ja", "zh"):
        m = re.match(r"\s*([万萬億亿])", rest)
        return (_CJK_MAGNITUDE[m.group(1)], end + m.end()) if m else (0, end)
    words = _MAGNITUDE_WORDS.get(lang, _MAGNITUDE_WORDS["en"])
    for word in sorted(words, key=len, reverse=True):
        m = re.match(rf"\s?{re.escape(word)}(?![^\W\d_])", rest)
        if m:
            return words[word], end + m.end()
    return 0, end


def _digit_numbers(text: str, lang: str) -> list[tuple[int, int, Num]]:
    out = []
    for m in _digits_pattern(lang).finditer(text):
        sign, whole, frac = m.group(1), re.sub(r"[^\d]", "", m.group(2)), m.group(3) or ""
        try:
            value = Decimal(f"{whole}.{frac}" if frac else whole)
        except InvalidOperation:
            continue
        power, end = _magnitude_after(text, m.end(), lang)
        if frac:
            exponent = -len(frac)
        elif power:  # "120k": the zeros before a magnitude are not significant (SimpleQA)
            exponent = _zeros(int(whole))
        else:
            exponent = 0
        value, exponent = value.scaleb(power), exponent + power
        out.append((m.start(), end, Num(value=-value if sign else value, exponent=exponent)))
    return out


def _zeros(value: int) -> int:
    """The trailing zeros of `value` (not significant after a magnitude: "120 thousand" is to the ten thousand)."""
    text = str(value)
    return len(text) - len(text.rstrip("0")) if value else 0


def _cjk_value(run: str) -> int:
    """A CJK numeral run as an integer: positional (`二〇二四`) or with units (`三万五千`, `一億二千万`, `十二`), its
    digits possibly written in Arabic numerals (`3万5000`, `35万`)."""
    parts = re.findall(r"\d+|\D", run)
    if not any(p in _CJK_UNITS or p in _CJK_BIG for p in parts):
        return int("".join(p if p.isdigit() else str(_CJK_DIGITS[p]) for p in parts))
    total = section = digit = 0
    last_big = 99
    for p in parts:
        if p.isdigit() or p in _CJK_DIGITS:
            digit = int(p) if p.isdigit() else _CJK_DIGITS[p]
        elif p in _CJK_UNITS:
            section += (digit or 1) * 10 ** _CJK_UNITS[p]
            digit = 0
        else:
            power = _CJK_BIG[p]
            if power < last_big:  # 万 after 億: a section below the one before
                total += (section + digit) * 10**power
            else:
                total = (total + section + digit) * 10**power
            last_big, section, digit = power, 0, 0
    return total + section + digit


def cjk_to_digits(text: str) -> str:
    """`text` with each CJK numeral run written in digits (`二〇二四年三月` -> `2024年3月`)."""
    return _CJK_RUN.sub(lambda m: str(_cjk_value(m.group())), text)


def _cjk_numbers(text: str) -> list[tuple[int, int, Num]]:
    """CJK numeral runs, Arabic digits inside them included (`3万5000`); not a decimal's magnitude (`3.5万`)."""
    out = []
    for m in _MIXED_RUN.finditer(text):
        run = m.group()
        if run.isdigit() or (m.start() > 0 and text[m.start() - 1] in ".,") or (run[0].isdigit() and not any(
                c in _CJK_UNITS or c in _CJK_BIG for c in run)):
            continue
        value = _cjk_value(run)
        exponent = _zeros(value) if run[-1] in _CJK_EXPONENT else 0  # "三千": to the thousand
        out.append((m.start(), m.end(), Num(value=Decimal(value), exponent=exponent)))
    return out


def _word_tokens(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in re.finditer(r"[^\W\d_]+", text)]


def _is_number_word(word: str, lang: str) -> bool:
    return (word in _UNITS.get(lang, {}) or word in _HUNDRED.get(lang, ()) or word in _BIG_WORDS.get(lang, {})
            or (lang == "fr" and word in ("cent", "cents")))


def _word_value(words: list[str], lang: str) -> int:
    """A run of number words as an integer (fr `quatre vingt` is 80: four twenties)."""
    total = current = 0
    prev = ""
    for w in words:
        if w in _BIG_WORDS.get(lang, {}):
            power = 10 ** _BIG_WORDS[lang][w]
            if total and not current and total < power:  # es "mil millones": a thousand millions
                total *= power
            else:
                total += (current or 1) * power
            current = 0
        elif w in _HUNDRED.get(lang, ()):
            current = (current or 1) * 100
        elif lang == "fr" and w in ("vingt", "vingts") and prev == "quatre":
            current += 80 - 4
        elif w in _ARTICLE_ONES.get(lang, ()) and w not in _UNITS.get(lang, {}):
            current += 1  # en "a"/"an" before a magnitude
        else:
            current += _UNITS[lang][w]
        prev = w
    return total + current


def _counts_as_number(word: str, nxt: str, lang: str, *, alone: bool, in_run: bool) -> bool:
    """Whether `word` is read as a number: an article that is also "one" only alone, inside a run of number words
    or before one (en "a"/"an" only before a magnitude)."""
    if word in _ARTICLE_ONES[lang] and not in_run and not alone:
        if lang == "en":
            return nxt in _BIG_WORDS[lang] or nxt in _HUNDRED[lang]
        return _is_number_word(nxt, lang)
    return _is_number_word(word, lang)


def _word_numbers(text: str, lang: str, *, articles_as_one: bool = False) -> list[tuple[int, int, Num]]:
    if lang not in _UNITS:
        return []
    tokens = _word_tokens(text)
    out: list[tuple[int, int, Num]] = []
    i = 0
    while i < len(tokens):
        j = i
        run: list[str] = []
        while j < len(tokens):
            w = tokens[j][2]
            nxt = tokens[j + 1][2] if j + 1 < len(tokens) else ""
            if _counts_as_number(w, nxt, lang, alone=len(tokens) == 1 or articles_as_one, in_run=bool(run)):
                run.append(w)
            elif w in _JOINERS[lang] and run and _is_number_word(nxt, lang):
                pass
            else:
                break
            j += 1
        if run:
            value = _word_value(run, lang)
            exponent = _zeros(value) if run[-1] in _BIG_WORDS[lang] else 0  # "two million": to the million
            out.append((tokens[i][0], tokens[j - 1][1], Num(value=Decimal(value), exponent=exponent)))
            i = j
        else:
            i += 1
    return out


def find_numbers(text: str, lang: str, *, articles_as_one: bool = False) -> list[Num]:
    """Every number `text` states, in reading order (digits first where a digit and a word overlap).
    `articles_as_one`: fr *un but*, es *un gol* read as 1 (the scorer's second reading of an answer to a number
    question that states no other number)."""
    folded = fold(text)
    for minus in _MINUS[1:]:
        folded = folded.replace(minus, "-")
    if lang in ("ja", "zh"):  # "3万5000" as one number, before the digits read "3万" and "5000" apart
        found = _cjk_numbers(folded)
        extra = _digit_numbers(folded, lang)
    else:
        found = _digit_numbers(folded, lang)
        extra = _word_numbers(folded, lang, articles_as_one=articles_as_one)
    spans = [(s, e) for s, e, _ in found]
    found += [(s, e, n) for s, e, n in extra if not any(s < e2 and s2 < e for s2, e2 in spans)]
    return [n for _, _, n in sorted(found, key=lambda t: t[0])]


def parse_gold_number(text: str, lang: str) -> Num | None:
    """The one number a gold answer states, or None (no number, or several)."""
    found = find_numbers(text, lang)
    return found[0] if len({n.value for n in found}) == 1 else None
