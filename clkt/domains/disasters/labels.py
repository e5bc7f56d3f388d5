"""disasters' controlled vocabularies (alert levels, GDACS's event types, a disaster's status) in the five document languages (the APIs
send them in English): added to `clkt.documents.labels` when this module is imported (by the modules that read them)."""

from __future__ import annotations

from clkt.documents.labels import Vocabulary, add_labels

__all__ = ["ALERT", "DISASTER_STATUS", "DISASTER_TYPE"]

ALERT = "alert"
DISASTER_TYPE = "disaster_type"
DISASTER_STATUS = "disaster_status"  # the categories

VOCABULARY: Vocabulary = {
    ALERT: {
        "green": ("green", "緑", "绿色", "vert", "verde"),
        "yellow": ("yellow", "黄", "黄色", "jaune", "amarillo"),
        "orange": ("orange", "オレンジ", "橙色", "orange", "naranja"),
        "red": ("red", "赤", "红色", "rouge", "rojo"),
    },
    DISASTER_TYPE: {
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
    DISASTER_STATUS: {
        "alert": ("alert", "警戒中", "预警", "alerte", "alerta"),
        "current": ("current", "発生中", "进行中", "en cours", "en curso"),
        "ongoing": ("ongoing", "継続中", "持续中", "continue", "continuo"),
        "past": ("past", "終息", "已结束", "passée", "pasado"),
    },
}

add_labels(VOCABULARY)
