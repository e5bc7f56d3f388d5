"""A launch's report (LaunchFacts): when, who, which rocket, the outcome, the mission and the pad."""

from __future__ import annotations

from clkt.documents._builder import DocBuilder
from clkt.documents.formatting import Formatter
from clkt.documents.registry import DOCUMENT_KINDS, DocumentKind
from clkt.domains.spaceflight import SPEC
from clkt.domains.spaceflight.facts import LaunchFacts
from clkt.domains.spaceflight.labels import MISSION_TYPE, ORBIT, OUTCOME
from clkt.facts import RenderedDocument

__all__ = ["LAUNCH_TEXT", "render_launch"]

LAUNCH_TEXT: dict[str, dict[str, str]] = {
    "en": {
        "net": "The launch took place on {time}.",
        "provider": "The launch service provider was {provider}.",
        "rocket": "The launch vehicle was the {rocket}.",
        "outcome": "The outcome of the launch was: {outcome}.",
        "mission": "The mission was named {mission}.",
        "mission_type": "The mission type was: {type}.",
        "orbit": "The target orbit was: {orbit}.",
        "pad": "The rocket lifted off from {pad}.",
        "location": "The launch site was {location}.",
        "failreason": "Reason given for the failure: {reason}",
    },
    "ja": {
        "net": "打ち上げは{time}に行われた。",
        "provider": "打ち上げ事業者は{provider}であった。",
        "rocket": "ロケットは{rocket}であった。",
        "outcome": "打ち上げの結果は{outcome}であった。",
        "mission": "ミッション名は{mission}であった。",
        "mission_type": "ミッションの種類は{type}であった。",
        "orbit": "目標軌道は{orbit}であった。",
        "pad": "ロケットは{pad}から打ち上げられた。",
        "location": "打ち上げ場所は{location}であった。",
    },
    "zh": {
        "net": "此次发射于{time}进行。",
        "provider": "发射服务商为{provider}。",
        "rocket": "运载火箭为{rocket}。",
        "outcome": "此次发射的结果为{outcome}。",
        "mission": "任务名称为{mission}。",
        "mission_type": "任务类型为{type}。",
        "orbit": "目标轨道为{orbit}。",
        "pad": "火箭从{pad}升空。",
        "location": "发射场为{location}。",
    },
    "fr": {
        "net": "Le lancement a eu lieu le {time}.",
        "provider": "Le fournisseur du lancement était {provider}.",
        "rocket": "Le lanceur était le {rocket}.",
        "outcome": "Le résultat du lancement : {outcome}.",
        "mission": "La mission s'appelait {mission}.",
        "mission_type": "Le type de mission était : {type}.",
        "orbit": "L'orbite visée était : {orbit}.",
        "pad": "La fusée a décollé de {pad}.",
        "location": "Le site de lancement était {location}.",
    },
    "es": {
        "net": "El lanzamiento tuvo lugar el {time}.",
        "provider": "El proveedor del lanzamiento fue {provider}.",
        "rocket": "El vehículo de lanzamiento fue el {rocket}.",
        "outcome": "El resultado del lanzamiento fue: {outcome}.",
        "mission": "La misión se llamó {mission}.",
        "mission_type": "El tipo de misión fue: {type}.",
        "orbit": "La órbita prevista fue: {orbit}.",
        "pad": "El cohete despegó desde {pad}.",
        "location": "El lugar de lanzamiento fue {location}.",
    },
}


def render_launch(f: LaunchFacts, fmt: Formatter) -> RenderedDocument:
    t = LAUNCH_TEXT[fmt.lang]
    doc = DocBuilder(lang=fmt.lang, title=f.name)
    doc.add(t["net"].format(time=fmt.datetime_utc(f.net)), slot="net")
    if f.provider:
        doc.add(t["provider"].format(provider=f.provider), slot="provider")
    if f.rocket:
        doc.add(t["rocket"].format(rocket=f.rocket), slot="rocket")
    doc.add(t["outcome"].format(outcome=fmt.label(OUTCOME, f.outcome)), slot="outcome")
    if f.mission:
        doc.add(t["mission"].format(mission=f.mission))
    if f.mission_type and f.mission_type.strip().casefold() != "unknown":
        doc.add(t["mission_type"].format(type=fmt.label(MISSION_TYPE, f.mission_type)), slot="mission_type")
    if f.orbit and f.orbit.strip().casefold() != "unknown":
        doc.add(t["orbit"].format(orbit=fmt.label(ORBIT, f.orbit)), slot="orbit")
    if f.pad:
        doc.add(t["pad"].format(pad=f.pad), slot="pad")
    if f.location:
        doc.add(t["location"].format(location=f.location), slot="location")
    if fmt.lang == "en" and f.failreason:
        doc.paragraph()
        doc.add(t["failreason"].format(reason=" ".join(f.failreason.split())))
    return doc.build()


DOCUMENT_KINDS.register(
    DocumentKind(kind="launch", facts=LaunchFacts, domain=SPEC.name, slots=SPEC.slots, render=render_launch)
)
