"""Question templates and distractors for films (FilmFacts)."""

from __future__ import annotations

from random import Random

from agents.template.distractors import near_ints, pool_names, shifted_dates
from agents.template.domains import AGENT_KINDS, AgentKind
from agents.template.matchers import FactList, money_fact, runtime_fact
from agents.template.slots import DomainTemplates, SlotTemplate
from agents.template.values import DateValue, IntValue, LabelValue, NameValue, Value
from clkt.documents.formatting import Formatter
from clkt.documents.labels import known_values
from clkt.domains.movies.document import MAIN_CAST
from clkt.domains.movies.facts import FilmFacts
from clkt.domains.movies.labels import GENRE
from clkt.domains.movies.pools import ACTORS, COMPANIES, DIRECTORS

__all__ = ["SPEC"]

Q: dict[str, dict[str, str]] = {
    "release_date": {
        "en": "On what date was the film {title} ({year}) released?",
        "ja": "映画{title}（{year}年）が公開されたのはいつですか？",
        "zh": "电影{title}（{year}年）是在哪一天上映的？",
        "fr": "À quelle date le film {title} ({year}) est-il sorti ?",
        "es": "¿En qué fecha se estrenó la película {title} ({year})?",
    },
    "director": {
        "en": "Who directed the film {title} ({year})?",
        "ja": "映画{title}（{year}年）の監督は誰ですか？",
        "zh": "电影{title}（{year}年）的导演是谁？",
        "fr": "Qui a réalisé le film {title} ({year}) ?",
        "es": "¿Quién dirigió la película {title} ({year})?",
    },
    "lead_actor": {
        "en": "Which actor is top-billed in the cast of the film {title} ({year})?",
        "ja": "映画{title}（{year}年）でクレジットの筆頭に名前がある俳優は誰ですか？",
        "zh": "电影{title}（{year}年）演员表中排名第一的演员是谁？",
        "fr": "Quel acteur est en tête d'affiche du film {title} ({year}) ?",
        "es": "¿Qué actor encabeza el reparto de la película {title} ({year})?",
    },
    "runtime": {
        "en": "What is the runtime of the film {title} ({year})?",
        "ja": "映画{title}（{year}年）の上映時間はどれくらいですか？",
        "zh": "电影{title}（{year}年）的片长是多少？",
        "fr": "Quelle est la durée du film {title} ({year}) ?",
        "es": "¿Cuánto dura la película {title} ({year})?",
    },
    "genre": {
        "en": "Which of these genres is listed for the film {title} ({year})?",
        "ja": "映画{title}（{year}年）のジャンルとして挙げられているのはどれですか？",
        "zh": "以下哪一项是电影{title}（{year}年）所列的类型？",
        "fr": "Lequel de ces genres est indiqué pour le film {title} ({year}) ?",
        "es": "¿Cuál de estos géneros figura para la película {title} ({year})?",
    },
    "budget": {
        "en": "What was the budget of the film {title} ({year})?",
        "ja": "映画{title}（{year}年）の製作費はいくらでしたか？",
        "zh": "电影{title}（{year}年）的制作预算是多少？",
        "fr": "Quel était le budget du film {title} ({year}) ?",
        "es": "¿Cuál fue el presupuesto de la película {title} ({year})?",
    },
    "revenue": {
        "en": "How much did the film {title} ({year}) earn at the box office?",
        "ja": "映画{title}（{year}年）の興行収入はいくらでしたか？",
        "zh": "电影{title}（{year}年）的票房收入是多少？",
        "fr": "Combien le film {title} ({year}) a-t-il rapporté au box-office ?",
        "es": "¿Cuánto recaudó en taquilla la película {title} ({year})?",
    },
    "production_company": {
        "en": "Which company produced the film {title} ({year})?",
        "ja": "映画{title}（{year}年）を製作した会社はどれですか？",
        "zh": "电影{title}（{year}年）是由哪家公司出品的？",
        "fr": "Quelle société a produit le film {title} ({year}) ?",
        "es": "¿Qué compañía produjo la película {title} ({year})?",
    },
}


# the film as the questions name it (`DomainTemplates.naming`)
NAMING = {"en": "The film {title} ({year})", "ja": "映画{title}（{year}年）", "zh": "电影{title}（{year}年）",
          "fr": "Le film {title} ({year})", "es": "La película {title} ({year})"}


def _context(f: FilmFacts, fmt: Formatter) -> dict[str, str]:
    return {"title": fmt.quote(f.title), "year": str(f.release_date.year)}


