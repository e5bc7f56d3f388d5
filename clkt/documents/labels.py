"""Controlled vocabularies translated into the five document languages (values the APIs send in English).

Unknown values are kept as the API sent them (they are usually proper names). Keys are matched
case-insensitively. Order of each table = (en, ja, zh, fr, es).
"""

from __future__ import annotations

__all__ = ["LABELS", "known_values", "label_text"]

_ORDER = ("en", "ja", "zh", "fr", "es")

_RAW: dict[str, dict[str, tuple[str, str, str, str, str]]] = {
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
    "launch_outcome": {
        "success": ("success", "成功", "成功", "succès", "éxito"),
        "failure": ("failure", "失敗", "失败", "échec", "fracaso"),
        "partial failure": ("partial failure", "部分的失敗", "部分失败", "échec partiel", "fracaso parcial"),
    },
    "orbit": {
        "low earth orbit": ("low Earth orbit", "低軌道", "近地轨道", "orbite terrestre basse", "órbita terrestre baja"),
        "sun-synchronous orbit": ("Sun-synchronous orbit", "太陽同期軌道", "太阳同步轨道", "orbite héliosynchrone", "órbita heliosíncrona"),
        "geostationary transfer orbit": (
            "geostationary transfer orbit", "静止トランスファ軌道", "地球同步转移轨道", "orbite de transfert géostationnaire",
            "órbita de transferencia geoestacionaria",
        ),
        "geostationary orbit": ("geostationary orbit", "静止軌道", "地球静止轨道", "orbite géostationnaire", "órbita geoestacionaria"),
        "medium earth orbit": ("medium Earth orbit", "中軌道", "中地球轨道", "orbite terrestre moyenne", "órbita terrestre media"),
        "polar orbit": ("polar orbit", "極軌道", "极地轨道", "orbite polaire", "órbita polar"),
        "suborbital": ("suborbital trajectory", "弾道飛行", "亚轨道", "trajectoire suborbitale", "trayectoria suborbital"),
        "lunar orbit": ("lunar orbit", "月周回軌道", "月球轨道", "orbite lunaire", "órbita lunar"),
        "heliocentric n/a": ("heliocentric orbit", "太陽周回軌道", "日心轨道", "orbite héliocentrique", "órbita heliocéntrica"),
        "elliptical orbit": ("elliptical orbit", "楕円軌道", "椭圆轨道", "orbite elliptique", "órbita elíptica"),
    },
    "mission_type": {
        "communications": ("communications", "通信", "通信", "télécommunications", "comunicaciones"),
        "earth science": ("Earth science", "地球科学", "地球科学", "sciences de la Terre", "ciencias de la Tierra"),
        "test flight": ("test flight", "試験飛行", "试飞", "vol d'essai", "vuelo de prueba"),
        "resupply": ("resupply", "補給", "补给", "ravitaillement", "reabastecimiento"),
        "tourism": ("space tourism", "宇宙旅行", "太空旅游", "tourisme spatial", "turismo espacial"),
        "human exploration": ("human exploration", "有人探査", "载人探索", "exploration habitée", "exploración tripulada"),
        "navigation": ("navigation", "測位", "导航", "navigation", "navegación"),
        "government/top secret": ("government (classified)", "政府（機密）", "政府（机密）", "gouvernemental (classifié)", "gubernamental (clasificada)"),
        "astrophysics": ("astrophysics", "天体物理学", "天体物理", "astrophysique", "astrofísica"),
        "planetary science": ("planetary science", "惑星科学", "行星科学", "planétologie", "ciencias planetarias"),
        "technology": ("technology demonstration", "技術実証", "技术验证", "démonstration technologique", "demostración tecnológica"),
        "dedicated rideshare": ("dedicated rideshare", "相乗り専用", "专用拼车发射", "vol partagé dédié", "viaje compartido dedicado"),
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


def label_text(category: str, value: str, lang: str) -> str:
    """`value` of `category` in `lang`; unknown values come back unchanged."""
    entry = LABELS.get(category, {}).get(value.strip().casefold())
    if entry is None:
        return value
    return entry.get(lang, entry["en"])


def known_values(category: str) -> list[str]:
    """The canonical (lower-case key) values of a category, in table order."""
    return list(LABELS.get(category, {}))
