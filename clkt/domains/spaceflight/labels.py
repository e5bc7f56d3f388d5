"""spaceflight's controlled vocabularies in the five document languages (Launch Library 2 sends them in English):
added to `clkt.documents.labels` when this module is imported (by the document, the templates and the control
maker, which read them)."""

from __future__ import annotations

from clkt.documents.labels import Vocabulary, add_labels

__all__ = ["CATEGORIES", "MISSION_TYPE", "ORBIT", "OUTCOME"]

OUTCOME, ORBIT, MISSION_TYPE = "launch_outcome", "orbit", "mission_type"  # the categories

VOCABULARY: Vocabulary = {
    OUTCOME: {
        "success": ("success", "成功", "成功", "succès", "éxito"),
        "failure": ("failure", "失敗", "失败", "échec", "fracaso"),
        "partial failure": ("partial failure", "部分的失敗", "部分失败", "échec partiel", "fracaso parcial"),
    },
    ORBIT: {
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
    MISSION_TYPE: {
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
}
CATEGORIES = tuple(VOCABULARY)

add_labels(VOCABULARY)
