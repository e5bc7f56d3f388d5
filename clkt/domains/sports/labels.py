"""sports' controlled vocabulary (TheSportsDB's sports) in the five document languages (the APIs
send them in English): added to `clkt.documents.labels` when this module is imported (by the modules that read them)."""

from __future__ import annotations

from clkt.documents.labels import Vocabulary, add_labels

__all__ = ["SPORT"]

SPORT = "sport"  # the categories

VOCABULARY: Vocabulary = {
    SPORT: {
        "soccer": ("football", "サッカー", "足球", "football", "fútbol"),
        "basketball": ("basketball", "バスケットボール", "篮球", "basket-ball", "baloncesto"),
        "ice hockey": ("ice hockey", "アイスホッケー", "冰球", "hockey sur glace", "hockey sobre hielo"),
        "american football": ("American football", "アメリカンフットボール", "美式橄榄球", "football américain", "fútbol americano"),
        "baseball": ("baseball", "野球", "棒球", "baseball", "béisbol"),
        "rugby": ("rugby", "ラグビー", "橄榄球", "rugby", "rugby"),
        "cricket": ("cricket", "クリケット", "板球", "cricket", "críquet"),
        "handball": ("handball", "ハンドボール", "手球", "handball", "balonmano"),
        "volleyball": ("volleyball", "バレーボール", "排球", "volley-ball", "voleibol"),
        "australian football": ("Australian football", "オーストラリアンフットボール", "澳式足球", "football australien", "fútbol australiano"),
    },
}

add_labels(VOCABULARY)
