"""Question templates and distractors for earthquakes (QuakeFacts) and other disasters (DisasterFacts)."""

from __future__ import annotations

import re
from random import Random

from agents.template.distractors import (
    near_coordinates,
    near_floats,
    near_ints,
    pool_names,
    shifted_dates,
    spread_floats,
)
from agents.template.domains import AGENT_KINDS, AgentKind
from agents.template.matchers import FactList, depth_fact, magnitude_fact, name_fact
from agents.template.slots import DomainTemplates, SlotTemplate
from agents.template.values import CoordValue, DateValue, FloatValue, IntValue, LabelValue, NameValue, Value
from clkt.documents.formatting import Formatter
from clkt.documents.labels import known_values
from clkt.domains.disasters.facts import DisasterFacts, QuakeFacts
from clkt.domains.disasters.labels import ALERT, DISASTER_STATUS, DISASTER_TYPE
from clkt.domains.disasters.pools import COUNTRIES, QUAKE_PLACES

__all__ = ["DISASTER_SPEC", "QUAKE_SPEC"]

# Subject phrases (no article) for a quake; "nomag"/"nodate"/"noplace" leave out the fact being asked.
# None names the coordinates (the latitude question) nor the intensity; the context adds "nommi": the full
# phrase, or "nomag" when the magnitude reads like the intensity (the question would give the answer away).
_QUAKE_SUBJECT: dict[str, dict[str, str]] = {
    "en": {
        "quake": "magnitude {mag} earthquake of {date} (UTC) whose epicentre was given as {place}",
        "nomag": "earthquake of {date} (UTC) whose epicentre was given as {place}",
        "nodate": "magnitude {mag} earthquake whose epicentre was given as {place}",
        "noplace": "magnitude {mag} earthquake of {date} (UTC)",
    },
    "ja": {
        "quake": "{date}（UTC）に発生し、震央が{place}とされたマグニチュード{mag}の地震",
        "nomag": "{date}（UTC）に発生し、震央が{place}とされた地震",
        "nodate": "震央が{place}とされたマグニチュード{mag}の地震",
        "noplace": "{date}（UTC）に発生したマグニチュード{mag}の地震",
    },
    "zh": {
        "quake": "{date}（UTC）发生、震中位置记录为{place}的{mag}级地震",
        "nomag": "{date}（UTC）发生、震中位置记录为{place}的地震",
        "nodate": "震中位置记录为{place}的{mag}级地震",
        "noplace": "{date}（UTC）发生的{mag}级地震",
    },
    "fr": {
        "quake": "séisme de magnitude {mag} du {date} (UTC) localisé « {place} »",
        "nomag": "séisme du {date} (UTC) localisé « {place} »",
        "nodate": "séisme de magnitude {mag} localisé « {place} »",
        "noplace": "séisme de magnitude {mag} du {date} (UTC)",
    },
    "es": {
        "quake": "terremoto de magnitud {mag} del {date} (UTC) localizado en «{place}»",
        "nomag": "terremoto del {date} (UTC) localizado en «{place}»",
        "nodate": "terremoto de magnitud {mag} localizado en «{place}»",
        "noplace": "terremoto de magnitud {mag} del {date} (UTC)",
    },
}

