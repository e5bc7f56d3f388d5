"""Question templates and distractors for matches (MatchFacts)."""

from __future__ import annotations

from random import Random

from agents.template.distractors import near_ints, near_scores, pool_names, shifted_dates
from agents.template.domains import AGENT_KINDS, AgentKind
from agents.template.matchers import FactList, score_fact
from agents.template.slots import DomainTemplates, SlotTemplate
from agents.template.values import DateValue, IntValue, NameValue, ScoreValue, Value
from clkt.documents.formatting import Formatter
from clkt.domains.sports.facts import MatchFacts
from clkt.domains.sports.pools import competitions_for, teams_for, venues_for

__all__ = ["SPEC"]

Q: dict[str, dict[str, str]] = {
    "date": {
        "en": "On what date did {home} play {away} in the {competition}?",
        "ja": "{home}と{away}が{competition}で対戦したのはいつですか？",
        "zh": "{home}与{away}在{competition}中的比赛是在哪一天进行的？",
        "fr": "À quelle date {home} a-t-il affronté {away} dans la compétition {competition} ?",
        "es": "¿En qué fecha se enfrentó {home} a {away} en la competición {competition}?",
    },
    "competition": {
        "en": "In which competition did {home} host {away} on {date}?",
        "ja": "{date}に{home}が{away}をホームに迎えた試合は、どの大会の試合ですか？",
        "zh": "{date}{home}主场迎战{away}的比赛属于哪项赛事？",
        "fr": "Dans quelle compétition {home} a-t-il reçu {away} le {date} ?",
        "es": "¿En qué competición recibió {home} a {away} el {date}?",
    },
    "venue": {
        "en": "At which venue did {home} host {away} on {date}?",
        "ja": "{date}の{home}対{away}の試合が行われた会場はどこですか？",
        "zh": "{date}{home}主场迎战{away}的比赛在哪个场地举行？",
        "fr": "Dans quel stade {home} a-t-il reçu {away} le {date} ?",
        "es": "¿En qué estadio recibió {home} a {away} el {date}?",
    },
    "home_team": {
        "en": "Which team hosted {away} in the {competition} match on {date}?",
        "ja": "{date}の{competition}で、{away}を迎えたホームチームはどこですか？",
        "zh": "{date}的{competition}比赛中，哪支球队以主队身份迎战{away}？",
        "fr": "Quelle équipe a reçu {away} le {date} dans la compétition {competition} ?",
        "es": "¿Qué equipo recibió a {away} el {date} en la competición {competition}?",
    },
    "away_team": {
        "en": "Which team visited {home} in the {competition} match on {date}?",
        "ja": "{date}の{competition}で、{home}と対戦したアウェーチームはどこですか？",
        "zh": "{date}的{competition}比赛中，哪支球队作为客队对阵{home}？",
        "fr": "Quelle équipe s'est déplacée chez {home} le {date} dans la compétition {competition} ?",
        "es": "¿Qué equipo visitó a {home} el {date} en la competición {competition}?",
    },
    "final_score": {
        "en": "What was the final score (home team first) of the {competition} match between {home} and {away} on {date}?",
        "ja": "{date}の{competition}、{home}対{away}の最終スコア（ホームチームが先）は何でしたか？",
        "zh": "{date}{competition}中{home}对{away}的最终比分（主队在前）是多少？",
        "fr": "Quel a été le score final (équipe à domicile en premier) du match {home} contre {away} du {date} dans la compétition {competition} ?",
        "es": "¿Cuál fue el resultado final (equipo local primero) del partido {home} contra {away} del {date} en la competición {competition}?",
    },
    "winner": {
        "en": "Which team won the {competition} match played{where} on {date} that ended {score}?",
        "ja": "{date}に{where}行われ、スコア{score}で終わった{competition}の試合で勝利したチームはどこですか？",
        "zh": "{date}{where}进行、比分为{score}的{competition}比赛中，哪支球队获胜？",
        "fr": "Quelle équipe a remporté le match de la compétition {competition} joué{where} le {date}, terminé sur le score de {score} ?",
        "es": "¿Qué equipo ganó el partido de la competición {competition} jugado{where} el {date}, que terminó {score}?",
    },
    "spectators": {
        "en": "How many spectators attended the {competition} match between {home} and {away} on {date}?",
        "ja": "{date}の{competition}、{home}対{away}の観客数は何人でしたか？",
        "zh": "{date}{competition}中{home}对{away}的比赛有多少名观众到场？",
        "fr": "Combien de spectateurs ont assisté au match {home} contre {away} du {date} dans la compétition {competition} ?",
        "es": "¿Cuántos espectadores asistieron al partido {home} contra {away} del {date} en la competición {competition}?",
    },
}

