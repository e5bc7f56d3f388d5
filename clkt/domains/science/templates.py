"""Question templates, distractors and judge facts for new arXiv papers (PaperFacts)."""

from __future__ import annotations

from random import Random

from agents.template.distractors import near_ints, pool_names, shifted_dates
from agents.template.domains import AGENT_KINDS, AgentKind
from agents.template.matchers import FactList, name_fact
from agents.template.slots import DomainTemplates, SlotTemplate
from agents.template.values import DateValue, IntValue, NameValue, Value
from clkt.documents.formatting import Formatter
from clkt.domains.science.facts import PaperFacts

__all__ = ["CATEGORIES", "RESEARCHERS", "TEMPLATES"]

# arXiv category codes (https://arxiv.org/category_taxonomy): identical in every language, like names
CATEGORIES = (
    "cs.AI", "cs.CL", "cs.CV", "cs.LG", "cs.RO", "cs.SE", "cs.CR", "cs.DS", "cs.IT", "cs.NI", "cs.AR", "cs.HC",
    "stat.ML", "math.OC", "math.PR", "math.NA", "eess.SP", "eess.SY", "eess.IV", "physics.optics",
    "cond-mat.mes-hall", "cond-mat.str-el", "cond-mat.stat-mech", "quant-ph", "hep-th", "hep-ph", "gr-qc",
    "astro-ph.EP", "astro-ph.GA", "astro-ph.SR", "q-bio.NC", "econ.EM",
)
# plausible author names (common given names and surnames across the languages arXiv authors write in)
RESEARCHERS = (
    "Wei Zhang", "Yuki Tanaka", "Maria Garcia", "Thomas Müller", "Anna Rossi", "Pierre Dubois", "Li Wang",
    "Hiroshi Sato", "Elena Petrova", "James Smith", "Sofia Fernández", "Ahmed Hassan", "Priya Sharma",
    "Jun Li", "Laura Martin", "David Cohen", "Chen Liu", "Kenji Watanabe", "Lucía Romero", "Marco Bianchi",
    "Sarah Johnson", "Hyun-woo Kim", "Olga Ivanova", "Lukas Schmidt",
)

Q: dict[str, dict[str, str]] = {
    "submitted": {
        "en": "On what date was the paper {title} submitted to arXiv?",
        "ja": "論文{title}がarXivに投稿されたのはいつですか？",
        "zh": "论文{title}是在哪一天提交至arXiv的？",
        "fr": "À quelle date l'article {title} a-t-il été soumis à arXiv ?",
        "es": "¿En qué fecha se envió a arXiv el artículo {title}?",
    },
    "first_author": {
        "en": "Who is the first author of the paper {title}?",
        "ja": "論文{title}の筆頭著者は誰ですか？",
        "zh": "论文{title}的第一作者是谁？",
        "fr": "Qui est le premier auteur de l'article {title} ?",
        "es": "¿Quién es el primer autor del artículo {title}?",
    },
    "last_author": {
        "en": "Who is the last author of the paper {title}?",
        "ja": "論文{title}の最終著者は誰ですか？",
        "zh": "论文{title}的最后一位作者是谁？",
        "fr": "Qui est le dernier auteur de l'article {title} ?",
        "es": "¿Quién es el último autor del artículo {title}?",
    },
    "author_count": {
        "en": "How many authors does the paper {title} have?",
        "ja": "論文{title}の著者は何人ですか？",
        "zh": "论文{title}共有多少位作者？",
        "fr": "Combien d'auteurs l'article {title} compte-t-il ?",
        "es": "¿Cuántos autores tiene el artículo {title}?",
    },
    "primary_category": {
        "en": "What is the primary arXiv category of the paper {title}?",
        "ja": "論文{title}のarXivの主カテゴリは何ですか？",
        "zh": "论文{title}的arXiv主分类是什么？",
        "fr": "Quelle est la catégorie arXiv principale de l'article {title} ?",
        "es": "¿Cuál es la categoría principal de arXiv del artículo {title}?",
    },
    "category_count": {
        "en": "In how many arXiv categories is the paper {title} listed?",
        "ja": "論文{title}はいくつのarXivカテゴリに登録されていますか？",
        "zh": "论文{title}列于多少个arXiv分类中？",
        "fr": "Dans combien de catégories arXiv l'article {title} est-il répertorié ?",
        "es": "¿En cuántas categorías de arXiv figura el artículo {title}?",
    },
}

NAMING = {lang: "{title}" for lang in ("en", "ja", "zh", "fr", "es")}


def _context(f: PaperFacts, fmt: Formatter) -> dict[str, str]:
    return {"title": fmt.quote(f.title)}


def _anchors(f: PaperFacts, fmt: Formatter) -> list[str]:
    return [f.title, f.arxiv_id]


def _day(f: PaperFacts) -> DateValue:
    return DateValue(Formatter.utc(f.submitted).date())


def _other_authors(f: PaperFacts, rng: Random, index: int) -> list[Value]:
    own = f.authors[index]
    coauthors = [NameValue(a) for a in f.authors if a != own]
    rng.shuffle(coauthors)
    return [*coauthors, *pool_names(RESEARCHERS, rng, exclude=f.authors)]


TEMPLATES = DomainTemplates(
    kind="paper",
    context=_context,
    anchors=_anchors,
    naming=NAMING,
    slots={
        "submitted": SlotTemplate(
            slot="submitted", question=Q["submitted"], answer=_day, candidates=lambda f, rng: shifted_dates(_day(f).d, rng),
        ),
        "first_author": SlotTemplate(
            slot="first_author", question=Q["first_author"], answer=lambda f: NameValue(f.authors[0]),
            candidates=lambda f, rng: _other_authors(f, rng, 0),
        ),
        "last_author": SlotTemplate(
            slot="last_author", question=Q["last_author"],
            answer=lambda f: NameValue(f.authors[-1]) if len(f.authors) > 1 else None,
            candidates=lambda f, rng: _other_authors(f, rng, -1),
        ),
        "author_count": SlotTemplate(
            slot="author_count", question=Q["author_count"], answer=lambda f: IntValue(len(f.authors)),
            candidates=lambda f, rng: near_ints(len(f.authors), rng, minimum=1),
        ),
        "primary_category": SlotTemplate(
            slot="primary_category", question=Q["primary_category"], answer=lambda f: NameValue(f.primary_category),
            candidates=lambda f, rng: pool_names(CATEGORIES, rng, exclude=f.categories),
        ),
        "category_count": SlotTemplate(
            slot="category_count", question=Q["category_count"],
            answer=lambda f: IntValue(len(f.categories)) if len(f.categories) > 1 else None,
            candidates=lambda f, rng: near_ints(len(f.categories), rng, minimum=1),
        ),
    },
)


def _judge_facts(f: PaperFacts, found: FactList) -> None:
    found.day("submitted", Formatter.utc(f.submitted).date())
    for a in f.authors[:3]:
        found.person("author", a)
    found.person("author", f.authors[-1])
    found.add(name_fact("primary_category", f.primary_category))
    found.num("author_count", len(f.authors) if len(f.authors) > 1 else None, ("authors", "author"))


AGENT_KINDS.register(
    AgentKind(kind="paper", templates=TEMPLATES, judge_facts=_judge_facts, proper_names=lambda f: [*f.authors, f.title])
)
