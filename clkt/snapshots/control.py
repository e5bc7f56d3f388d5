"""The control split: fictional entities no model can know, the positive control of injection.

Every snapshot carries `snapshot.control_entities` made-up entities per domain of its spec, generated
deterministically from the snapshot's identity (spec, period, seed): invented names (people, teams,
venues, leagues, studios, labels, towns), dates inside the period, plausible numbers, scores and labels.
They are rendered into documents and questioned by the same template engine as the real entities, in
every language of the spec, and their distractors are drawn from fictional pools of the same kind, so that
a made-up answer is never the odd one out among real names.

They live apart from the real content: `control/docs/<lang>.jsonl` and `control/questions/<lang>.jsonl`
in the snapshot folder (the same `DocRow` / `QuestionRow` models, `source = "control"`, every question in
the `test` split), never in the store, the real files or the hf / lm-eval / reference exports. The GPU job
injects them together with the real documents and scores them on their own; they never enter the real
scores. Because they are a pure function of (spec, period, seed, languages, domains, size), a snapshot
re-assembled from the store gets byte-identical control files, and they are part of the content hash.

Invented names are syllable compounds checked against the engine's pools of real names; nothing can
prove that a compound names nothing anywhere, but it names nothing a model could have read about the
event: the event itself (its date inside a period that has not been published) is fiction.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from agents.template import PROMPT_VERSION, plans
from agents.template.pools import (
    ACTORS,
    ARTISTS,
    COMPANIES,
    COMPETITIONS,
    COUNTRIES,
    DIRECTORS,
    LABELS,
    QUAKE_PLACES,
    TEAMS,
    VENUES,
)
from agents.template.values import NameValue, Value
from clkt.documents import render_document
from clkt.documents.labels import known_values
from clkt.errors import SnapshotError
from clkt.facts import (
    SLOTS,
    CastMember,
    DisasterFacts,
    EntityFacts,
    FilmFacts,
    MatchFacts,
    QuakeFacts,
    ReleaseFacts,
    Track,
)
from clkt.outputs import MCQ, check_against_document
from clkt.snapshots.content import SnapshotContent
from clkt.snapshots.ids import stable_entity_id, stable_qid
from clkt.snapshots.layout import (
    CONTROL_DIR,
    LETTERS,
    ControlInfo,
    DocRow,
    QuestionRow,
    dumps_row,
)
from clkt.snapshots.select import seeded_key

__all__ = [
    "CONTROL_DIR",
    "CONTROL_SOURCE",
    "ControlContent",
    "ControlEntity",
    "attach_control",
    "build_control",
    "check_control_engine",
    "control_docs_path",
    "control_entities",
    "control_info",
    "control_questions_path",
    "fictional_entity",
    "write_control",
]

CONTROL_SOURCE = "control"

# syllables that read as a name in English, French and Spanish alike (and transliterate cleanly)
_ONSETS = ("b", "br", "d", "dr", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "tr", "v", "z", "th", "qu", "st")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ia", "ou")
_CODAS = ("", "", "", "n", "r", "l", "s", "th", "nd", "rt", "x", "m")
_PLACE_ENDS = ("holm", "vale", "mora", "stad", "brook", "ford", "ria", "mont", "burg", "port", "ton", "dell")
_TEAM_SUFFIX = ("Rovers", "Athletic", "United", "Wanderers", "Rangers", "Albion", "Harriers", "Olympic")
_VENUE_SUFFIX = ("Arena", "Park", "Stadium", "Ground", "Field")
_LEAGUE_SUFFIX = ("Premier League", "Cup", "Championship", "Super League", "First Division")
_STUDIO_SUFFIX = ("Pictures", "Films", "Studios", "Entertainment")
_LABEL_SUFFIX = ("Records", "Music", "Recordings", "Sound")
_WORDS = (
    "Amber", "Harbor", "Lantern", "Silver", "Hollow", "Winter", "Ember", "River", "Glass", "Velvet", "Paper",
    "Northern", "Quiet", "Copper", "Marble", "Signal", "Orchard", "Distant", "Crimson", "Static", "Tide",
    "Meadow", "Falcon", "Echo", "Mirror", "Cinder", "Willow", "Neon", "Harvest", "Compass", "Ivory", "Thunder",
)
_COMPASS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW", "NNE", "ENE", "ESE", "SSE", "SSW", "WSW", "WNW", "NNW")
# seismic countries and a rough (lat, lon) box of each, so the coordinates match the place
_QUAKE_COUNTRIES: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "Chile": ((-45.0, -18.0), (-74.0, -69.0)), "Peru": ((-17.0, -4.0), (-81.0, -70.0)),
    "Japan": ((31.0, 43.0), (130.0, 145.0)), "Indonesia": ((-10.0, 4.0), (95.0, 140.0)),
    "Mexico": ((15.0, 30.0), (-115.0, -92.0)), "Türkiye": ((36.5, 41.5), (27.0, 44.0)),
    "Philippines": ((5.0, 19.0), (119.0, 127.0)), "New Zealand": ((-46.0, -35.0), (167.0, 178.0)),
}
_DISASTER_TYPES = ("flood", "tropical cyclone", "drought", "landslide", "wild fire", "cold wave", "heat wave")
_ENGINE_BEFORE_RECORDED = "tmpl-1"  # the engine of manifests written before ControlInfo.engine existed
_NAMES_PER_POOL = 12  # fictional distractor candidates of each kind per entity

_REAL: frozenset[str] = frozenset(
    n.casefold()
    for pool in (
        *TEAMS.values(), *VENUES.values(), *COMPETITIONS.values(), DIRECTORS, ACTORS, COMPANIES, ARTISTS, LABELS,
        QUAKE_PLACES, COUNTRIES,
    )
    for n in pool
)


@dataclass(frozen=True, kw_only=True)
class ControlEntity:
    """One fictional entity: its identity, facts and the fictional distractor pools of its name slots."""

    external_id: str
    domain: str
    name: str
    facts: EntityFacts
    candidates: dict[str, tuple[Value, ...]]  # slot -> distractor candidates replacing the engine's pools

    @property
    def entity_id(self) -> int:
        return stable_entity_id(CONTROL_SOURCE, self.external_id)


@dataclass(frozen=True, kw_only=True)
class ControlContent:
    entities: tuple[ControlEntity, ...]
    docs: tuple[DocRow, ...]  # sorted by (lang order, domain, entity_id)
    questions: tuple[QuestionRow, ...]  # sorted by (lang order, qid)

    def docs_in(self, lang: str) -> list[DocRow]:
        return [d for d in self.docs if d.lang == lang]

    def questions_in(self, lang: str) -> list[QuestionRow]:
        return [q for q in self.questions if q.lang == lang]


class _Namer:
    """Invented names, unique within one snapshot's control split and never one of the real pools'."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def _syllable(self) -> str:
        r = self.rng
        return r.choice(_ONSETS) + r.choice(_VOWELS) + r.choice(_CODAS)

    def _fresh(self, make: Callable[[], str]) -> str:
        for _ in range(1000):
            name = make()
            if name.casefold() not in self.used and name.casefold() not in _REAL:
                self.used.add(name.casefold())
                return name
        raise SnapshotError("control split: could not invent a fresh name")  # pragma: no cover

    def word(self, n: int = 2) -> str:
        return "".join(self._syllable() for _ in range(n)).capitalize()

    def place(self) -> str:
        return self._fresh(lambda: (self._syllable() + self.rng.choice(_PLACE_ENDS)).capitalize())

    def person(self) -> str:
        return self._fresh(lambda: f"{self.word(2)} {self.word(2)}")

    def suffixed(self, suffixes: Sequence[str], *, place: bool = True) -> str:
        return self._fresh(
            lambda: f"{(self._syllable() + self.rng.choice(_PLACE_ENDS)).capitalize() if place else self.word(2)} "
            f"{self.rng.choice(suffixes)}"
        )

    def title(self) -> str:
        r = self.rng
        return self._fresh(lambda: f"{r.choice(_WORDS)} {r.choice(_WORDS)}" if r.random() < 0.6 else f"The {r.choice(_WORDS)} of {self.place()}")

    def quake_place(self, country: str) -> str:
        r = self.rng
        return self._fresh(lambda: f"{r.randint(3, 60)} km {r.choice(_COMPASS)} of {self.place()}, {country}")

    def pool(self, make: Callable[[], str], n: int = _NAMES_PER_POOL) -> tuple[Value, ...]:
        return tuple(NameValue(make()) for _ in range(n))


