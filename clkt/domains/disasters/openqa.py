"""The open track's questions on an earthquake (magnitude, date, felt reports; named by its place, as its
title would give the magnitude away) and on another disaster (deaths, people affected, date)."""

from __future__ import annotations

from clkt.domains.disasters.facts import DisasterFacts, QuakeFacts
from clkt.openqa.kinds import OpenKind, Slot, date_slot, decimal_slot, number_slot

__all__ = ["OPEN"]

_QUAKE: dict[str, dict[str, str]] = {
    "quake.magnitude": {"en": "What was the magnitude of the earthquake {e}?", "ja": "地震{e}のマグニチュードはいくつでしたか？",
                        "zh": "地震{e}的震级是多少？", "fr": "Quelle était la magnitude du séisme {e} ?",
                        "es": "¿Cuál fue la magnitud del terremoto {e}?"},
    "quake.date": {"en": "On what date did the earthquake {e} occur?", "ja": "地震{e}は何年何月何日に発生しましたか？",
                   "zh": "地震{e}发生在哪一天？", "fr": "À quelle date le séisme {e} a-t-il eu lieu ?",
                   "es": "¿En qué fecha ocurrió el terremoto {e}?"},
    "quake.felt": {"en": "How many felt reports did the earthquake {e} receive?", "ja": "地震{e}の有感報告は何件でしたか？",
                   "zh": "地震{e}收到了多少份有感报告？", "fr": "Combien de signalements de secousse le séisme {e} a-t-il reçus ?",
                   "es": "¿Cuántos reportes de percepción recibió el terremoto {e}?"},
}

_DISASTER: dict[str, dict[str, str]] = {
    "disaster.deaths": {"en": "How many people died in {e}?", "ja": "{e}で何人が亡くなりましたか？", "zh": "{e}造成多少人死亡？",
                        "fr": "Combien de personnes sont mortes dans {e} ?", "es": "¿Cuántas personas murieron en {e}?"},
    "disaster.affected": {"en": "How many people were affected by {e}?", "ja": "{e}の被災者は何人でしたか？",
                          "zh": "{e}影响了多少人？", "fr": "Combien de personnes ont été touchées par {e} ?",
                          "es": "¿Cuántas personas se vieron afectadas por {e}?"},
    "disaster.date": {"en": "On what date did {e} begin?", "ja": "{e}はいつ始まりましたか？", "zh": "{e}是哪一天开始的？",
                      "fr": "À quelle date {e} a-t-il commencé ?", "es": "¿En qué fecha comenzó {e}?"},
}


def _quake(f: QuakeFacts) -> dict[str, Slot | None]:
    return {"quake.magnitude": decimal_slot(f.magnitude),
            "quake.date": date_slot(f.time_utc.date()),
            "quake.felt": number_slot(f.felt) if f.felt else None}


def _disaster(f: DisasterFacts) -> dict[str, Slot | None]:
    return {"disaster.deaths": number_slot(f.deaths) if f.deaths is not None else None,
            "disaster.affected": number_slot(f.affected) if f.affected else None,
            "disaster.date": date_slot(f.date)}


OPEN = (
    OpenKind(facts=QuakeFacts, questions=_QUAKE, slots=_quake, entity=lambda f: (f.place, ("", ""))),
    OpenKind(facts=DisasterFacts, questions=_DISASTER, slots=_disaster, entity=lambda f: (f.name, ("", ""))),
)
