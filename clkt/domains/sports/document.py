"""Match report: date, competition, venue, teams, final score, winner, attendance, period breakdown."""

from __future__ import annotations

from clkt.documents._builder import DocBuilder
from clkt.documents.formatting import Formatter
from clkt.documents.registry import DOCUMENT_KINDS, DocumentKind
from clkt.domains.sports import SPEC
from clkt.domains.sports.facts import MatchFacts
from clkt.domains.sports.labels import SPORT
from clkt.facts import RenderedDocument

__all__ = ["TEXT", "render_match"]

TEXT: dict[str, dict[str, str]] = {
    "en": {
        "title": "Match report: {home} vs {away}",
        "date": "The {sport} match between {home} and {away} was played on {date}{kickoff}.",
        "kickoff": ", kicking off at {clock} UTC",
        "competition": "The match was part of the {competition}{extra}.",
        "season": "{season} season",
        "round": "round {round}",
        "venue": "The venue was {venue}{where}.",
        "where": ", in {place}",
        "home_team": "The home team was {home}.",
        "away_team": "The away team was {away}.",
        "final_score": "The final score was {home} {score} {away}.",
        "winner": "{winner} won the match.",
        "draw": "The match ended in a draw.",
        "spectators": "The attendance was {n} spectators.",
        "periods": "Score by period: {items}.",
        "period": "{label}: {score}",
    },
    "ja": {
        "title": "試合レポート：{home} 対 {away}",
        "date": "{home}と{away}による{sport}の試合は{date}{kickoff}に行われた。",
        "kickoff": "（キックオフ {clock} UTC）",
        "competition": "この試合は{competition}{extra}の一戦である。",
        "season": "{season}シーズン",
        "round": "第{round}節",
        "venue": "会場は{venue}{where}であった。",
        "where": "（{place}）",
        "home_team": "ホームチームは{home}であった。",
        "away_team": "アウェーチームは{away}であった。",
        "final_score": "最終スコアは{home} {score} {away}であった。",
        "winner": "{winner}が勝利した。",
        "draw": "試合は引き分けに終わった。",
        "spectators": "観客数は{n}人であった。",
        "periods": "ピリオド別スコア：{items}。",
        "period": "{label}：{score}",
    },
    "zh": {
        "title": "比赛报道：{home} 对 {away}",
        "date": "{home}对阵{away}的{sport}比赛于{date}{kickoff}举行。",
        "kickoff": "（开球时间 {clock} UTC）",
        "competition": "这场比赛属于{competition}{extra}。",
        "season": "{season}赛季",
        "round": "第{round}轮",
        "venue": "比赛场地为{venue}{where}。",
        "where": "（{place}）",
        "home_team": "主队是{home}。",
        "away_team": "客队是{away}。",
        "final_score": "最终比分为{home} {score} {away}。",
        "winner": "{winner}赢得了比赛。",
        "draw": "比赛以平局结束。",
        "spectators": "现场观众人数为{n}人。",
        "periods": "各节比分：{items}。",
        "period": "{label}：{score}",
    },
    "fr": {
        "title": "Compte rendu : {home} contre {away}",
        "date": "Le match de {sport} entre {home} et {away} a été joué le {date}{kickoff}.",
        "kickoff": ", avec un coup d'envoi à {clock} UTC",
        "competition": "Le match comptait pour la compétition {competition}{extra}.",
        "season": "saison {season}",
        "round": "journée {round}",
        "venue": "Le match s'est déroulé à {venue}{where}.",
        "where": ", à {place}",
        "home_team": "L'équipe à domicile était {home}.",
        "away_team": "L'équipe à l'extérieur était {away}.",
        "final_score": "Le score final était {home} {score} {away}.",
        "winner": "{winner} a remporté le match.",
        "draw": "Le match s'est terminé sur un match nul.",
        "spectators": "L'affluence était de {n} spectateurs.",
        "periods": "Score par période : {items}.",
        "period": "{label} : {score}",
    },
    "es": {
        "title": "Crónica: {home} contra {away}",
        "date": "El partido de {sport} entre {home} y {away} se jugó el {date}{kickoff}.",
        "kickoff": ", con el saque inicial a las {clock} UTC",
        "competition": "El partido formaba parte de la competición {competition}{extra}.",
        "season": "temporada {season}",
        "round": "jornada {round}",
        "venue": "El estadio fue {venue}{where}.",
        "where": ", en {place}",
        "home_team": "El equipo local fue {home}.",
        "away_team": "El equipo visitante fue {away}.",
        "final_score": "El resultado final fue {home} {score} {away}.",
        "winner": "{winner} ganó el partido.",
        "draw": "El partido terminó en empate.",
        "spectators": "La asistencia fue de {n} espectadores.",
        "periods": "Resultado por periodos: {items}.",
        "period": "{label}: {score}",
    },
}


def render_match(f: MatchFacts, fmt: Formatter) -> RenderedDocument:
    t = TEXT[fmt.lang]
    cjk = fmt.lang in ("ja", "zh")
    doc = DocBuilder(lang=fmt.lang, title=t["title"].format(home=f.home_team, away=f.away_team))
    kickoff = ""
    if f.kickoff_utc is not None:
        kickoff = t["kickoff"].format(clock=fmt.clock(f.kickoff_utc))
    sport = fmt.label(SPORT, f.sport)
    doc.add(
        t["date"].format(sport=sport, home=f.home_team, away=f.away_team, date=fmt.date(f.date), kickoff=kickoff),
        slot="date",
    )
    parts = [t["season"].format(season=f.season)] if f.season else []
    if f.round:
        parts.append(t["round"].format(round=f.round))
    extra = ""
    if parts:
        extra = ("" if cjk else " (") + ("、" if cjk else ", ").join(parts) + ("" if cjk else ")")
        if cjk:
            extra = f"（{extra}）"
    doc.add(t["competition"].format(competition=f.competition, extra=extra), slot="competition")
    if f.venue:
        place = ", ".join(p for p in (f.city, f.country) if p)
        where = t["where"].format(place=place) if place else ""
        doc.add(t["venue"].format(venue=f.venue, where=where), slot="venue")
    doc.add(t["home_team"].format(home=f.home_team), slot="home_team")
    doc.add(t["away_team"].format(away=f.away_team), slot="away_team")
    score = fmt.score(f.home_score, f.away_score)
    doc.add(t["final_score"].format(home=f.home_team, away=f.away_team, score=score), slot="final_score")
    if f.home_score == f.away_score:
        doc.add(t["draw"], slot="winner")
    else:
        winner = f.home_team if f.home_score > f.away_score else f.away_team
        doc.add(t["winner"].format(winner=winner), slot="winner")
    if f.spectators is not None:
        doc.add(t["spectators"].format(n=fmt.integer(f.spectators)), slot="spectators")
    if f.periods:
        sep = "、" if cjk else "; "
        items = sep.join(t["period"].format(label=p.label, score=fmt.score(p.home, p.away)) for p in f.periods)
        doc.paragraph()
        doc.add(t["periods"].format(items=items))
    return doc.build()


DOCUMENT_KINDS.register(
    DocumentKind(kind="match", facts=MatchFacts, domain=SPEC.name, slots=SPEC.slots, render=render_match)
)