def _day(rng: random.Random, start: date, end: date) -> date:
    span = max((end - start).days, 1)
    return start + timedelta(days=rng.randrange(span))


def _match(rng: random.Random, nm: _Namer, start: date, end: date) -> tuple[str, MatchFacts, dict[str, tuple[Value, ...]]]:
    home, away = nm.suffixed(_TEAM_SUFFIX), nm.suffixed(_TEAM_SUFFIX)
    hs, as_ = rng.randint(0, 4), rng.randint(0, 4)
    if hs == as_:
        hs += 1  # a winner to ask about
    facts = MatchFacts(
        sport="soccer", competition=nm.suffixed(_LEAGUE_SUFFIX, place=False), season=str(start.year),
        date=_day(rng, start, end), venue=nm.suffixed(_VENUE_SUFFIX), city=nm.place(), home_team=home,
        away_team=away, home_score=hs, away_score=as_, spectators=rng.randint(3_000, 60_000),
    )
    teams = nm.pool(lambda: nm.suffixed(_TEAM_SUFFIX))
    loser = away if hs > as_ else home
    pools = {
        "competition": nm.pool(lambda: nm.suffixed(_LEAGUE_SUFFIX, place=False)),
        "venue": nm.pool(lambda: nm.suffixed(_VENUE_SUFFIX)),
        "home_team": teams, "away_team": teams, "winner": (NameValue(loser), *teams),
    }
    return f"{home} – {away}", facts, pools


