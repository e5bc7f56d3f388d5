"""The open track's questions on a release: artist, label, release date, track count."""

from __future__ import annotations

from clkt.domains.music.facts import ReleaseFacts
from clkt.openqa.kinds import OpenKind, Slot, date_slot, name_slot, number_slot

__all__ = ["OPEN"]

_QUESTIONS: dict[str, dict[str, str]] = {
    "release.artist": {"en": "Which artist released {e}?", "ja": "{e}をリリースしたアーティストは誰ですか？",
                       "zh": "{e}是哪位艺人发行的？", "fr": "Quel artiste a sorti {e} ?", "es": "¿Qué artista publicó {e}?"},
    "release.label": {"en": "On which label was {e} released?", "ja": "{e}はどのレーベルからリリースされましたか？",
                      "zh": "{e}由哪家唱片公司发行？", "fr": "Sur quel label {e} est-il sorti ?",
                      "es": "¿Con qué sello discográfico se publicó {e}?"},
    "release.date": {"en": "On what date was {e} released?", "ja": "{e}のリリース日はいつですか？", "zh": "{e}是哪一天发行的？",
                     "fr": "À quelle date {e} est-il sorti ?", "es": "¿En qué fecha se publicó {e}?"},
    "release.tracks": {"en": "How many tracks does {e} have?", "ja": "{e}には何曲収録されていますか？", "zh": "{e}收录了多少首曲目？",
                       "fr": "Combien de titres compte {e} ?", "es": "¿Cuántas pistas tiene {e}?"},
}


def _slots(f: ReleaseFacts) -> dict[str, Slot | None]:
    return {"release.artist": name_slot(f.artist_credit), "release.label": name_slot(f.label) if f.label else None,
            "release.date": date_slot(f.release_date),
            "release.tracks": number_slot(len(f.tracks)) if f.tracks else None}


OPEN = OpenKind(facts=ReleaseFacts, questions=_QUESTIONS, slots=_slots, entity=lambda f: (f.title, ("", "")))
