"""arXiv (science): new papers from the arXiv API's Atom feed (`/api/query`), by submission window.

One query per page: `search_query=(<options.query>) AND submittedDate:[<start> TO <end>]`, sorted by submission
date ascending, `start`/`max_results` paging. The feed is read with defusedxml (no entity expansion, no external
references) and each `<entry>` becomes a flat typed mapping (the payload), then `PaperFacts`. No detail call: the
list entry is the record. The API's terms ask for one request every 3 s on a single connection: the source's
settings (rate 1/3 per s, burst 1, concurrency 1) make the client's limiter keep it.

Eligibility (a self-contained new paper): its first version (`v1`: a later version is an old paper revised,
`new_version`), not withdrawn (`withdrawn`), with at least one named author (`no_authors`) and a submission date
(`bad_date`, `missing_field`). Titles lose any markup (`<i>`, entities); abstracts keep their TeX as written.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape
from html.parser import HTMLParser
from typing import Any, ClassVar
from xml.etree import ElementTree as ET

from clkt.domains.science import SPEC
from clkt.domains.science.facts import PaperFacts
from clkt.domains.science.settings import ArxivSettings
from clkt.errors import PayloadError
from clkt.facts import Domain, EntityRecord
from clkt.sources._parse import Items, each, guard, obj, opt_str, req_str, when, xml_feed
from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window, record_of_listing, skipped_of

__all__ = ["ATOM_NS", "SOURCE", "ArxivSource", "entry_to_payload", "parse_feed", "parse_paper", "plain_text"]

ATOM_NS = {
    "atom": "http://www.w3.org/2005/Atom",
    "arxiv": "http://arxiv.org/schemas/atom",
    "opensearch": "http://a9.com/-/spec/opensearch/1.1/",
}
# new ids ("2511.18882"), old ones ("cond-mat/0412498"); the replay generator's are old-style ("clkt042/000000007")
_ABS_ID = re.compile(r"abs/(?P<id>(?:[A-Za-z.\-]+\d*/)?\d{4,9}(?:\.\d{4,5})?)v(?P<v>\d{1,3})$")
_WITHDRAWN = re.compile(r"\bwithdrawn\b|\bwithdraw(?:n|al) (?:of|this)\b", re.I)
_CATEGORY = re.compile(r"^[a-z\-]+(?:\.[A-Za-z\-]+)?$")


class _Text(HTMLParser):
    """The text of a fragment that may carry markup (a title with `<i>` or `&amp;`), tags dropped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def plain_text(s: str) -> str:
    """`s` without markup, entities decoded, whitespace folded to single spaces."""
    p = _Text()
    p.feed(unescape(s) if "&lt;" in s else s)
    p.close()
    return " ".join("".join(p.parts).split())


def _text(el: ET.Element, path: str) -> str | None:
    """The text of `path` under `el`, markup children included (`<title>A <i>B</i></title>` is "A B")."""
    node = el.find(path, ATOM_NS)
    v = "".join(node.itertext()).strip() if node is not None else ""
    return v or None


def entry_to_payload(el: ET.Element) -> dict[str, Any]:
    """One Atom `<entry>` as a flat JSON-able mapping (the stored payload)."""
    out: dict[str, Any] = {}
    for key, path in (("id", "atom:id"), ("title", "atom:title"), ("summary", "atom:summary"),
                      ("published", "atom:published"), ("updated", "atom:updated"), ("comment", "arxiv:comment"),
                      ("journal_ref", "arxiv:journal_ref"), ("doi", "arxiv:doi")):
        v = _text(el, path)
        if v is not None:
            out[key] = v
    out["authors"] = [n for a in el.findall("atom:author", ATOM_NS) if (n := _text(a, "atom:name"))]
    out["categories"] = [c.get("term", "").strip() for c in el.findall("atom:category", ATOM_NS) if c.get("term")]
    primary = el.find("arxiv:primary_category", ATOM_NS)
    if primary is not None and primary.get("term"):
        out["primary_category"] = primary.get("term", "").strip()
    return out


@guard
def parse_feed(data: object) -> Items[SourceRef]:
    if not isinstance(data, ET.Element):
        raise PayloadError("bad_type", "the arXiv feed is not XML")

    def one(el: ET.Element) -> SourceRef:
        payload = entry_to_payload(el)
        m = _ABS_ID.search(payload.get("id", ""))
        if m is None:
            raise PayloadError("missing_field", f"id {payload.get('id', '')[:60]!r} is not an arXiv abstract id")
        # the entry's date is checked once, by `parse_paper` (a bad one is that record's counted skip)
        return SourceRef(external_id=m["id"], name=plain_text(payload.get("title", "")), listing=payload)

    return each(data.findall("atom:entry", ATOM_NS), "entry", one)