def _film(rng: random.Random, nm: _Namer, start: date, end: date) -> tuple[str, FilmFacts, dict[str, tuple[Value, ...]]]:
    title = nm.title()
    budget = rng.randint(2, 90) * 1_000_000
    facts = FilmFacts(
        title=title, release_date=_day(rng, start, end), directors=[nm.person()],
        cast=[CastMember(name=nm.person()) for _ in range(3)], runtime_min=rng.randint(84, 151),
        genres=rng.sample(known_values("genre"), 2), budget_usd=budget,
        revenue_usd=int(budget * rng.uniform(0.3, 4.0)) // 100_000 * 100_000 or 100_000,
        production_companies=[nm.suffixed(_STUDIO_SUFFIX, place=False)],
    )
    people = nm.pool(nm.person)
    pools = {"director": people, "lead_actor": people, "production_company": nm.pool(lambda: nm.suffixed(_STUDIO_SUFFIX, place=False))}
    return title, facts, pools


def _release(rng: random.Random, nm: _Namer, start: date, end: date) -> tuple[str, ReleaseFacts, dict[str, tuple[Value, ...]]]:
    artist = nm.person()
    titles: list[str] = []
    while len(titles) < rng.randint(6, 12):
        t = f"{rng.choice(_WORDS)} {rng.choice(_WORDS)}"
        if t not in titles and t.split()[0] != t.split()[1]:
            titles.append(t)
    facts = ReleaseFacts(
        title=nm.title(), artists=[artist], artist_credit=artist, release_date=_day(rng, start, end),
        label=nm.suffixed(_LABEL_SUFFIX, place=False), release_type=rng.choice(("Album", "EP")),
        tracks=[Track(position=i + 1, title=t, length_s=rng.randint(140, 330)) for i, t in enumerate(titles)],
    )
    pools = {"artist": nm.pool(nm.person), "label": nm.pool(lambda: nm.suffixed(_LABEL_SUFFIX, place=False))}
    return facts.title, facts, pools


def _fictional_mmi(mag: float, depth_km: float) -> float:
    """A plausible maximum estimated intensity (MMI): it grows with the magnitude, shrinks with the depth
    (M 6.7 at 18 km -> about 8, M 4.6 at 180 km -> about 3), on USGS's 3 decimals. No random draw, so the
    rest of the fictional quake (and every entity after it) is what it was before intensities were added."""
    return round(min(9.6, max(2.0, 1.2 * mag - 2.5 * math.log10(max(depth_km, 5.0)) + 3.0)), 3)


def _quake(rng: random.Random, nm: _Namer, start: date, end: date) -> tuple[str, QuakeFacts, dict[str, tuple[Value, ...]]]:
    country = rng.choice(sorted(_QUAKE_COUNTRIES))
    (lat0, lat1), (lon0, lon1) = _QUAKE_COUNTRIES[country]
    place = nm.quake_place(country)
    mag = round(rng.uniform(4.6, 7.4), 1)
    when = datetime.combine(_day(rng, start, end), time(rng.randrange(24), rng.randrange(60)), tzinfo=UTC)
    facts = QuakeFacts(
        title=f"M {mag} - {place}", place=place, time_utc=when, magnitude=mag, mag_type="mww",
        depth_km=round(rng.uniform(5, 180), 1), latitude=round(rng.uniform(lat0, lat1), 3),
        longitude=round(rng.uniform(lon0, lon1), 3), alert=rng.choice(("green", "yellow", "orange")),
        tsunami=rng.random() < 0.3, felt=rng.randint(10, 4000), fatalities=rng.randint(0, 40),
    )
    facts = facts.model_copy(update={"mmi": _fictional_mmi(facts.magnitude, facts.depth_km)})
    return facts.title, facts, {"place": nm.pool(lambda: nm.quake_place(rng.choice(sorted(_QUAKE_COUNTRIES))))}


