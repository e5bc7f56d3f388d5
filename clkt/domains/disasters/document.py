"""Earthquake report (USGS) and disaster report (ReliefWeb / GDACS)."""

from __future__ import annotations

from clkt.documents._builder import DocBuilder
from clkt.documents.formatting import Formatter
from clkt.documents.registry import DOCUMENT_KINDS, DocumentKind
from clkt.domains.disasters import SPEC
from clkt.domains.disasters.facts import DisasterFacts, QuakeFacts
from clkt.domains.disasters.labels import ALERT, DISASTER_STATUS, DISASTER_TYPE
from clkt.facts import RenderedDocument

__all__ = ["DISASTER_TEXT", "QUAKE_TEXT", "mag_type_text", "render_disaster", "render_quake"]

QUAKE_TEXT: dict[str, dict[str, str]] = {
    "en": {
        "time": "The earthquake occurred on {time}.",
        "place": "The epicentre location was given as {place}.",
        "magnitude": "It had a magnitude of {mag}{mtype}.",
        "depth": "Its depth was {depth}.",
        "coords": "Coordinates: {lat}, {lon}.",
        "alert": "The USGS PAGER alert level was {alert}.",
        "tsunami_yes": "A tsunami flag was issued for this event.",
        "tsunami_no": "No tsunami flag was issued for this event.",
        "felt": "Number of felt reports submitted: {n}.",
        "fatalities": "Number of deaths reported: {n}.",
        "intensity": "The maximum estimated intensity (MMI) was {mmi}.",
    },
    "ja": {
        "time": "地震は{time}に発生した。",
        "place": "震央の位置は{place}とされた。",
        "magnitude": "マグニチュードは{mag}{mtype}であった。",
        "depth": "震源の深さは{depth}であった。",
        "coords": "座標：{lat}、{lon}。",
        "alert": "USGSのPAGER警報レベルは{alert}であった。",
        "tsunami_yes": "この地震には津波フラグが出された。",
        "tsunami_no": "この地震には津波フラグは出されなかった。",
        "felt": "有感報告は{n}件寄せられた。",
        "fatalities": "死者は{n}人と報告された。",
        "intensity": "推定最大震度（MMI）は{mmi}であった。",
    },
    "zh": {
        "time": "地震发生于{time}。",
        "place": "震中位置记录为{place}。",
        "magnitude": "震级为{mag}{mtype}。",
        "depth": "震源深度为{depth}。",
        "coords": "坐标：{lat}，{lon}。",
        "alert": "USGS PAGER警报级别为{alert}。",
        "tsunami_yes": "此次地震发布了海啸标志。",
        "tsunami_no": "此次地震未发布海啸标志。",
        "felt": "共收到{n}份有感报告。",
        "fatalities": "报告死亡人数为{n}人。",
        "intensity": "估计最大烈度（MMI）为{mmi}。",
    },
    "fr": {
        "time": "Le séisme s'est produit le {time}.",
        "place": "L'épicentre a été localisé comme suit : {place}.",
        "magnitude": "Sa magnitude était de {mag}{mtype}.",
        "depth": "Sa profondeur était de {depth}.",
        "coords": "Coordonnées : {lat}, {lon}.",
        "alert": "Le niveau d'alerte PAGER de l'USGS était {alert}.",
        "tsunami_yes": "Un indicateur de tsunami a été émis pour cet événement.",
        "tsunami_no": "Aucun indicateur de tsunami n'a été émis pour cet événement.",
        "felt": "Nombre de signalements de secousse ressentie : {n}.",
        "fatalities": "Nombre de morts signalés : {n}.",
        "intensity": "L'intensité maximale estimée (MMI) était de {mmi}.",
    },
    "es": {
        "time": "El terremoto ocurrió el {time}.",
        "place": "La ubicación del epicentro se indicó como {place}.",
        "magnitude": "Tuvo una magnitud de {mag}{mtype}.",
        "depth": "Su profundidad fue de {depth}.",
        "coords": "Coordenadas: {lat}, {lon}.",
        "alert": "El nivel de alerta PAGER del USGS fue {alert}.",
        "tsunami_yes": "Se emitió un indicador de tsunami para este evento.",
        "tsunami_no": "No se emitió ningún indicador de tsunami para este evento.",
        "felt": "Número de reportes de sismo sentido: {n}.",
        "fatalities": "Número de muertes informadas: {n}.",
        "intensity": "La intensidad máxima estimada (MMI) fue de {mmi}.",
    },
}

