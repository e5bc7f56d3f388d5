"""The open track's questions on a paper: first author, submission date, author count, primary category (each as the
paper's document states it; the paper named by its title)."""

from __future__ import annotations

from clkt.documents.formatting import Formatter
from clkt.domains.science.facts import PaperFacts
from clkt.openqa.kinds import OpenKind, Slot, date_slot, name_slot, number_slot

__all__ = ["OPEN"]

_QUESTIONS: dict[str, dict[str, str]] = {
    "paper.first_author": {"en": "Who is the first author of the paper {e}?", "ja": "論文{e}の筆頭著者は誰ですか？",
                           "zh": "论文{e}的第一作者是谁？", "fr": "Qui est le premier auteur de l'article {e} ?",
                           "es": "¿Quién es el primer autor del artículo {e}?"},
    "paper.date": {"en": "On what date was the paper {e} submitted to arXiv?", "ja": "論文{e}がarXivに投稿されたのはいつですか？",
                   "zh": "论文{e}是哪一天提交至arXiv的？", "fr": "À quelle date l'article {e} a-t-il été soumis à arXiv ?",
                   "es": "¿En qué fecha se envió a arXiv el artículo {e}?"},
    "paper.authors": {"en": "How many authors does the paper {e} have?", "ja": "論文{e}の著者は何人ですか？",
                      "zh": "论文{e}有多少位作者？", "fr": "Combien d'auteurs compte l'article {e} ?",
                      "es": "¿Cuántos autores tiene el artículo {e}?"},
    "paper.category": {"en": "What is the primary arXiv category of the paper {e}?", "ja": "論文{e}のarXivの主カテゴリは何ですか？",
                       "zh": "论文{e}的arXiv主分类是什么？", "fr": "Quelle est la catégorie arXiv principale de l'article {e} ?",
                       "es": "¿Cuál es la categoría principal de arXiv del artículo {e}?"},
}


def _slots(f: PaperFacts) -> dict[str, Slot | None]:
    return {"paper.first_author": name_slot(f.authors[0]),
            "paper.date": date_slot(Formatter.utc(f.submitted).date()),  # the UTC day the document states
            "paper.authors": number_slot(len(f.authors)),
            "paper.category": name_slot(f.primary_category)}


OPEN = OpenKind(facts=PaperFacts, questions=_QUESTIONS, slots=_slots, entity=lambda f: (f.title, ("", "")))