QUAKE_QUESTIONS: dict[str, dict[str, str]] = {
    "time": {
        "en": "On what date (UTC) did the {nodate} occur?",
        "ja": "{nodate}が発生したのはいつ（UTC）ですか？",
        "zh": "{nodate}发生于哪一天（UTC）？",
        "fr": "À quelle date (UTC) s'est produit le {nodate} ?",
        "es": "¿En qué fecha (UTC) ocurrió el {nodate}?",
    },
    "place": {
        "en": "Where was the epicentre of the {noplace}?",
        "ja": "{noplace}の震央はどこですか？",
        "zh": "{noplace}的震中位于何处？",
        "fr": "Où se trouvait l'épicentre du {noplace} ?",
        "es": "¿Dónde estuvo el epicentro del {noplace}?",
    },
    "magnitude": {
        "en": "What was the magnitude of the {nomag}?",
        "ja": "{nomag}のマグニチュードはいくつですか？",
        "zh": "{nomag}的震级是多少？",
        "fr": "Quelle était la magnitude du {nomag} ?",
        "es": "¿Qué magnitud tuvo el {nomag}?",
    },
    "depth": {
        "en": "How deep was the {quake}?",
        "ja": "{quake}の震源の深さはどれくらいですか？",
        "zh": "{quake}的震源深度是多少？",
        "fr": "Quelle était la profondeur du {quake} ?",
        "es": "¿A qué profundidad se produjo el {quake}?",
    },
    "alert": {
        "en": "What was the USGS PAGER alert level of the {quake}?",
        "ja": "{quake}のUSGS PAGER警報レベルは何でしたか？",
        "zh": "{quake}的USGS PAGER警报级别是什么？",
        "fr": "Quel était le niveau d'alerte PAGER de l'USGS pour le {quake} ?",
        "es": "¿Cuál fue el nivel de alerta PAGER del USGS para el {quake}?",
    },
    "felt": {
        "en": "How many felt reports were submitted for the {quake}?",
        "ja": "{quake}について寄せられた有感報告は何件ですか？",
        "zh": "{quake}共收到多少份有感报告？",
        "fr": "Combien de signalements de secousse ressentie ont été envoyés pour le {quake} ?",
        "es": "¿Cuántos reportes de sismo sentido se enviaron para el {quake}?",
    },
    "fatalities": {
        "en": "How many deaths were reported for the {quake}?",
        "ja": "{quake}で報告された死者は何人ですか？",
        "zh": "{quake}报告的死亡人数是多少？",
        "fr": "Combien de morts ont été signalés pour le {quake} ?",
        "es": "¿Cuántas muertes se informaron por el {quake}?",
    },
    "intensity": {
        "en": "What was the maximum estimated intensity (MMI) of the {nommi}?",
        "ja": "{nommi}の推定最大震度（MMI）はいくつですか？",
        "zh": "{nommi}的估计最大烈度（MMI）是多少？",
        "fr": "Quelle était l'intensité maximale estimée (MMI) du {nommi} ?",
        "es": "¿Cuál fue la intensidad máxima estimada (MMI) del {nommi}?",
    },
    "latitude": {
        "en": "What was the latitude of the epicentre of the {quake}?",
        "ja": "{quake}の震央の緯度は何度ですか？",
        "zh": "{quake}的震中纬度是多少？",
        "fr": "Quelle était la latitude de l'épicentre du {quake} ?",
        "es": "¿Cuál fue la latitud del epicentro del {quake}?",
    },
}

DISASTER_QUESTIONS: dict[str, dict[str, str]] = {
    "date": {
        "en": "On what date did the disaster recorded as “{name}” begin?",
        "ja": "「{name}」として記録された災害が始まったのはいつですか？",
        "zh": "记录为“{name}”的灾害始于哪一天？",
        "fr": "À quelle date a commencé la catastrophe répertoriée sous le nom « {name} » ?",
        "es": "¿En qué fecha comenzó el desastre registrado como «{name}»?",
    },
    "disaster_type": {
        "en": "What type of disaster began on {date} with {country} as the primary affected country?",
        "ja": "{date}に始まり、主な被災国が{country}である災害の種類は何ですか？",
        "zh": "{date}开始、主要受灾国家为{country}的灾害属于哪种类型？",
        "fr": "Quel type de catastrophe a commencé le {date} (principal pays touché : {country}) ?",
        "es": "¿Qué tipo de desastre comenzó el {date} (principal país afectado: {country})?",
    },
    "country": {
        "en": "Which country was primarily affected by the disaster of type “{type}” that began on {date}?",
        "ja": "{date}に始まった種類「{type}」の災害で主に被災した国はどこですか？",
        "zh": "{date}开始的类型为“{type}”的灾害主要影响了哪个国家？",
        "fr": "Quel pays a été principalement touché par la catastrophe de type « {type} » qui a commencé le {date} ?",
        "es": "¿Qué país resultó principalmente afectado por el desastre de tipo «{type}» que comenzó el {date}?",
    },
    "status": {
        "en": "What is the status of the disaster recorded as “{name}”?",
        "ja": "「{name}」として記録された災害の状況はどれですか？",
        "zh": "记录为“{name}”的灾害目前处于什么状态？",
        "fr": "Quel est le statut de la catastrophe répertoriée sous le nom « {name} » ?",
        "es": "¿Cuál es el estado del desastre registrado como «{name}»?",
    },
    "deaths": {
        "en": "How many deaths were reported for the disaster recorded as “{name}”?",
        "ja": "「{name}」として記録された災害で報告された死者は何人ですか？",
        "zh": "记录为“{name}”的灾害报告的死亡人数是多少？",
        "fr": "Combien de morts ont été signalés pour la catastrophe répertoriée sous le nom « {name} » ?",
        "es": "¿Cuántas muertes se informaron por el desastre registrado como «{name}»?",
    },
    "affected": {
        "en": "How many people were affected by the disaster recorded as “{name}”?",
        "ja": "「{name}」として記録された災害の被災者は何人でしたか？",
        "zh": "记录为“{name}”的灾害受影响人数是多少？",
        "fr": "Combien de personnes ont été touchées par la catastrophe répertoriée sous le nom « {name} » ?",
        "es": "¿Cuántas personas resultaron afectadas por el desastre registrado como «{name}»?",
    },
    "glide": {
        "en": "What is the GLIDE number of the disaster recorded as “{name}”?",
        "ja": "「{name}」として記録された災害のGLIDE番号は何ですか？",
        "zh": "记录为“{name}”的灾害的GLIDE编号是什么？",
        "fr": "Quel est le numéro GLIDE de la catastrophe répertoriée sous le nom « {name} » ?",
        "es": "¿Cuál es el número GLIDE del desastre registrado como «{name}»?",
    },
}

