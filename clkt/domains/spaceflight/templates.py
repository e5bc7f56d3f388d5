"""Question templates, distractors and judge facts for launches (LaunchFacts).

The outcome (success, failure, partial failure) is stated in the documents but not asked: three values leave no
fourth option."""

from __future__ import annotations

from random import Random

from agents.template.distractors import pool_names, shifted_dates
from agents.template.domains import AGENT_KINDS, AgentKind
from agents.template.matchers import FactList
from agents.template.slots import DomainTemplates, SlotTemplate
from agents.template.values import DateValue, LabelValue, NameValue, Value
from clkt.documents.formatting import Formatter
from clkt.documents.labels import known_values
from clkt.domains.spaceflight.facts import LaunchFacts
from clkt.domains.spaceflight.labels import MISSION_TYPE, ORBIT

__all__ = ["LAUNCH_SITES", "PADS", "PROVIDERS", "ROCKETS", "TEMPLATES"]

PROVIDERS = (
    "SpaceX", "Rocket Lab", "Arianespace", "United Launch Alliance", "Blue Origin", "Indian Space Research Organization",
    "China Aerospace Science and Technology Corporation", "Russian Federal Space Agency (ROSCOSMOS)",
    "Japan Aerospace Exploration Agency", "Mitsubishi Heavy Industries", "Space One", "Isar Aerospace", "Firefly Aerospace",
    "Galactic Energy", "LandSpace", "CAS Space", "Northrop Grumman Space Systems", "Relativity Space",
)
ROCKETS = (
    "Falcon 9 Block 5", "Falcon Heavy", "Electron", "Ariane 62", "Ariane 64", "Vega-C", "Atlas V 551", "Vulcan VC4L",
    "New Glenn", "Long March 2D", "Long March 7A", "Long March 5", "Soyuz 2.1a", "Soyuz 2.1b", "H3-22S",
    "Launch Vehicle Mark-3 (GSLV Mk III)", "PSLV-XL", "Spectrum", "Firefly Alpha", "Ceres-1", "Zhuque-2",
    "Kii-based Advanced & Instant ROcket System", "Minotaur IV",
)
PADS = (
    "Space Launch Complex 40", "Space Launch Complex 4E", "Launch Complex 39A", "Space Launch Complex 41",
    "Rocket Lab Launch Complex 1A", "Ariane Launch Area 4", "Satish Dhawan Space Centre Second Launch Pad",
    "Launch Area 4 (SLS-2 / 603)", "Wenchang Space Launch Site 201", "31/6", "Yoshinobu Launch Complex",
    "Orbital Launch Pad", "Space One Launch Pad", "Launch Complex 36",
)
LAUNCH_SITES = (
    "Cape Canaveral SFS, FL, USA", "Vandenberg SFB, CA, USA", "Kennedy Space Center, FL, USA",
    "Guiana Space Centre, French Guiana", "Satish Dhawan Space Centre, India",
    "Jiuquan Satellite Launch Center, People's Republic of China", "Baikonur Cosmodrome, Republic of Kazakhstan",
    "Tanegashima, Japan", "Spaceport Kii, Japan", "Andøya Spaceport",
    "Rocket Lab Launch Complex 1, Mahia Peninsula, New Zealand", "Plesetsk Cosmodrome, Russian Federation",
)
_UNKNOWN = "unknown"

