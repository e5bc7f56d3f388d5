"""The open track's questions on a film: director, release date, runtime, first-billed actor."""

from __future__ import annotations

from clkt.domains.movies.facts import FilmFacts
from clkt.openqa.kinds import OpenKind, Slot, date_slot, minutes_slot, name_slot

__all__ = ["OPEN"]

_QUESTIONS: dict[str, dict[str, str]] = {
    "film.director": {"en": "Who directed the film {e}?", "ja": "映画{e}の監督は誰ですか？", "zh": "电影{e}的导演是谁？",
                      "fr": "Qui a réalisé le film {e} ?", "es": "¿Quién dirigió la película {e}?"},
    "film.release_date": {"en": "On what date was the film {e} released?", "ja": "映画{e}の公開日はいつですか？",
                          "zh": "电影{e}是哪一天上映的？", "fr": "À quelle date le film {e} est-il sorti ?",
                          "es": "¿En qué fecha se estrenó la película {e}?"},
    "film.runtime": {"en": "How many minutes long is the film {e}?", "ja": "映画{e}の上映時間は何分ですか？",
                     "zh": "电影{e}的片长是多少分钟？", "fr": "Combien de minutes dure le film {e} ?",
                     "es": "¿Cuántos minutos dura la película {e}?"},
    "film.lead": {"en": "Who is the first-billed actor of the film {e}?", "ja": "映画{e}の筆頭クレジットの俳優は誰ですか？",
                  "zh": "电影{e}中排名第一的演员是谁？", "fr": "Quel acteur est crédité en premier dans le film {e} ?",
                  "es": "¿Qué actor aparece primero en los créditos de la película {e}?"},
}


def _slots(f: FilmFacts) -> dict[str, Slot | None]:
    return {"film.director": name_slot(f.directors[0]) if f.directors else None,
            "film.release_date": date_slot(f.release_date),
            "film.runtime": minutes_slot(f.runtime_min) if f.runtime_min else None,
            "film.lead": name_slot(f.cast[0].name) if f.cast else None}


OPEN = OpenKind(facts=FilmFacts, questions=_QUESTIONS, slots=_slots, entity=lambda f: (f.title, ("", "")))