def _disaster(rng: random.Random, nm: _Namer, start: date, end: date) -> tuple[str, DisasterFacts, dict[str, tuple[Value, ...]]]:
    country = rng.choice(COUNTRIES)
    kind = rng.choice(_DISASTER_TYPES)
    day = _day(rng, start, end)
    code = {"flood": "FL", "tropical cyclone": "TC", "drought": "DR", "landslide": "LS", "wild fire": "WF",
            "cold wave": "CW", "heat wave": "HT"}[kind]
    name = f"{nm.word(2)} {kind.title()} {day.year}"
    facts = DisasterFacts(
        name=name, disaster_type=kind, country=country, date=day, status=rng.choice(("past", "alert")),
        deaths=rng.randint(0, 300), affected=rng.randint(2, 900) * 1000,
        glide=f"{code}-{day.year}-{rng.randint(100, 999_000):06d}-{country[:3].upper()}",
    )
    return name, facts, {}


_Maker = Callable[[random.Random, _Namer, date, date], tuple[str, EntityFacts, dict[str, tuple[Value, ...]]]]
_MAKERS: dict[str, tuple[_Maker, ...]] = {"sports": (_match,), "movies": (_film,), "music": (_release,), "disasters": (_quake, _disaster)}


_KINDS: dict[str, _Maker] = {"match": _match, "film": _film, "release": _release, "quake": _quake, "disaster": _disaster}


def fictional_entity(kind: str, rng: random.Random, *, start: date, end: date) -> tuple[str, EntityFacts]:
    """One fictional entity of `kind` ("match", "film", "release", "quake" or "disaster"), dated in
    [start, end), drawn from `rng` by the control split's own makers and name pools (the replay server's
    generator mode reuses them for its stream): its name and facts."""
    maker = _KINDS.get(kind)
    if maker is None:
        raise SnapshotError(f"no fictional entities of kind {kind!r}; known: {sorted(_KINDS)}")
    name, facts, _ = maker(rng, _Namer(rng), start, end)
    return name, facts


def _seeded(seed: int, *parts: object) -> random.Random:
    return random.Random(seeded_key(seed, *parts))


def control_entities(*, spec: str, period: str, seed: int, start: date, end: date, domains: Sequence[str], per_domain: int) -> list[ControlEntity]:
    """`per_domain` fictional entities for every domain of `domains`, dated in [start, end)."""
    tag = f"{spec}/{period}"
    nm = _Namer(_seeded(seed, tag, "control", "names"))
    out: list[ControlEntity] = []
    for domain in domains:
        makers = _MAKERS.get(domain)
        if makers is None:
            raise SnapshotError(f"control split: no fictional entities for domain {domain!r}")
        for i in range(per_domain):
            rng = _seeded(seed, tag, "control", domain, i)
            nm.rng = rng
            name, facts, pools = makers[i % len(makers)](rng, nm, start, end)
            out.append(
                ControlEntity(external_id=f"{tag}/s{seed}/{domain}/{i}", domain=domain, name=name, facts=facts, candidates=pools)
            )
    return out


