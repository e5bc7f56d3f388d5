from __future__ import annotations

from agents.template.distractors import near_ints, pool_names, shifted_dates
from agents.template.domains import AGENT_KINDS, AgentKind
from agents.template.matchers import FactList
from agents.template.slots import DomainTemplates, SlotTemplate
from agents.template.values import DateValue, IntValue, NameValue
from tests.domains.toy.facts import LighthouseFacts

QUESTIONS = {
    "lit": {"en": "On what date was {name} first lit?", "ja": "{name}が初点灯したのはいつですか？",
            "zh": "请问这座名为{name}的灯塔是在哪一天首次点亮的？", "fr": "À quelle date {name} a-t-il été allumé pour la première fois ?",
            "es": "¿En qué fecha se encendió por primera vez {name}?"},
    "height": {"en": "How many metres tall is {name}?", "ja": "{name}の高さは何メートルですか？",
               "zh": "请问这座名为{name}的灯塔一共有多少米高？", "fr": "Combien de mètres de haut mesure {name} ?",
               "es": "¿Cuántos metros de alto mide {name}?"},
    "keeper": {"en": "Who is the keeper of {name}?", "ja": "{name}の灯台守は誰ですか？", "zh": "请问这座名为{name}的灯塔的守塔人是谁？",
               "fr": "Qui est le gardien de {name} ?", "es": "¿Quién es el farero de {name}?"},
}
KEEPERS = ("Agnes Lampwick", "Bram Foghorn", "Cora Beaconsfield", "Dov Saltmarsh", "Elin Tidewater")

TEMPLATES = DomainTemplates(
    kind="lighthouse",
    context=lambda f, fmt: {"name": f.name},
    anchors=lambda f, fmt: [f.name],
    slots={
        "lit": SlotTemplate(slot="lit", question=QUESTIONS["lit"], answer=lambda f: DateValue(f.lit),
                            candidates=lambda f, rng: shifted_dates(f.lit, rng)),
        "height": SlotTemplate(slot="height", question=QUESTIONS["height"], answer=lambda f: IntValue(f.height_m),
                               candidates=lambda f, rng: near_ints(f.height_m, rng, minimum=1)),
        "keeper": SlotTemplate(slot="keeper", question=QUESTIONS["keeper"], answer=lambda f: NameValue(f.keeper),
                               candidates=lambda f, rng: pool_names(KEEPERS, rng, exclude=(f.keeper,))),
    },
)


def judge_facts(f: LighthouseFacts, found: FactList) -> None:
    found.day("lit", f.lit)
    found.num("height", f.height_m, ("metre", "meter", "tall", "メートル", "米", "mètre", "metro"))
    found.person("keeper", f.keeper)


AGENT_KINDS.register(AgentKind(kind="lighthouse", templates=TEMPLATES, judge_facts=judge_facts,
                               proper_names=lambda f: [f.keeper]))
