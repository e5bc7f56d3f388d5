"""Question templates and distractors for music releases (ReleaseFacts)."""

from __future__ import annotations

from random import Random

from agents.template.distractors import near_ints, pool_names, shifted_dates
from agents.template.domains import AGENT_KINDS, AgentKind
from agents.template.matchers import FactList, in_name, label_fact, title_fact
from agents.template.slots import DomainTemplates, SlotTemplate
from agents.template.values import DateValue, IntValue, LabelValue, NameValue, Value
from clkt.documents.formatting import Formatter
from clkt.documents.labels import known_values
from clkt.domains.music.document import ordered_tracks, release_type_key
from clkt.domains.music.facts import ReleaseFacts
from clkt.domains.music.labels import RELEASE_TYPE
from clkt.domains.music.pools import ARTISTS, LABELS
from clkt.outputs import normalize

__all__ = ["SPEC"]

Q: dict[str, dict[str, str]] = {
    "artist": {
        "en": "Which artist is credited on the release {title} ({year})?",
        "ja": "{year}年のリリース作品{title}にクレジットされているアーティストは誰ですか？",
        "zh": "{year}年发行的作品{title}署名的艺人是谁？",
        "fr": "Quel artiste est crédité sur la parution {title} ({year}) ?",
        "es": "¿Qué artista figura en los créditos de la publicación {title} ({year})?",
    },
    "release_date": {
        "en": "On what date was {title} by {artist} released?",
        "ja": "{artist}の{title}がリリースされたのはいつですか？",
        "zh": "{artist}的{title}是在哪一天发行的？",
        "fr": "À quelle date {title} de {artist} est-il sorti ?",
        "es": "¿En qué fecha se publicó {title} de {artist}?",
    },
    "label": {
        "en": "On which label was {title} by {artist} released?",
        "ja": "{artist}の{title}はどのレーベルからリリースされましたか？",
        "zh": "{artist}的{title}是由哪个厂牌发行的？",
        "fr": "Sur quel label {title} de {artist} est-il sorti ?",
        "es": "¿Con qué sello se publicó {title} de {artist}?",
    },
    "track_count": {
        "en": "How many tracks are on {title} by {artist}?",
        "ja": "{artist}の{title}には何曲収録されていますか？",
        "zh": "{artist}的{title}共收录了多少首曲目？",
        "fr": "Combien de titres compte {title} de {artist} ?",
        "es": "¿Cuántas pistas tiene {title} de {artist}?",
    },
    "first_track": {
        "en": "What is the first track on {title} by {artist}?",
        "ja": "{artist}の{title}の1曲目は何ですか？",
        "zh": "{artist}的{title}的第一首曲目是什么？",
        "fr": "Quel est le premier titre de {title} de {artist} ?",
        "es": "¿Cuál es la primera pista de {title} de {artist}?",
    },
    "last_track": {
        "en": "What is the last track on {title} by {artist}?",
        "ja": "{artist}の{title}の最後の曲は何ですか？",
        "zh": "{artist}的{title}的最后一首曲目是什么？",
        "fr": "Quel est le dernier titre de {title} de {artist} ?",
        "es": "¿Cuál es la última pista de {title} de {artist}?",
    },
    "release_type": {
        "en": "What type of release is {title} by {artist}?",
        "ja": "{artist}の{title}のリリース形態は何ですか？",
        "zh": "{artist}的{title}属于哪种发行类型？",
        "fr": "De quel type de parution s'agit-il pour {title} de {artist} ?",
        "es": "¿Qué tipo de publicación es {title} de {artist}?",
    },
}

_TYPES = ("album", "single", "ep", "compilation", "soundtrack", "live")


# the release as the questions name it (`DomainTemplates.naming`)
NAMING = {"en": "{title} by {artist}", "ja": "{artist}の{title}", "zh": "{artist}的{title}", "fr": "{title} de {artist}",
          "es": "{title} de {artist}"}