Q: dict[str, dict[str, str]] = {
    "net": {
        "en": "On what date did the launch {launch} take place?",
        "ja": "打ち上げ{launch}が行われたのはいつですか？",
        "zh": "发射{launch}是在哪一天进行的？",
        "fr": "À quelle date le lancement {launch} a-t-il eu lieu ?",
        "es": "¿En qué fecha tuvo lugar el lanzamiento {launch}?",
    },
    "provider": {
        "en": "Which company or agency provided the launch {launch}?",
        "ja": "打ち上げ{launch}を担った事業者はどこですか？",
        "zh": "发射{launch}的发射服务商是哪家？",
        "fr": "Quelle entreprise ou agence a assuré le lancement {launch} ?",
        "es": "¿Qué empresa o agencia realizó el lanzamiento {launch}?",
    },
    "rocket": {
        "en": "Which launch vehicle flew the launch {launch}?",
        "ja": "打ち上げ{launch}に使われたロケットは何ですか？",
        "zh": "发射{launch}使用的是哪种运载火箭？",
        "fr": "Quel lanceur a effectué le lancement {launch} ?",
        "es": "¿Qué vehículo de lanzamiento realizó el lanzamiento {launch}?",
    },
    "mission_type": {
        "en": "What type of mission was the launch {launch}?",
        "ja": "打ち上げ{launch}のミッションの種類は何でしたか？",
        "zh": "发射{launch}的任务类型是什么？",
        "fr": "De quel type de mission relevait le lancement {launch} ?",
        "es": "¿Qué tipo de misión fue el lanzamiento {launch}?",
    },
    "orbit": {
        "en": "What was the target orbit of the launch {launch}?",
        "ja": "打ち上げ{launch}の目標軌道は何でしたか？",
        "zh": "发射{launch}的目标轨道是什么？",
        "fr": "Quelle était l'orbite visée par le lancement {launch} ?",
        "es": "¿Cuál fue la órbita prevista del lanzamiento {launch}?",
    },
    "pad": {
        "en": "From which launch pad did the launch {launch} lift off?",
        "ja": "打ち上げ{launch}はどの発射台から行われましたか？",
        "zh": "发射{launch}是从哪个发射台升空的？",
        "fr": "De quel pas de tir le lancement {launch} a-t-il décollé ?",
        "es": "¿Desde qué plataforma despegó el lanzamiento {launch}?",
    },
    "location": {
        "en": "At which launch site did the launch {launch} take place?",
        "ja": "打ち上げ{launch}はどの射場で行われましたか？",
        "zh": "发射{launch}是在哪个发射场进行的？",
        "fr": "Sur quel site le lancement {launch} a-t-il eu lieu ?",
        "es": "¿En qué lugar de lanzamiento tuvo lugar el lanzamiento {launch}?",
    },
}

NAMING = {lang: "{launch}" for lang in ("en", "ja", "zh", "fr", "es")}


def _context(f: LaunchFacts, fmt: Formatter) -> dict[str, str]:
    return {"launch": fmt.quote(f.name)}


def _anchors(f: LaunchFacts, fmt: Formatter) -> list[str]:
    return [f.name, *([f.mission] if f.mission else [])]


def _label(category: str, value: str | None) -> Value | None:
    key = (value or "").strip().casefold()
    return LabelValue(category, key) if key and key != _UNKNOWN and key in known_values(category) else None


def _labels(category: str, own: str | None, rng: Random) -> list[Value]:
    keys = [k for k in known_values(category) if k != (own or "").strip().casefold()]
    rng.shuffle(keys)
    return [LabelValue(category, k) for k in keys]


def _named(value: str | None) -> Value | None:
    return NameValue(value) if value else None


TEMPLATES = DomainTemplates(
    kind="launch",
    context=_context,
    anchors=_anchors,
    naming=NAMING,
    slots={
        "net": SlotTemplate(
            slot="net", question=Q["net"], answer=lambda f: DateValue(Formatter.utc(f.net).date()),
            candidates=lambda f, rng: shifted_dates(Formatter.utc(f.net).date(), rng),
        ),
        "provider": SlotTemplate(
            slot="provider", question=Q["provider"], answer=lambda f: _named(f.provider),
            candidates=lambda f, rng: pool_names(PROVIDERS, rng, exclude=[f.provider or "", f.name]),
        ),
        "rocket": SlotTemplate(
            slot="rocket", question=Q["rocket"], answer=lambda f: _named(f.rocket),
            candidates=lambda f, rng: pool_names(ROCKETS, rng, exclude=[f.rocket or "", f.name]),
        ),
        "mission_type": SlotTemplate(
            slot="mission_type", question=Q["mission_type"], answer=lambda f: _label(MISSION_TYPE, f.mission_type),
            candidates=lambda f, rng: _labels(MISSION_TYPE, f.mission_type, rng),
        ),
        "orbit": SlotTemplate(
            slot="orbit", question=Q["orbit"], answer=lambda f: _label(ORBIT, f.orbit),
            candidates=lambda f, rng: _labels(ORBIT, f.orbit, rng),
        ),
        "pad": SlotTemplate(
            slot="pad", question=Q["pad"], answer=lambda f: _named(f.pad),
            candidates=lambda f, rng: pool_names(PADS, rng, exclude=[f.pad or ""]),
        ),
        "location": SlotTemplate(
            slot="location", question=Q["location"], answer=lambda f: _named(f.location),
            candidates=lambda f, rng: pool_names(LAUNCH_SITES, rng, exclude=[f.location or ""]),
        ),
    },
)


def _judge_facts(f: LaunchFacts, found: FactList) -> None:
    found.day("net", Formatter.utc(f.net).date())
    found.person("provider", f.provider)
    found.person("rocket", f.rocket)
    found.person("pad", f.pad)
    found.person("location", f.location)


AGENT_KINDS.register(
    AgentKind(
        kind="launch", templates=TEMPLATES, judge_facts=_judge_facts,
        proper_names=lambda f: [x for x in (f.provider, f.rocket, f.mission, f.pad) if x],
    )
)