# Disaster types that overlap (a flash flood is a flood): never distractors for one another.
_FAMILIES: tuple[frozenset[str], ...] = (
    frozenset({"flood", "flash flood", "storm surge"}),
    frozenset({"land slide", "landslide", "mud slide"}),
    frozenset({"tropical cyclone", "extratropical cyclone", "severe local storm", "storm surge", "flood"}),
    frozenset({"fire", "wild fire"}),
    frozenset({"earthquake", "tsunami", "land slide", "landslide"}),
)
_STATUSES = ("alert", "current", "ongoing", "past")
_GLIDE = re.compile(r"^([A-Z]{2})-(\d{4})-(\d{6})-([A-Z]{3})$")


# -- earthquakes -----------------------------------------------------------------------------------------
_MMI_SCALE = (1.0, 10.0)  # Modified Mercalli intensities asked about (as rendered, one decimal)
_MMI_STEPS = (0.4, 0.6, 0.8, 1.0, 1.3, 1.6, 2.0)


def _quake_context(f: QuakeFacts, fmt: Formatter) -> dict[str, str]:
    mag = fmt.magnitude(f.magnitude)
    base = {"mag": mag, "date": fmt.date(fmt.utc(f.time_utc).date()), "place": f.place}
    out = {k: v.format(**base) for k, v in _QUAKE_SUBJECT[fmt.lang].items()}
    out["nommi"] = out["nomag"] if f.mmi is not None and fmt.intensity(f.mmi) in mag else out["quake"]
    return out


def _quake_anchors(f: QuakeFacts, fmt: Formatter) -> list[str]:
    return [f.place, f.title, fmt.date(fmt.utc(f.time_utc).date())]


def _quake_date(f: QuakeFacts) -> DateValue:
    return DateValue(Formatter.utc(f.time_utc).date())


def _depth_candidates(f: QuakeFacts, rng: Random) -> list[Value]:
    base = max(2.0, abs(f.depth_km) * 0.2)
    steps = [round(base * m, 1) for m in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0)]
    return list(near_floats(f.depth_km, rng, steps=steps, unit="km", minimum=0.0))


def _mmi(f: QuakeFacts) -> float | None:
    """The intensity to ask about: the raw estimate (rendered like the document), if it is on the scale."""
    if f.mmi is None:
        return None
    lo, hi = _MMI_SCALE
    return f.mmi if lo <= round(f.mmi, 1) <= hi else None


def _intensity_answer(f: QuakeFacts) -> Value | None:
    x = _mmi(f)
    return FloatValue(x, "mmi") if x is not None else None