def _context(f: ReleaseFacts, fmt: Formatter) -> dict[str, str]:
    return {"title": fmt.quote(f.title), "artist": f.artist_credit, "year": str(f.release_date.year)}


def _anchors(f: ReleaseFacts, fmt: Formatter) -> list[str]:
    return [f.title, f.artist_credit, *f.artists]


def _track(f: ReleaseFacts, index: int) -> Value | None:
    titles = ordered_tracks(f)
    if len(titles) < 2 and index != 0:
        return None
    return NameValue(titles[index]) if titles else None


def _other_tracks(f: ReleaseFacts, rng: Random, index: int) -> list[Value]:
    titles = ordered_tracks(f)
    if not titles:
        return []
    target = titles[index]
    others = [t for t in dict.fromkeys(titles) if t != target]
    rng.shuffle(others)
    return [NameValue(t) for t in others]


def _type_answer(f: ReleaseFacts) -> Value | None:
    key = release_type_key(f.release_type)
    return LabelValue(RELEASE_TYPE, key) if key in known_values(RELEASE_TYPE) else None


def _type_candidates(f: ReleaseFacts, rng: Random) -> list[Value]:
    own = release_type_key(f.release_type)
    keys = [k for k in _TYPES if k != own]
    rng.shuffle(keys)
    return [LabelValue(RELEASE_TYPE, k) for k in keys]


SPEC = DomainTemplates(
    kind="release",
    context=_context,
    anchors=_anchors,
    naming=NAMING,
    slots={
        "artist": SlotTemplate(
            slot="artist", question=Q["artist"], answer=lambda f: NameValue(f.artist_credit),
            candidates=lambda f, rng: pool_names(ARTISTS, rng, exclude=[f.artist_credit, *f.artists]),
            truths=lambda f: [NameValue(a) for a in f.artists],
        ),
        "release_date": SlotTemplate(
            slot="release_date", question=Q["release_date"], answer=lambda f: DateValue(f.release_date),
            candidates=lambda f, rng: shifted_dates(f.release_date, rng),
        ),
        "label": SlotTemplate(
            slot="label", question=Q["label"], answer=lambda f: NameValue(f.label) if f.label else None,
            candidates=lambda f, rng: pool_names(LABELS, rng, exclude=(f.label or "",)),
        ),
        "track_count": SlotTemplate(
            slot="track_count", question=Q["track_count"],
            answer=lambda f: IntValue(len(f.tracks)) if f.tracks else None,
            candidates=lambda f, rng: near_ints(len(f.tracks), rng, minimum=1),
        ),
        "first_track": SlotTemplate(
            slot="first_track", question=Q["first_track"], answer=lambda f: _track(f, 0),
            candidates=lambda f, rng: _other_tracks(f, rng, 0),
        ),
        "last_track": SlotTemplate(
            slot="last_track", question=Q["last_track"], answer=lambda f: _track(f, -1),
            candidates=lambda f, rng: _other_tracks(f, rng, -1),
        ),
        "release_type": SlotTemplate(
            slot="release_type", question=Q["release_type"], answer=_type_answer, candidates=_type_candidates,
        ),
    },
)


def _judge_facts(f: ReleaseFacts, found: FactList) -> None:
    found.day("release_date", f.release_date)
    for a in f.artists:
        found.person("artist", a)
    if f.label and not in_name(found.entity_name, f.label):
        found.add(label_fact(f.label))
    found.num("track_count", len(f.tracks) or None, "tracks")
    for title in dict.fromkeys(ordered_tracks(f)):
        if not in_name(found.entity_name, title) and normalize(title) != normalize(f.title):
            found.add(title_fact("track", title))


AGENT_KINDS.register(
    AgentKind(
        kind="release", templates=SPEC, judge_facts=_judge_facts,
        proper_names=lambda f: [*f.artists, *([f.label] if f.label else [])],
    )
)