def build_control(
    *, spec: str, period: str, seed: int, start: date, end: date, languages: Sequence[str], domains: Sequence[str],
    per_domain: int,
) -> ControlContent:
    """The control split's documents and questions (every question the engine can ask, in every language)."""
    langs = list(languages)
    ents = control_entities(spec=spec, period=period, seed=seed, start=start, end=end, domains=domains, per_domain=per_domain)
    tag = f"{spec}/{period}"
    docs: list[DocRow] = []
    planned: list[tuple[ControlEntity, int, plans.Plan]] = []
    for e in ents:
        rendered = {lang: render_document(e.facts, lang) for lang in langs}
        for lang in langs:
            docs.append(DocRow(entity_id=e.entity_id, domain=e.domain, source=CONTROL_SOURCE, lang=lang, name=e.name, text=rendered[lang].text))
        for slot in SLOTS[e.facts.kind]:
            pools = e.candidates.get(slot)
            p = plans.plan(e.facts, slot, candidates=pools)
            if p is None or any(slot not in d.sentences for d in rendered.values()):
                continue
            ok = True
            for lang, d in rendered.items():
                mcq = MCQ(
                    question=plans.question_text(e.facts, slot, lang), options=plans.render_options(p.values, lang),
                    answer_index=p.answer_index, evidence=d.sentences[slot], slot=slot,
                )
                if check_against_document(mcq, d.text):
                    ok = False
                    break
            if ok:
                planned.append((e, stable_qid(CONTROL_SOURCE, e.external_id, slot), p))
    # the correct letter is uniform over the split: dealt round-robin in a seeded order, as for real items
    planned.sort(key=lambda t: seeded_key(seed, tag, "control", "letter", t[1]))
    questions: list[QuestionRow] = []
    for i, (e, qid, p) in enumerate(planned):
        target = i % 4
        others = [k for k in range(4) if k != p.answer_index]
        random.Random(seeded_key(seed, tag, "control", "options", qid)).shuffle(others)
        order = [*others[:target], p.answer_index, *others[target:]]
        for lang in langs:
            opts = plans.render_options(p.values, lang)
            questions.append(
                QuestionRow(
                    qid=qid, entity_id=e.entity_id, domain=e.domain, lang=lang, split="test",
                    question=plans.question_text(e.facts, p.slot, lang), options=[opts[k] for k in order],
                    answer=LETTERS[target], answer_index=target, slot=p.slot, source=CONTROL_SOURCE,
                )
            )
    rank = {lang: i for i, lang in enumerate(langs)}
    docs.sort(key=lambda r: (rank[r.lang], r.domain, r.entity_id))
    questions.sort(key=lambda r: (rank[r.lang], r.qid))
    return ControlContent(entities=tuple(ents), docs=tuple(docs), questions=tuple(questions))


def control_docs_path(root: Path, lang: str) -> Path:
    return root / CONTROL_DIR / "docs" / f"{lang}.jsonl"


def control_questions_path(root: Path, lang: str) -> Path:
    return root / CONTROL_DIR / "questions" / f"{lang}.jsonl"


def write_control(content: SnapshotContent, root: Path) -> list[str]:
    """Write the control files (nothing without a control split); return their paths relative to `root`."""
    if not content.control_docs:
        return []
    out: list[str] = []
    for lang in content.languages:
        for path, rows in (
            (control_docs_path(root, lang), content.control_docs_in(lang)),
            (control_questions_path(root, lang), content.control_questions_in(lang)),
        ):
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8", newline="\n") as fh:
                fh.write("".join(dumps_row(r) + "\n" for r in rows))
            out.append(path.relative_to(root).as_posix())
    return out


def attach_control(content: SnapshotContent, *, start: date, end: date, domains: Sequence[str], per_domain: int) -> SnapshotContent:
    """`content` with its control split (unchanged when `per_domain` is 0)."""
    if per_domain <= 0:
        return content
    ctl = build_control(
        spec=content.spec, period=content.period, seed=content.seed, start=start, end=end,
        languages=content.languages, domains=domains, per_domain=per_domain,
    )
    return dataclasses.replace(content, control_docs=ctl.docs, control_questions=ctl.questions)


def control_info(content: SnapshotContent, *, domains: Sequence[str], per_domain: int) -> ControlInfo | None:
    """The manifest's record of the control split (None when there is none)."""
    if per_domain <= 0:
        return None
    first = content.languages[0]
    return ControlInfo(
        per_domain=per_domain, domains=list(domains),
        entities=len({d.entity_id for d in content.control_docs}), questions=len(content.control_questions_in(first)),
        engine=PROMPT_VERSION,
    )


def check_control_engine(info: ControlInfo, snapshot_id: str) -> None:
    """Refuse to regenerate a control split that an other template engine version wrote: its questions would
    differ (and the snapshot would no longer hash to its id) for a reason the hash cannot tell."""
    written = info.engine or _ENGINE_BEFORE_RECORDED
    if written != PROMPT_VERSION:
        raise SnapshotError(
            f"snapshot {snapshot_id}: its control split was written by template engine {written}, this code writes "
            f"{PROMPT_VERSION}, so it cannot be regenerated; use its exported folder, or rebuild the snapshot"
        )
