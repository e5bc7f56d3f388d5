"""Short-answer questions from an entity's typed facts, offline, for every domain the document renderer knows.

The open track's counterpart of the MCQ template engine (`agents/template`), without options: per fact slot a
question in each language and the gold answer written by the same per-language `Formatter` the document's
sentence uses (`clkt.documents.formatting`: dates, minutes, dollars and decimals in each language's convention),
so the gold is what the document of that language says. Aliases add the language-neutral forms a right answer
may take (the ISO date, the bare number). Proper names are kept verbatim in every language, as the documents
keep them. A slot whose fact is missing gives no question, nor one whose question states its answer (a match at a
venue named after its home team); the questions are built through
`ShortAnswerQuestion`, so a gold that cannot be scored is refused, not emitted.

Slots: film — director, release date, runtime, first-billed actor; release — artist, label, release date, track
count; match — home goals, venue, date, spectators; quake — magnitude, date, felt reports; disaster — deaths,
people affected, date. The domains of `clkt.domains` (science, spaceflight) have none yet: their slots belong in
their own folders, behind a registry this module does not have yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from clkt.documents.formatting import Formatter, formatter
from clkt.facts import DisasterFacts, EntityFacts, FilmFacts, MatchFacts, QuakeFacts, ReleaseFacts
from clkt.openqa.question import AnswerKind, LangGold, ShortAnswerQuestion
from clkt.openqa.text import normalise

__all__ = ["GENERATOR_VERSION", "LANGS", "QUESTIONS", "Generated", "asks", "generate_questions", "short_answer_questions"]

LANGS = ("en", "ja", "zh", "fr", "es")
# names this generator's output: a snapshot records it and regenerates its open questions only under the same version
GENERATOR_VERSION = "open-facts-1"

# slot -> lang -> question template ({e}: the entity as the language quotes it; {a}/{b}: a match's teams)
QUESTIONS: dict[str, dict[str, str]] = {
    "film.director": {"en": "Who directed the film {e}?", "ja": "映画{e}の監督は誰ですか？", "zh": "电影{e}的导演是谁？",
                      "fr": "Qui a réalisé le film {e} ?", "es": "¿Quién dirigió la película {e}?"},
    "film.release_date": {"en": "On what date was the film {e} released?", "ja": "映画{e}の公開日はいつですか？",
                          "zh": "电影{e}是哪一天上映的？", "fr": "À quelle date le film {e} est-il sorti ?",
                          "es": "¿En qué fecha se estrenó la película {e}?"},
    "film.runtime": {"en": "How many minutes long is the film {e}?", "ja": "映画{e}の上映時間は何分ですか？",
                     "zh": "电影{e}的片长是多少分钟？", "fr": "Combien de minutes dure le film {e} ?",
                     "es": "¿Cuántos minutos dura la película {e}?"},
    "film.lead": {"en": "Who is the first-billed actor of the film {e}?", "ja": "映画{e}の筆頭クレジットの俳優は誰ですか？",
                  "zh": "电影{e}中排名第一的演员是谁？", "fr": "Quel acteur est crédité en premier dans le film {e} ?",
                  "es": "¿Qué actor aparece primero en los créditos de la película {e}?"},
    "release.artist": {"en": "Which artist released {e}?", "ja": "{e}をリリースしたアーティストは誰ですか？",
                       "zh": "{e}是哪位艺人发行的？", "fr": "Quel artiste a sorti {e} ?", "es": "¿Qué artista publicó {e}?"},
    "release.label": {"en": "On which label was {e} released?", "ja": "{e}はどのレーベルからリリースされましたか？",
                      "zh": "{e}由哪家唱片公司发行？", "fr": "Sur quel label {e} est-il sorti ?",
                      "es": "¿Con qué sello discográfico se publicó {e}?"},
    "release.date": {"en": "On what date was {e} released?", "ja": "{e}のリリース日はいつですか？", "zh": "{e}是哪一天发行的？",
                     "fr": "À quelle date {e} est-il sorti ?", "es": "¿En qué fecha se publicó {e}?"},
    "release.tracks": {"en": "How many tracks does {e} have?", "ja": "{e}には何曲収録されていますか？", "zh": "{e}收录了多少首曲目？",
                       "fr": "Combien de titres compte {e} ?", "es": "¿Cuántas pistas tiene {e}?"},
    "match.home_goals": {"en": "How many goals did {a} score against {b}?", "ja": "{a}は{b}戦で何点取りましたか？",
                         "zh": "{a}对阵{b}时进了几个球？", "fr": "Combien de buts {a} a-t-il marqués contre {b} ?",
                         "es": "¿Cuántos goles marcó {a} contra {b}?"},
    "match.venue": {"en": "In which stadium did {a} play {b}?", "ja": "{a}対{b}の試合会場はどこですか？",
                    "zh": "{a}对阵{b}的比赛在哪个球场进行？", "fr": "Dans quel stade {a} a-t-il affronté {b} ?",
                    "es": "¿En qué estadio jugó {a} contra {b}?"},
    "match.date": {"en": "On what date did {a} play {b}?", "ja": "{a}対{b}の試合は何年何月何日でしたか？",
                   "zh": "{a}对阵{b}的比赛是哪一天？", "fr": "À quelle date {a} a-t-il affronté {b} ?",
                   "es": "¿En qué fecha jugó {a} contra {b}?"},
    "match.spectators": {"en": "How many spectators attended {a} against {b}?", "ja": "{a}対{b}の観客数は何人でしたか？",
                         "zh": "{a}对阵{b}的比赛有多少名观众？", "fr": "Combien de spectateurs ont assisté à {a} contre {b} ?",
                         "es": "¿Cuántos espectadores asistieron al {a} contra {b}?"},
    "quake.magnitude": {"en": "What was the magnitude of the earthquake {e}?", "ja": "地震{e}のマグニチュードはいくつでしたか？",
                        "zh": "地震{e}的震级是多少？", "fr": "Quelle était la magnitude du séisme {e} ?",
                        "es": "¿Cuál fue la magnitud del terremoto {e}?"},
    "quake.date": {"en": "On what date did the earthquake {e} occur?", "ja": "地震{e}は何年何月何日に発生しましたか？",
                   "zh": "地震{e}发生在哪一天？", "fr": "À quelle date le séisme {e} a-t-il eu lieu ?",
                   "es": "¿En qué fecha ocurrió el terremoto {e}?"},
    "quake.felt": {"en": "How many felt reports did the earthquake {e} receive?", "ja": "地震{e}の有感報告は何件でしたか？",
                   "zh": "地震{e}收到了多少份有感报告？", "fr": "Combien de signalements de secousse le séisme {e} a-t-il reçus ?",
                   "es": "¿Cuántos reportes de percepción recibió el terremoto {e}?"},
    "disaster.deaths": {"en": "How many people died in {e}?", "ja": "{e}で何人が亡くなりましたか？", "zh": "{e}造成多少人死亡？",
                        "fr": "Combien de personnes sont mortes dans {e} ?", "es": "¿Cuántas personas murieron en {e}?"},
    "disaster.affected": {"en": "How many people were affected by {e}?", "ja": "{e}の被災者は何人でしたか？",
                          "zh": "{e}影响了多少人？", "fr": "Combien de personnes ont été touchées par {e} ?",
                          "es": "¿Cuántas personas se vieron afectadas por {e}?"},
    "disaster.date": {"en": "On what date did {e} begin?", "ja": "{e}はいつ始まりましたか？", "zh": "{e}是哪一天开始的？",
                      "fr": "À quelle date {e} a-t-il commencé ?", "es": "¿En qué fecha comenzó {e}?"},
}


@dataclass(frozen=True, slots=True)
class _Slot:
    kind: AnswerKind
    gold: Callable[[Formatter], str]  # the answer as the language's document writes it
    aliases: tuple[str, ...] = ()


def _date(d: date) -> _Slot:
    return _Slot(AnswerKind.date, lambda f: f.date(d), (d.isoformat(),))


def _number(n: int) -> _Slot:
    return _Slot(AnswerKind.number, lambda _f: str(n))


def _minutes(n: int) -> _Slot:
    return _Slot(AnswerKind.number, lambda f: f.minutes(n), (str(n),))


def _decimal(x: float) -> _Slot:
    return _Slot(AnswerKind.number, lambda f: f.decimal(x), (f"{x:.1f}",))


def _name(name: str) -> _Slot:
    return _Slot(AnswerKind.name, lambda _f: name)


def _slots(facts: EntityFacts) -> dict[str, _Slot | None]:
    """Each slot of the facts' kind, None where the fact is missing."""
    if isinstance(facts, FilmFacts):
        return {"film.director": _name(facts.directors[0]) if facts.directors else None,
                "film.release_date": _date(facts.release_date),
                "film.runtime": _minutes(facts.runtime_min) if facts.runtime_min else None,
                "film.lead": _name(facts.cast[0].name) if facts.cast else None}
    if isinstance(facts, ReleaseFacts):
        return {"release.artist": _name(facts.artist_credit), "release.label": _name(facts.label) if facts.label else None,
                "release.date": _date(facts.release_date),
                "release.tracks": _number(len(facts.tracks)) if facts.tracks else None}
    if isinstance(facts, MatchFacts):
        return {"match.home_goals": _number(facts.home_score), "match.venue": _name(facts.venue) if facts.venue else None,
                "match.date": _date(facts.date),
                "match.spectators": _number(facts.spectators) if facts.spectators else None}
    if isinstance(facts, QuakeFacts):
        return {"quake.magnitude": _decimal(facts.magnitude),
                "quake.date": _date(facts.time_utc.date()),
                "quake.felt": _number(facts.felt) if facts.felt else None}
    if isinstance(facts, DisasterFacts):
        return {"disaster.deaths": _number(facts.deaths) if facts.deaths is not None else None,
                "disaster.affected": _number(facts.affected) if facts.affected else None,
                "disaster.date": _date(facts.date)}
    raise TypeError(f"no short-answer questions for facts of kind {type(facts).__name__}")


