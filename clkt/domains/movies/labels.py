"""movies' controlled vocabulary (TMDB's genres) in the five document languages (the APIs
send them in English): added to `clkt.documents.labels` when this module is imported (by the modules that read them)."""

from __future__ import annotations

from clkt.documents.labels import Vocabulary, add_labels

__all__ = ["GENRE"]

GENRE = "genre"  # the categories

VOCABULARY: Vocabulary = {
    GENRE: {
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
}

add_labels(VOCABULARY)