def _intensity_candidates(f: QuakeFacts, rng: Random) -> list[Value]:
    x = _mmi(f)
    if x is None:
        return []
    lo, hi = _MMI_SCALE
    return list(spread_floats(round(x, 1), rng, steps=_MMI_STEPS, unit="mmi", minimum=lo, maximum=hi))


def _alert_candidates(f: QuakeFacts | DisasterFacts, rng: Random) -> list[Value]:
    own = (f.alert or "").strip().casefold()
    if own not in known_values(ALERT):
        return []
    keys = [k for k in known_values(ALERT) if k != own]
    rng.shuffle(keys)
    return [LabelValue(ALERT, k) for k in keys]


# the quake as the questions name it (`DomainTemplates.naming`; a disaster is named by its name, the default)
QUAKE_NAMING = {"en": "The {quake}", "ja": "{quake}", "zh": "{quake}", "fr": "Le {quake}", "es": "El {quake}"}

QUAKE_SPEC = DomainTemplates(
    kind="quake",
    context=_quake_context,
    anchors=_quake_anchors,
    naming=QUAKE_NAMING,
    slots={
        "time": SlotTemplate(
            slot="time", question=QUAKE_QUESTIONS["time"], answer=_quake_date,
            candidates=lambda f, rng: shifted_dates(_quake_date(f).d, rng),
        ),
        "place": SlotTemplate(
            slot="place", question=QUAKE_QUESTIONS["place"], answer=lambda f: NameValue(f.place),
            candidates=lambda f, rng: pool_names(QUAKE_PLACES, rng, exclude=(f.place,)),
        ),
        "magnitude": SlotTemplate(
            slot="magnitude", question=QUAKE_QUESTIONS["magnitude"], answer=lambda f: FloatValue(round(f.magnitude, 1), "magnitude"),
            candidates=lambda f, rng: near_floats(
                f.magnitude, rng, steps=(0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0), unit="magnitude", minimum=0.5
            ),
        ),
        "depth": SlotTemplate(
            slot="depth", question=QUAKE_QUESTIONS["depth"], answer=lambda f: FloatValue(round(f.depth_km, 1), "km"),
            candidates=_depth_candidates,
        ),
        "alert": SlotTemplate(
            slot="alert", question=QUAKE_QUESTIONS["alert"],
            answer=lambda f: LabelValue(ALERT, f.alert.strip().casefold()) if f.alert else None,
            candidates=_alert_candidates,
        ),
        "felt": SlotTemplate(
            slot="felt", question=QUAKE_QUESTIONS["felt"], answer=lambda f: IntValue(f.felt) if f.felt is not None else None,
            candidates=lambda f, rng: near_ints(f.felt or 0, rng, minimum=1),
        ),
        "fatalities": SlotTemplate(
            slot="fatalities", question=QUAKE_QUESTIONS["fatalities"],
            answer=lambda f: IntValue(f.fatalities) if f.fatalities is not None else None,
            candidates=lambda f, rng: near_ints(f.fatalities or 0, rng, minimum=0),
        ),
        "intensity": SlotTemplate(
            slot="intensity", question=QUAKE_QUESTIONS["intensity"],
            answer=_intensity_answer,
            candidates=_intensity_candidates,
        ),
        "latitude": SlotTemplate(
            slot="latitude", question=QUAKE_QUESTIONS["latitude"], answer=lambda f: CoordValue(f.latitude, "lat"),
            candidates=lambda f, rng: near_coordinates(f.latitude, rng, axis="lat", avoid=(f.longitude,)),
        ),
    },
)


# -- other disasters -------------------------------------------------------------------------------------
def _disaster_context(f: DisasterFacts, fmt: Formatter) -> dict[str, str]:
    return {
        "name": f.name,
        "country": f.country,
        "date": fmt.date(f.date),
        "type": fmt.label(DISASTER_TYPE, f.disaster_type),
    }


def _disaster_anchors(f: DisasterFacts, fmt: Formatter) -> list[str]:
    return [f.name, f.country, fmt.date(f.date)]


def _type_candidates(f: DisasterFacts, rng: Random) -> list[Value]:
    own = f.disaster_type.strip().casefold()
    related = set().union(*(fam for fam in _FAMILIES if own in fam)) | {own}
    keys = [k for k in known_values(DISASTER_TYPE) if k not in related and k != "other"]
    rng.shuffle(keys)
    return [LabelValue(DISASTER_TYPE, k) for k in keys]