def _categories(p: dict[str, Any], arxiv_id: str) -> tuple[str, list[str]]:
    listed = [c for c in (p.get("categories") or []) if isinstance(c, str) and _CATEGORY.match(c)]
    primary = opt_str(p, "primary_category") or (listed[0] if listed else None)
    if primary is None or not _CATEGORY.match(primary):
        raise PayloadError("missing_field", f"{arxiv_id}: no primary category")
    return primary, [primary, *[c for c in dict.fromkeys(listed) if c != primary]]


@guard
def parse_paper(payload: object) -> EntityRecord:
    p = dict(obj(payload, "arxiv entry"))
    m = _ABS_ID.search(req_str(p, "id"))
    if m is None:
        raise PayloadError("missing_field", f"id {p['id'][:60]!r} is not an arXiv abstract id")
    arxiv_id, version = m["id"], int(m["v"])
    if version != 1:
        raise PayloadError("new_version", f"{arxiv_id}v{version}: a revision of a paper first submitted earlier")
    comment, summary = opt_str(p, "comment"), opt_str(p, "summary")
    if (comment and _WITHDRAWN.search(comment)) or (summary and summary.lower().startswith("this paper has been withdrawn")):
        raise PayloadError("withdrawn", f"{arxiv_id}: {(comment or summary or '')[:80]}")
    authors = [plain_text(a) for a in (p.get("authors") or []) if isinstance(a, str) and plain_text(a)]
    if not authors:
        raise PayloadError("no_authors", arxiv_id)
    title = plain_text(req_str(p, "title"))
    if not title:
        raise PayloadError("missing_field", f"{arxiv_id}: empty title")
    submitted = when(req_str(p, "published"), "published")
    primary, categories = _categories(p, arxiv_id)
    facts = PaperFacts(
        arxiv_id=arxiv_id, title=title, authors=list(dict.fromkeys(authors)), primary_category=primary,
        categories=categories, submitted=submitted, version=version, comment=" ".join(comment.split()) if comment else None,
        journal_ref=opt_str(p, "journal_ref"), doi=opt_str(p, "doi"), summary=" ".join(summary.split()) if summary else None,
    )
    return EntityRecord(
        source=ArxivSource.name, external_id=arxiv_id, domain=Domain(SPEC.name), name=f"{title} (arXiv:{arxiv_id})",
        occurred_at=submitted, payload=p, facts=facts,
    )


def _stamp(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y%m%d%H%M")


class ArxivSource(Source[ArxivSettings]):
    name: ClassVar[str] = "arxiv"
    domain: ClassVar[Domain] = Domain(SPEC.name)
    kind: ClassVar[str] = "paper"
    licence: ClassVar[SourceLicence] = SourceLicence(
        provider="arXiv (Cornell University), https://arxiv.org; metadata through the arXiv API",
        terms=(
            "arXiv metadata (titles, authors, abstracts, categories) is released under CC0 1.0 "
            "(https://info.arxiv.org/help/api/tou.html); the e-prints themselves keep their own licences. "
            "Thank you to arXiv for use of its open access interoperability."
        ),
    )

    async def poll(self, window: Window, page: int) -> PollPage:
        size = self.settings.options.page_size
        query = (f"({self.settings.options.query}) AND "
                 f"submittedDate:[{_stamp(window.start)} TO {_stamp(window.end)}]")
        params = {"search_query": query, "sortBy": "submittedDate", "sortOrder": "ascending",
                  "start": (page - 1) * size, "max_results": size}
        got = await self.client.get("query", params=params, decode=xml_feed, cache=True)
        if got.data is None:
            raise PayloadError("not_found", got.url)
        parsed = parse_feed(got.data)
        refs = [r.model_copy(update={"redated_from": got.original_dates.get(r.external_id)}) for r in parsed]
        served = len(parsed) + len(parsed.skipped)
        return PollPage(refs=refs, next_page=page + 1 if served >= size else None, not_modified=got.not_modified,
                        skipped=skipped_of(parsed))

    async def fetch(self, ref: SourceRef) -> EntityRecord:
        return record_of_listing(ref, parse_paper)


SOURCE = ArxivSource  # what the sources' registry reads