def _entity(facts: EntityFacts) -> tuple[str, tuple[str, str]]:
    """The entity's name and, for a match, its two teams."""
    if isinstance(facts, MatchFacts):
        return f"{facts.home_team} vs {facts.away_team}", (facts.home_team, facts.away_team)
    if isinstance(facts, QuakeFacts):
        return facts.place, ("", "")  # its title ("M 6.7 - ...") would give the magnitude away
    if isinstance(facts, DisasterFacts):
        return facts.name, ("", "")
    if isinstance(facts, FilmFacts | ReleaseFacts):
        return facts.title, ("", "")
    raise TypeError(f"no short-answer questions for facts of kind {type(facts).__name__}")


def _gives_away(question: str, gold: str, lang: str) -> bool:
    """Whether the question states its own answer (a name in the entity's name, a number in its title)."""
    key = normalise(gold, lang)
    return bool(key) and key in normalise(question, lang)


@dataclass(frozen=True, kw_only=True, slots=True)
class Generated:
    """What the generator made of one entity's facts: its questions, and the slots it refused (slot, why: a gold
    that cannot be scored, e.g. empty), never emitted."""

    questions: tuple[ShortAnswerQuestion, ...]
    refused: tuple[tuple[str, str], ...] = ()


def asks(facts: EntityFacts) -> bool:
    """Whether the generator knows the facts' kind (those of the four first domains; not yet the registered ones)."""
    return isinstance(facts, FilmFacts | ReleaseFacts | MatchFacts | QuakeFacts | DisasterFacts)


