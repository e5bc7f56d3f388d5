"""The open track's questions on a launch: its provider, its rocket, its date (UTC) and its pad, where the launch
states them (named by its Launch Library name; a question whose answer is in that name, as the rocket often is, is
dropped by the generator)."""

from __future__ import annotations

from clkt.documents.formatting import Formatter
from clkt.domains.spaceflight.facts import LaunchFacts
from clkt.openqa.kinds import OpenKind, Slot, date_slot, name_slot

__all__ = ["OPEN"]

_QUESTIONS: dict[str, dict[str, str]] = {
    "launch.provider": {"en": "Which provider carried out the launch {e}?", "ja": "打ち上げ{e}の打ち上げ事業者はどこですか？",
                        "zh": "发射{e}的发射服务商是谁？", "fr": "Quel fournisseur a assuré le lancement {e} ?",
                        "es": "¿Qué proveedor realizó el lanzamiento {e}?"},
    "launch.rocket": {"en": "Which rocket flew the launch {e}?", "ja": "打ち上げ{e}で使われたロケットは何ですか？",
                      "zh": "发射{e}使用的运载火箭是什么？", "fr": "Quel lanceur a effectué le lancement {e} ?",
                      "es": "¿Qué vehículo de lanzamiento se usó en el lanzamiento {e}?"},
    "launch.date": {"en": "On what date (UTC) did the launch {e} take place?", "ja": "打ち上げ{e}は何年何月何日（UTC）に行われましたか？",
                    "zh": "发射{e}是在哪一天（UTC）进行的？", "fr": "À quelle date (UTC) le lancement {e} a-t-il eu lieu ?",
                    "es": "¿En qué fecha (UTC) tuvo lugar el lanzamiento {e}?"},
    "launch.pad": {"en": "From which pad did the launch {e} lift off?", "ja": "打ち上げ{e}はどの発射台から行われましたか？",
                   "zh": "发射{e}是从哪个发射台升空的？", "fr": "De quel pas de tir le lancement {e} a-t-il décollé ?",
                   "es": "¿Desde qué plataforma despegó el lanzamiento {e}?"},
}


def _slots(f: LaunchFacts) -> dict[str, Slot | None]:
    return {"launch.provider": name_slot(f.provider) if f.provider else None,
            "launch.rocket": name_slot(f.rocket) if f.rocket else None,
            "launch.date": date_slot(Formatter.utc(f.net).date()),  # the UTC day the document states
            "launch.pad": name_slot(f.pad) if f.pad else None}


OPEN = OpenKind(facts=LaunchFacts, questions=_QUESTIONS, slots=_slots, entity=lambda f: (f.name, ("", "")))
