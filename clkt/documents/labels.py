"""Controlled vocabularies translated into the five document languages (values the APIs send in English).

Unknown values are kept as the API sent them (they are usually proper names). Keys are matched
case-insensitively. Order of each table = (en, ja, zh, fr, es). A domain folder adds its own categories
(`add_labels`, from its `labels.py`, imported by the modules that read them).
"""

from __future__ import annotations

__all__ = ["LABELS", "Vocabulary", "add_labels", "known_values", "label_text"]

_ORDER = ("en", "ja", "zh", "fr", "es")

# category -> value (lower case) -> its text in (en, ja, zh, fr, es)
Vocabulary = dict[str, dict[str, tuple[str, str, str, str, str]]]

_RAW: Vocabulary = {
    "alert": {
        "green": ("green", "緑", "绿色", "vert", "verde"),
        "yellow": ("yellow", "黄", "黄色", "jaune", "amarillo"),
        "orange": ("orange", "オレンジ", "橙色", "orange", "naranja"),
        "red": ("red", "赤", "红色", "rouge", "rojo"),
    },
    "genre": {
        "action": ("action", "アクション", "动作", "action", "acción"),
        "adventure": ("adventure", "アドベンチャー", "冒险", "aventure", "aventura"),
        "animation": ("animation", "アニメーション", "动画", "animation", "animación"),
        "comedy": ("comedy", "コメディ", "喜剧", "comédie", "comedia"),
        "crime": ("crime", "犯罪", "犯罪", "policier", "crimen"),
        "documentary": ("documentary", "ドキュメンタリー", "纪录", "documentaire", "documental"),
        "drama": ("drama", "ドラマ", "剧情", "drame", "drama"),
        "family": ("family", "ファミリー", "家庭", "familial", "familia"),
        "fantasy": ("fantasy", "ファンタジー", "奇幻", "fantastique", "fantasía"),
        "history": ("history", "歴史", "历史", "histoire", "historia"),
        "horror": ("horror", "ホラー", "恐怖", "horreur", "terror"),
        "music": ("music", "音楽", "音乐", "musique", "música"),
        "mystery": ("mystery", "ミステリー", "悬疑", "mystère", "misterio"),
        "romance": ("romance", "ロマンス", "爱情", "romance", "romance"),
        "science fiction": ("science fiction", "SF", "科幻", "science-fiction", "ciencia ficción"),
        "tv movie": ("TV movie", "テレビ映画", "电视电影", "téléfilm", "película de TV"),
        "thriller": ("thriller", "スリラー", "惊悚", "thriller", "suspense"),
        "war": ("war", "戦争", "战争", "guerre", "bélica"),
        "western": ("western", "西部劇", "西部", "western", "western"),
    },
    "release_type": {
        "album": ("album", "アルバム", "专辑", "album", "álbum"),
        "single": ("single", "シングル", "单曲", "single", "sencillo"),
        "ep": ("EP", "EP", "迷你专辑", "EP", "EP"),
        "compilation": ("compilation", "コンピレーション", "合辑", "compilation", "recopilatorio"),
        "soundtrack": ("soundtrack", "サウンドトラック", "原声带", "bande originale", "banda sonora"),
        "live": ("live album", "ライブ・アルバム", "现场专辑", "album live", "álbum en vivo"),
        "remix": ("remix album", "リミックス・アルバム", "混音专辑", "album de remix", "álbum de remezclas"),
        "broadcast": ("broadcast", "放送音源", "广播录音", "enregistrement radiodiffusé", "grabación de emisión"),
    },
    "disaster_type": {
        "flood": ("flood", "洪水", "洪水", "inondation", "inundación"),
        "flash flood": ("flash flood", "鉄砲水", "山洪", "crue éclair", "inundación repentina"),
        "tropical cyclone": ("tropical cyclone", "熱帯低気圧", "热带气旋", "cyclone tropical", "ciclón tropical"),
        "earthquake": ("earthquake", "地震", "地震", "séisme", "terremoto"),
        "drought": ("drought", "干ばつ", "干旱", "sécheresse", "sequía"),
        "epidemic": ("epidemic", "感染症の流行", "疫情", "épidémie", "epidemia"),
        "land slide": ("landslide", "地すべり", "滑坡", "glissement de terrain", "deslizamiento de tierra"),
        "landslide": ("landslide", "地すべり", "滑坡", "glissement de terrain", "deslizamiento de tierra"),
        "mud slide": ("mudslide", "泥流", "泥石流", "coulée de boue", "alud de lodo"),
        "volcano": ("volcanic eruption", "火山噴火", "火山喷发", "éruption volcanique", "erupción volcánica"),
        "cold wave": ("cold wave", "寒波", "寒潮", "vague de froid", "ola de frío"),
        "heat wave": ("heat wave", "熱波", "热浪", "vague de chaleur", "ola de calor"),
        "wild fire": ("wildfire", "山火事", "野火", "feu de forêt", "incendio forestal"),
        "fire": ("fire", "火災", "火灾", "incendie", "incendio"),
        "storm surge": ("storm surge", "高潮", "风暴潮", "onde de tempête", "marejada ciclónica"),
        "tsunami": ("tsunami", "津波", "海啸", "tsunami", "tsunami"),
        "severe local storm": ("severe local storm", "局地的暴風雨", "局地强风暴", "violent orage local", "tormenta local severa"),
        "extratropical cyclone": ("extratropical cyclone", "温帯低気圧", "温带气旋", "cyclone extratropical", "ciclón extratropical"),
        "snow avalanche": ("snow avalanche", "雪崩", "雪崩", "avalanche", "avalancha"),
        "insect infestation": ("insect infestation", "虫害", "虫害", "infestation d'insectes", "plaga de insectos"),
        "technological disaster": ("technological disaster", "技術災害", "技术灾难", "catastrophe technologique", "desastre tecnológico"),
        "complex emergency": ("complex emergency", "複合緊急事態", "复合型紧急情况", "urgence complexe", "emergencia compleja"),
        "other": ("other disaster", "その他の災害", "其他灾害", "autre catastrophe", "otro desastre"),
    },
    "disaster_status": {
        "alert": ("alert", "警戒中", "预警", "alerte", "alerta"),
        "current": ("current", "発生中", "进行中", "en cours", "en curso"),
        "ongoing": ("ongoing", "継続中", "持续中", "continue", "continuo"),
        "past": ("past", "終息", "已结束", "passée", "pasado"),
    },
    "sport": {
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

LABELS: dict[str, dict[str, dict[str, str]]] = {
    cat: {key: dict(zip(_ORDER, vals, strict=True)) for key, vals in table.items()} for cat, table in _RAW.items()
}


def add_labels(vocabulary: Vocabulary) -> None:
    """Adds a domain's own categories; a category that is already there is refused by name (no table is merged
    into another, so a domain cannot change another's words)."""
    taken = sorted(set(vocabulary) & set(LABELS))
    if taken:
        raise ValueError(f"label categories already defined: {taken}")
    for cat, table in vocabulary.items():
        LABELS[cat] = {key.casefold(): dict(zip(_ORDER, vals, strict=True)) for key, vals in table.items()}


def label_text(category: str, value: str, lang: str) -> str:
    """`value` of `category` in `lang`; unknown values come back unchanged."""
    entry = LABELS.get(category, {}).get(value.strip().casefold())
    if entry is None:
        return value
    return entry.get(lang, entry["en"])


def known_values(category: str) -> list[str]:
    """The canonical (lower-case key) values of a category, in table order."""
    return list(LABELS.get(category, {}))