def _anchors(f: FilmFacts, fmt: Formatter) -> list[str]:
    return [f.title, *([f.original_title] if f.original_title else [])]


def _people(f: FilmFacts) -> list[str]:
    return [*f.directors, *(c.name for c in f.cast)]


def _genre_key(name: str) -> str:
    return name.strip()  # label_text() looks it up case-insensitively and keeps unknown genres verbatim


def _genre_candidates(f: FilmFacts, rng: Random) -> list[Value]:
    own = {g.strip().casefold() for g in f.genres}
    keys = [k for k in known_values(GENRE) if k not in own]
    rng.shuffle(keys)
    return [LabelValue(GENRE, k) for k in keys]


def _money(n: int | None, rng: Random, other: int | None) -> list[Value]:
    if not n:
        return []
    return [v for v in near_ints(n, rng, minimum=1, unit="usd") if v.n != other]


SPEC = DomainTemplates(
    kind="film",
    context=_context,
    anchors=_anchors,
    naming=NAMING,
    slots={
        "release_date": SlotTemplate(
            slot="release_date", question=Q["release_date"], answer=lambda f: DateValue(f.release_date),
            candidates=lambda f, rng: shifted_dates(f.release_date, rng),
        ),
        "director": SlotTemplate(
            slot="director", question=Q["director"],
            answer=lambda f: NameValue(f.directors[0]) if f.directors else None,
            candidates=lambda f, rng: pool_names(DIRECTORS, rng, exclude=_people(f)),
            truths=lambda f: [NameValue(d) for d in f.directors],
        ),
        "lead_actor": SlotTemplate(
            slot="lead_actor", question=Q["lead_actor"],
            answer=lambda f: NameValue(f.cast[0].name) if f.cast else None,
            candidates=lambda f, rng: pool_names(ACTORS, rng, exclude=_people(f)),
            truths=lambda f: [NameValue(c.name) for c in f.cast],
        ),
        "runtime": SlotTemplate(
            slot="runtime", question=Q["runtime"],
            answer=lambda f: IntValue(f.runtime_min, "minutes") if f.runtime_min else None,
            candidates=lambda f, rng: [
                IntValue(v.n, "minutes")
                for v in near_ints(f.runtime_min or 0, rng, minimum=1)
                if abs(v.n - (f.runtime_min or 0)) >= 3
            ],
        ),
        "genre": SlotTemplate(
            slot="genre", question=Q["genre"],
            answer=lambda f: LabelValue(GENRE, _genre_key(f.genres[0])) if f.genres else None,
            candidates=_genre_candidates,
            truths=lambda f: [LabelValue(GENRE, _genre_key(g)) for g in f.genres],
        ),
        "budget": SlotTemplate(
            slot="budget", question=Q["budget"],
            answer=lambda f: IntValue(f.budget_usd, "usd") if f.budget_usd else None,
            candidates=lambda f, rng: _money(f.budget_usd, rng, f.revenue_usd),
        ),
        "revenue": SlotTemplate(
            slot="revenue", question=Q["revenue"],
            answer=lambda f: IntValue(f.revenue_usd, "usd") if f.revenue_usd else None,
            candidates=lambda f, rng: _money(f.revenue_usd, rng, f.budget_usd),
        ),
        "production_company": SlotTemplate(
            slot="production_company", question=Q["production_company"],
            answer=lambda f: NameValue(f.production_companies[0]) if f.production_companies else None,
            candidates=lambda f, rng: pool_names(COMPANIES, rng, exclude=f.production_companies),
            truths=lambda f: [NameValue(c) for c in f.production_companies],
        ),
    },
)


def _judge_facts(f: FilmFacts, found: FactList) -> None:
    found.day("release_date", f.release_date)
    for d in f.directors:
        found.person("director", d)
    for c in f.cast[:MAIN_CAST]:
        found.person("cast", c.name)
    if f.runtime_min:
        found.add(runtime_fact(f.runtime_min))
    for label, money in (("budget", f.budget_usd), ("revenue", f.revenue_usd)):
        if money and float(money) not in found.name_numbers:
            found.add(money_fact(f"{label}: {money}", money))


AGENT_KINDS.register(
    AgentKind(
        kind="film", templates=SPEC, judge_facts=_judge_facts,
        proper_names=lambda f: [*f.directors, *(c.name for c in f.cast), *f.production_companies],
    )
)
