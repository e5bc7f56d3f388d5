"""A new arXiv paper's record (PaperFacts): submission, authors, categories. The abstract stays out of the
document (English free text, mostly TeX and long): the facts asked about are the metadata's."""

from __future__ import annotations

from clkt.documents._builder import DocBuilder
from clkt.documents.formatting import Formatter
from clkt.documents.registry import DOCUMENT_KINDS, DocumentKind
from clkt.domains.science import SPEC
from clkt.domains.science.facts import PaperFacts
from clkt.facts import RenderedDocument

__all__ = ["LISTED_AUTHORS", "PAPER_TEXT", "render_paper"]

LISTED_AUTHORS = 8  # past this many authors the document names the first ones and says how many there are

PAPER_TEXT: dict[str, dict[str, str]] = {
    "en": {
        "submitted": "The paper {title} (arXiv:{id}) was submitted to arXiv on {date}.",
        "first_author": "Its first author is {name}.",
        "last_author": "Its last author is {name}.",
        "authors": "Authors: {names}.",
        "authors_more": "Authors: {names}, and others.",
        "author_count": "Number of authors: {n}.",
        "primary_category": "Its primary arXiv category is {cat}.",
        "category_count": "It is listed in {n} arXiv categories: {cats}.",
        "journal_ref": "Journal reference: {ref}.",
    },
    "ja": {
        "submitted": "論文{title}（arXiv:{id}）は{date}にarXivへ投稿された。",
        "first_author": "筆頭著者は{name}である。",
        "last_author": "最終著者は{name}である。",
        "authors": "著者：{names}。",
        "authors_more": "著者：{names}ほか。",
        "author_count": "著者数：{n}。",
        "primary_category": "arXivの主カテゴリは{cat}である。",
        "category_count": "{n}つのarXivカテゴリに登録されている：{cats}。",
        "journal_ref": "掲載誌情報：{ref}。",
    },
    "zh": {
        "submitted": "论文{title}（arXiv:{id}）于{date}提交至arXiv。",
        "first_author": "第一作者是{name}。",
        "last_author": "最后一位作者是{name}。",
        "authors": "作者：{names}。",
        "authors_more": "作者：{names}等。",
        "author_count": "作者人数：{n}。",
        "primary_category": "其arXiv主分类为{cat}。",
        "category_count": "它列于{n}个arXiv分类中：{cats}。",
        "journal_ref": "期刊信息：{ref}。",
    },
    "fr": {
        "submitted": "L'article {title} (arXiv:{id}) a été soumis à arXiv le {date}.",
        "first_author": "Son premier auteur est {name}.",
        "last_author": "Son dernier auteur est {name}.",
        "authors": "Auteurs : {names}.",
        "authors_more": "Auteurs : {names}, et d'autres.",
        "author_count": "Nombre d'auteurs : {n}.",
        "primary_category": "Sa catégorie arXiv principale est {cat}.",
        "category_count": "Il est répertorié dans {n} catégories arXiv : {cats}.",
        "journal_ref": "Référence de publication : {ref}.",
    },
    "es": {
        "submitted": "El artículo {title} (arXiv:{id}) se envió a arXiv el {date}.",
        "first_author": "Su primer autor es {name}.",
        "last_author": "Su último autor es {name}.",
        "authors": "Autores: {names}.",
        "authors_more": "Autores: {names}, y otros.",
        "author_count": "Número de autores: {n}.",
        "primary_category": "Su categoría principal de arXiv es {cat}.",
        "category_count": "Figura en {n} categorías de arXiv: {cats}.",
        "journal_ref": "Referencia de publicación: {ref}.",
    },
}


def render_paper(f: PaperFacts, fmt: Formatter) -> RenderedDocument:
    t = PAPER_TEXT[fmt.lang]
    doc = DocBuilder(lang=fmt.lang, title=f.title)
    doc.add(t["submitted"].format(title=fmt.quote(f.title), id=f.arxiv_id, date=fmt.date(fmt.utc(f.submitted).date())),
            slot="submitted")
    doc.add(t["first_author"].format(name=f.authors[0]), slot="first_author")
    if len(f.authors) > 1:
        doc.add(t["last_author"].format(name=f.authors[-1]), slot="last_author")
        if len(f.authors) > LISTED_AUTHORS:
            doc.add(t["authors_more"].format(names=", ".join(f.authors[:LISTED_AUTHORS])))
        else:
            doc.add(t["authors"].format(names=fmt.join(list(f.authors))))
    doc.add(t["author_count"].format(n=fmt.integer(len(f.authors))), slot="author_count")
    doc.add(t["primary_category"].format(cat=f.primary_category), slot="primary_category")
    if len(f.categories) > 1:
        doc.add(t["category_count"].format(n=fmt.integer(len(f.categories)), cats=fmt.join(list(f.categories))),
                slot="category_count")
    if f.journal_ref:
        doc.add(t["journal_ref"].format(ref=" ".join(f.journal_ref.split())))
    return doc.build()


DOCUMENT_KINDS.register(
    DocumentKind(kind="paper", facts=PaperFacts, domain=SPEC.name, slots=SPEC.slots, render=render_paper)
)