def _filled(facts: EntityFacts, slots: Iterable[str] | None) -> list[tuple[str, _Slot]]:
    """The slots the facts fill, those of `slots` only when given."""
    wanted = set(slots) if slots is not None else None
    return [(k, v) for k, v in _slots(facts).items() if v is not None and (wanted is None or k in wanted)]


def _question(
    facts: EntityFacts, key: str, slot: _Slot, *, entity_id: str, langs: Sequence[str]
) -> ShortAnswerQuestion | None:
    """The question on `slot` in every language of `langs`; None when it gives its answer away. A gold that cannot
    be scored raises `ValueError` (pydantic's `ValidationError` is one)."""
    name, (a, b) = _entity(facts)
    questions: dict[str, str] = {}
    golds: dict[str, LangGold] = {}
    for lang in langs:
        f = formatter(lang)
        questions[lang] = QUESTIONS[key][lang].format(e=f.quote(name), a=a, b=b)
        golds[lang] = LangGold(answer=slot.gold(f), aliases=slot.aliases)
    if any(_gives_away(questions[lang], golds[lang].answer, lang) for lang in langs):
        return None
    return ShortAnswerQuestion(qid=f"{entity_id}:{key}", entity=name, fact=key, kind=slot.kind,
                               questions=questions, golds=golds)


def generate_questions(
    facts: EntityFacts, *, entity_id: str, langs: Sequence[str] = LANGS, slots: Iterable[str] | None = None,
) -> Generated:
    """As `short_answer_questions`, but a slot whose gold cannot be scored is refused (named with why), not raised:
    what a snapshot's freeze uses, so one bad fact costs its question, never the snapshot."""
    out: list[ShortAnswerQuestion] = []
    refused: list[tuple[str, str]] = []
    for key, slot in _filled(facts, slots):
        try:
            q = _question(facts, key, slot, entity_id=entity_id, langs=langs)
        except ValueError as e:
            refused.append((key, str(e).splitlines()[-1].strip() if str(e) else type(e).__name__))
            continue
        if q is not None:
            out.append(q)
    return Generated(questions=tuple(out), refused=tuple(refused))


def short_answer_questions(
    facts: EntityFacts, *, entity_id: str, langs: Sequence[str] = LANGS, slots: Iterable[str] | None = None,
) -> list[ShortAnswerQuestion]:
    """One question per slot the facts fill (or those of `slots`), in every language of `langs`; a gold that cannot
    be scored raises (`generate_questions` refuses it instead)."""
    out: list[ShortAnswerQuestion] = []
    for key, slot in _filled(facts, slots):
        q = _question(facts, key, slot, entity_id=entity_id, langs=langs)
        if q is not None:
            out.append(q)
    return out