_WHERE = {"en": " at {venue}", "ja": "{venue}で", "zh": "在{venue}", "fr": " à {venue}", "es": " en {venue}"}


# the match as the questions name it (`DomainTemplates.naming`)
NAMING = {
    "en": "The {competition} match between {home} and {away} on {date}",
    "ja": "{date}の{competition}、{home}対{away}",
    "zh": "{date}{competition}中{home}对{away}的比赛",
    "fr": "Le match {home} contre {away} du {date} dans la compétition {competition}",
    "es": "El partido {home} contra {away} del {date} en la competición {competition}",
}


def _context(f: MatchFacts, fmt: Formatter) -> dict[str, str]:
    return {
        "home": f.home_team,
        "away": f.away_team,
        "competition": f.competition,
        "date": fmt.date(f.date),
        "score": fmt.score(f.home_score, f.away_score),
        "where": _WHERE[fmt.lang].format(venue=f.venue) if f.venue else "",
    }


def _anchors(f: MatchFacts, fmt: Formatter) -> list[str]:
    return [f.home_team, f.away_team, f.competition, fmt.date(f.date), *([f.venue] if f.venue else [])]


def _winner(f: MatchFacts) -> Value | None:
    if f.home_score == f.away_score:
        return None  # a draw has no winner to ask about
    return NameValue(f.home_team if f.home_score > f.away_score else f.away_team)


def _winner_candidates(f: MatchFacts, rng: Random) -> list[Value]:
    loser = f.away_team if f.home_score > f.away_score else f.home_team
    return [NameValue(loser), *pool_names(teams_for(f.sport), rng, exclude=(f.home_team, f.away_team))]


def _teams(f: MatchFacts, rng: Random) -> list[Value]:
    return list(pool_names(teams_for(f.sport), rng, exclude=(f.home_team, f.away_team)))


def _q(slot: str) -> dict[str, str]:
    return Q[slot]


SPEC = DomainTemplates(
    kind="match",
    context=_context,
    anchors=_anchors,
    naming=NAMING,
    slots={
        "date": SlotTemplate(
            slot="date", question=_q("date"), answer=lambda f: DateValue(f.date),
            candidates=lambda f, rng: shifted_dates(f.date, rng),
        ),
        "competition": SlotTemplate(
            slot="competition", question=_q("competition"), answer=lambda f: NameValue(f.competition),
            candidates=lambda f, rng: pool_names(competitions_for(f.sport), rng, exclude=(f.competition,)),
        ),
        "venue": SlotTemplate(
            slot="venue", question=_q("venue"), answer=lambda f: NameValue(f.venue) if f.venue else None,
            candidates=lambda f, rng: pool_names(venues_for(f.sport), rng, exclude=(f.venue or "",)),
        ),
        "home_team": SlotTemplate(
            slot="home_team", question=_q("home_team"), answer=lambda f: NameValue(f.home_team), candidates=_teams,
        ),
        "away_team": SlotTemplate(
            slot="away_team", question=_q("away_team"), answer=lambda f: NameValue(f.away_team), candidates=_teams,
        ),
        "final_score": SlotTemplate(
            slot="final_score", question=_q("final_score"), answer=lambda f: ScoreValue(f.home_score, f.away_score),
            candidates=lambda f, rng: near_scores(f.home_score, f.away_score, rng),
            truths=lambda f: (ScoreValue(f.away_score, f.home_score),),
        ),
        "winner": SlotTemplate(slot="winner", question=_q("winner"), answer=_winner, candidates=_winner_candidates),
        "spectators": SlotTemplate(
            slot="spectators", question=_q("spectators"),
            answer=lambda f: IntValue(f.spectators) if f.spectators is not None else None,
            candidates=lambda f, rng: near_ints(f.spectators or 0, rng, minimum=1),
        ),
    },
)


def _judge_facts(f: MatchFacts, found: FactList) -> None:
    found.add(score_fact(f.home_score, f.away_score, f"{f.home_score}–{f.away_score}"))
    found.day("date", f.date)
    found.person("home_team", f.home_team)
    found.person("away_team", f.away_team)
    found.num("spectators", f.spectators, "spectators")


AGENT_KINDS.register(
    AgentKind(
        kind="match", templates=SPEC, judge_facts=_judge_facts,
        proper_names=lambda f: [f.home_team, f.away_team, f.competition],
    )
)