DISASTER_TEXT: dict[str, dict[str, str]] = {
    "en": {
        "date": "The disaster began on {date}.",
        "disaster_type": "The disaster type is {type}.",
        "country": "The primary affected country is {country}.",
        "countries": "Countries affected: {countries}.",
        "status": "Its status is {status}.",
        "alert": "The alert level was {alert}.",
        "deaths": "Number of deaths reported: {n}.",
        "affected": "Number of people affected: {n}.",
        "glide": "Its GLIDE number is {glide}.",
        "summary": "Summary: {summary}",
    },
    "ja": {
        "date": "災害は{date}に始まった。",
        "disaster_type": "災害の種類は{type}である。",
        "country": "主な被災国は{country}である。",
        "countries": "被災国：{countries}。",
        "status": "状況は{status}である。",
        "alert": "警報レベルは{alert}であった。",
        "deaths": "死者は{n}人と報告された。",
        "affected": "被災者は{n}人であった。",
        "glide": "GLIDE番号は{glide}である。",
    },
    "zh": {
        "date": "灾害始于{date}。",
        "disaster_type": "灾害类型为{type}。",
        "country": "主要受灾国家为{country}。",
        "countries": "受灾国家：{countries}。",
        "status": "灾害状态为{status}。",
        "alert": "警报级别为{alert}。",
        "deaths": "报告死亡人数为{n}人。",
        "affected": "受影响人数为{n}人。",
        "glide": "GLIDE编号为{glide}。",
    },
    "fr": {
        "date": "La catastrophe a commencé le {date}.",
        "disaster_type": "Le type de catastrophe est : {type}.",
        "country": "Le principal pays touché est {country}.",
        "countries": "Pays touchés : {countries}.",
        "status": "Son statut est : {status}.",
        "alert": "Le niveau d'alerte était {alert}.",
        "deaths": "Nombre de morts signalés : {n}.",
        "affected": "Nombre de personnes touchées : {n}.",
        "glide": "Son numéro GLIDE est {glide}.",
    },
    "es": {
        "date": "El desastre comenzó el {date}.",
        "disaster_type": "El tipo de desastre es: {type}.",
        "country": "El principal país afectado es {country}.",
        "countries": "Países afectados: {countries}.",
        "status": "Su estado es: {status}.",
        "alert": "El nivel de alerta fue {alert}.",
        "deaths": "Número de muertes informadas: {n}.",
        "affected": "Número de personas afectadas: {n}.",
        "glide": "Su número GLIDE es {glide}.",
    },
}


def mag_type_text(mag_type: str | None) -> str:
    """USGS magnitude type as written after the value: "mw" -> "Mw", "ml" -> "ML"."""
    if not mag_type:
        return ""
    m = mag_type.strip()
    return (m[:1].upper() + m[1:]) if len(m) > 1 else m.upper()


def render_quake(f: QuakeFacts, fmt: Formatter) -> RenderedDocument:
    t = QUAKE_TEXT[fmt.lang]
    doc = DocBuilder(lang=fmt.lang, title=f.title)
    doc.add(t["time"].format(time=fmt.datetime_utc(f.time_utc)), slot="time")
    doc.add(t["place"].format(place=f.place), slot="place")
    mtype = mag_type_text(f.mag_type)
    doc.add(t["magnitude"].format(mag=fmt.magnitude(f.magnitude), mtype=f" ({mtype})" if mtype else ""), slot="magnitude")
    doc.add(t["depth"].format(depth=fmt.km(f.depth_km)), slot="depth")
    # the coordinates sentence states the latitude (the slot asked about); the longitude rides along
    doc.add(t["coords"].format(lat=fmt.latitude(f.latitude), lon=fmt.longitude(f.longitude)), slot="latitude")
    if f.alert:
        doc.add(t["alert"].format(alert=fmt.label(ALERT, f.alert)), slot="alert")
    doc.add(t["tsunami_yes"] if f.tsunami else t["tsunami_no"], slot="tsunami")
    if f.felt is not None:
        doc.add(t["felt"].format(n=fmt.integer(f.felt)), slot="felt")
    if f.fatalities is not None:
        doc.add(t["fatalities"].format(n=fmt.integer(f.fatalities)), slot="fatalities")
    if f.mmi is not None:
        doc.add(t["intensity"].format(mmi=fmt.intensity(f.mmi)), slot="intensity")
    return doc.build()


def render_disaster(f: DisasterFacts, fmt: Formatter) -> RenderedDocument:
    t = DISASTER_TEXT[fmt.lang]
    doc = DocBuilder(lang=fmt.lang, title=f.name)
    doc.add(t["date"].format(date=fmt.date(f.date)), slot="date")
    doc.add(t["disaster_type"].format(type=fmt.label(DISASTER_TYPE, f.disaster_type)), slot="disaster_type")
    doc.add(t["country"].format(country=f.country), slot="country")
    others = [c for c in f.countries if c != f.country]
    if others:
        doc.add(t["countries"].format(countries=fmt.join([f.country, *others])))
    if f.status:
        doc.add(t["status"].format(status=fmt.label(DISASTER_STATUS, f.status)), slot="status")
    if f.alert:
        doc.add(t["alert"].format(alert=fmt.label(ALERT, f.alert)))
    if f.deaths is not None:
        doc.add(t["deaths"].format(n=fmt.integer(f.deaths)), slot="deaths")
    if f.affected is not None:
        doc.add(t["affected"].format(n=fmt.integer(f.affected)), slot="affected")
    if f.glide:
        doc.add(t["glide"].format(glide=f.glide), slot="glide")
    if fmt.lang == "en" and f.summary:
        doc.paragraph()
        doc.add(t["summary"].format(summary=" ".join(f.summary.split())))
    return doc.build()


DOCUMENT_KINDS.register(
    DocumentKind(kind="quake", facts=QuakeFacts, domain=SPEC.name, slots=SPEC.slots_of(QuakeFacts), render=render_quake)
)
DOCUMENT_KINDS.register(
    DocumentKind(kind="disaster", facts=DisasterFacts, domain=SPEC.name, slots=SPEC.slots_of(DisasterFacts),
                 render=render_disaster)
)
