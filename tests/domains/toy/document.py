from __future__ import annotations

from clkt.documents._builder import DocBuilder
from clkt.documents.formatting import Formatter
from clkt.documents.registry import DOCUMENT_KINDS, DocumentKind
from clkt.facts import RenderedDocument
from tests.domains.toy import SPEC
from tests.domains.toy.facts import LighthouseFacts

TEXT = {
    "en": ("{name} was first lit on {date}.", "It is {n} metres tall.", "Its keeper is {who}."),
    "ja": ("{name}は{date}に初点灯した。", "高さは{n}メートルである。", "灯台守は{who}である。"),
    "zh": ("{name}于{date}首次点亮。", "高{n}米。", "守塔人是{who}。"),
    "fr": ("{name} a été allumé pour la première fois le {date}.", "Il mesure {n} mètres de haut.",
           "Son gardien est {who}."),
    "es": ("{name} se encendió por primera vez el {date}.", "Mide {n} metros de alto.", "Su farero es {who}."),
}


def render(f: LighthouseFacts, fmt: Formatter) -> RenderedDocument:
    lit, height, keeper = TEXT[fmt.lang]
    doc = DocBuilder(lang=fmt.lang, title=f.name)
    doc.add(lit.format(name=f.name, date=fmt.date(f.lit)), slot="lit")
    doc.add(height.format(n=fmt.integer(f.height_m)), slot="height")
    doc.add(keeper.format(who=f.keeper), slot="keeper")
    return doc.build()


DOCUMENT_KINDS.register(DocumentKind(kind="lighthouse", facts=LighthouseFacts, domain=SPEC.name, slots=SPEC.slots,
                                     render=render))
