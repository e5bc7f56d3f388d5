"""The open track's questions on a match (asked by its two teams): home goals, venue, date, spectators."""

from __future__ import annotations

from clkt.domains.sports.facts import MatchFacts
from clkt.openqa.kinds import OpenKind, Slot, date_slot, name_slot, number_slot

__all__ = ["OPEN"]

_QUESTIONS: dict[str, dict[str, str]] = {
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
}


def _slots(f: MatchFacts) -> dict[str, Slot | None]:
    return {"match.home_goals": number_slot(f.home_score), "match.venue": name_slot(f.venue) if f.venue else None,
            "match.date": date_slot(f.date),
            "match.spectators": number_slot(f.spectators) if f.spectators else None}


OPEN = OpenKind(facts=MatchFacts, questions=_QUESTIONS, slots=_slots,
                entity=lambda f: (f"{f.home_team} vs {f.away_team}", (f.home_team, f.away_team)))