def _status_answer(f: DisasterFacts) -> Value | None:
    own = (f.status or "").strip().casefold()
    # "current" and "ongoing" mean nearly the same: only ask when the answer is unambiguous
    return LabelValue(DISASTER_STATUS, own) if own in ("past", "alert") else None


def _status_candidates(f: DisasterFacts, rng: Random) -> list[Value]:
    own = (f.status or "").strip().casefold()
    keys = [k for k in _STATUSES if k != own]
    rng.shuffle(keys)
    return [LabelValue(DISASTER_STATUS, k) for k in keys]


def _glide_candidates(f: DisasterFacts, rng: Random) -> list[Value]:
    m = _GLIDE.match(f.glide or "")
    if m is None:
        return []
    kind, year, serial, iso = m.groups()
    n = int(serial)
    deltas = [d for d in range(-40, 41) if d and 0 < n + d < 1_000_000]
    rng.shuffle(deltas)
    return [NameValue(f"{kind}-{year}-{n + d:06d}-{iso}") for d in deltas]


DISASTER_SPEC = DomainTemplates(
    kind="disaster",
    context=_disaster_context,
    anchors=_disaster_anchors,
    slots={
        "date": SlotTemplate(
            slot="date", question=DISASTER_QUESTIONS["date"], answer=lambda f: DateValue(f.date),
            candidates=lambda f, rng: shifted_dates(f.date, rng),
        ),
        "disaster_type": SlotTemplate(
            slot="disaster_type", question=DISASTER_QUESTIONS["disaster_type"],
            answer=lambda f: LabelValue(DISASTER_TYPE, f.disaster_type.strip()),
            candidates=_type_candidates,
        ),
        "country": SlotTemplate(
            slot="country", question=DISASTER_QUESTIONS["country"], answer=lambda f: NameValue(f.country),
            candidates=lambda f, rng: pool_names(COUNTRIES, rng, exclude=[f.country, *f.countries]),
            truths=lambda f: [NameValue(c) for c in f.countries],
        ),
        "status": SlotTemplate(slot="status", question=DISASTER_QUESTIONS["status"], answer=_status_answer, candidates=_status_candidates),
        "deaths": SlotTemplate(
            slot="deaths", question=DISASTER_QUESTIONS["deaths"], answer=lambda f: IntValue(f.deaths) if f.deaths is not None else None,
            candidates=lambda f, rng: near_ints(f.deaths or 0, rng, minimum=0),
        ),
        "affected": SlotTemplate(
            slot="affected", question=DISASTER_QUESTIONS["affected"],
            answer=lambda f: IntValue(f.affected) if f.affected is not None else None,
            candidates=lambda f, rng: near_ints(f.affected or 0, rng, minimum=1),
        ),
        "glide": SlotTemplate(
            slot="glide", question=DISASTER_QUESTIONS["glide"], answer=lambda f: NameValue(f.glide) if f.glide else None,
            candidates=_glide_candidates,
        ),
    },
)


def _quake_judge_facts(f: QuakeFacts, found: FactList) -> None:
    found.day("time", Formatter.utc(f.time_utc).date())
    if round(f.magnitude, 1) not in found.name_numbers:
        found.add(magnitude_fact(f.magnitude))
    found.add(depth_fact(f.depth_km))
    found.num("felt", f.felt, "felt")
    found.num("fatalities", f.fatalities, "deaths")


def _disaster_judge_facts(f: DisasterFacts, found: FactList) -> None:
    found.day("date", f.date)
    found.num("deaths", f.deaths, "deaths")
    found.num("affected", f.affected, "affected")
    if f.glide:
        found.add(name_fact("glide", f.glide))
    found.person("country", f.country)


# places and countries are translated: no proper names kept verbatim
AGENT_KINDS.register(AgentKind(kind="quake", templates=QUAKE_SPEC, judge_facts=_quake_judge_facts))
AGENT_KINDS.register(AgentKind(kind="disaster", templates=DISASTER_SPEC, judge_facts=_disaster_judge_facts))
