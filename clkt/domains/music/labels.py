"""music's controlled vocabulary (MusicBrainz's release types) in the five document languages (the APIs
send them in English): added to `clkt.documents.labels` when this module is imported (by the modules that read them)."""

from __future__ import annotations

from clkt.documents.labels import Vocabulary, add_labels

__all__ = ["RELEASE_TYPE"]

RELEASE_TYPE = "release_type"  # the categories

VOCABULARY: Vocabulary = {
    RELEASE_TYPE: {
        "album": ("album", "アルバム", "专辑", "album", "álbum"),
        "single": ("single", "シングル", "单曲", "single", "sencillo"),
        "ep": ("EP", "EP", "迷你专辑", "EP", "EP"),
        "compilation": ("compilation", "コンピレーション", "合辑", "compilation", "recopilatorio"),
        "soundtrack": ("soundtrack", "サウンドトラック", "原声带", "bande originale", "banda sonora"),
        "live": ("live album", "ライブ・アルバム", "现场专辑", "album live", "álbum en vivo"),
        "remix": ("remix album", "リミックス・アルバム", "混音专辑", "album de remix", "álbum de remezclas"),
        "broadcast": ("broadcast", "放送音源", "广播录音", "enregistrement radiodiffusé", "grabación de emisión"),
    },
}

add_labels(VOCABULARY)
