"""The arXiv API as the replay server serves it, both modes: the submission window of a `search_query`, the Atom
feed it answers, the recorded entries (this folder's `data/`, byte-for-byte copies) and the generated ones."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET
from xml.sax.saxutils import escape, quoteattr

from aiohttp import web

from clkt import clock
from clkt.domains.science import SPEC
from clkt.domains.science.facts import PaperFacts
from clkt.domains.science.source import ATOM_NS
from clkt.replay.catalog import read_recorded
from clkt.replay.domains import DomainReplay, Item
from clkt.replay.query import query_int
from clkt.sources._parse import when

if TYPE_CHECKING:
    from clkt.replay.generator import GeneratorRoutes
    from clkt.replay.routes import ReplayRoutes
    from clkt.replay.stream import Generated

__all__ = ["MAX_RESULTS", "REPLAY", "entry", "feed", "query"]

MAX_RESULTS = 2000  # the API's largest slice
FILES = ("api-query-all-BIPV-max3.xml", "api-query-au-del_maestro-legacy-2016.xml",
         "api-query-id_list-1707.08567.xml", "api-query-search-testing-start0-max10.xml")
_SUBMITTED = re.compile(r"submittedDate:\[\s*(\d{8,14})\s+TO\s+(\d{8,14})\s*\]", re.I)
_ENTRY_RE = re.compile(r"<entry>.*?</entry>", re.S)
_ID = re.compile(r"abs/(.+?)v\d+$")


def _stamp(s: str) -> datetime:
    s = (s + "000000")[:14]
    try:
        return datetime.strptime(s, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        raise web.HTTPBadRequest(text=f"invalid submittedDate {s!r}") from None


def query(request: web.Request) -> tuple[datetime | None, datetime | None, int, int]:
    """(from, to (exclusive), start, max_results) of an API query; the window is inclusive to its last minute."""
    q = request.query
    m = _SUBMITTED.search(q.get("search_query", ""))
    lo = _stamp(m.group(1)) if m else None
    hi = _stamp(m.group(2)) + timedelta(minutes=1) if m else None
    start, size = query_int(q, "start", 0), query_int(q, "max_results", 10)
    if start < 0 or not 0 <= size <= MAX_RESULTS:
        raise web.HTTPBadRequest(text="start and max_results must be non-negative (max_results at most 2000)")
    return lo, hi, start, size


def feed(request: web.Request, entries: list[str], *, total: int, start: int, size: int) -> bytes:
    """The Atom feed of one query: the current (2025+) layout, namespaces on `<feed>`."""
    head = (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        '<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" xmlns:arxiv="http://arxiv.org/schemas/atom" '
        'xmlns="http://www.w3.org/2005/Atom">\n'
        f"  <id>https://arxiv.org/api/clkt-replay</id>\n  <title>arXiv Query: {escape(request.query_string)}</title>\n"
        f"  <updated>{clock.now().astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}</updated>\n"
        f"  <opensearch:itemsPerPage>{size}</opensearch:itemsPerPage>\n"
        f"  <opensearch:totalResults>{total}</opensearch:totalResults>\n"
        f"  <opensearch:startIndex>{start}</opensearch:startIndex>\n  "
    )
    return (head + "\n  ".join(entries) + "\n</feed>\n").encode("utf-8")


def entry(g: Generated) -> str:
    """A generated paper as the API's Atom `<entry>`."""
    f = g.facts_as(PaperFacts)
    at = f.submitted.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    fields = [
        f"<id>http://arxiv.org/abs/{g.external_id}v1</id>", f"<title>{escape(f.title)}</title>",
        f"<updated>{at}</updated>", f"<published>{at}</published>",
        f"<summary>We study {escape(f.title.lower())}. (clkt replay: generated, fictional)</summary>",
        *(f"<author><name>{escape(a)}</name></author>" for a in f.authors),
        f"<arxiv:primary_category term={quoteattr(f.primary_category)}/>",
        *(f'<category term={quoteattr(c)} scheme="http://arxiv.org/schemas/atom"/>' for c in f.categories),
    ]
    return "<entry>\n    " + "\n    ".join(fields) + "\n  </entry>"


def _items() -> list[Item]:
    """Every recorded Atom `<entry>` (its raw XML text), once per arXiv id, dated by its `<published>`."""
    items: dict[str, Item] = {}
    for f in FILES:
        raw = read_recorded(SPEC.package, f"arxiv/{f}")
        root = ET.fromstring(raw.encode("utf-8"))  # our own recordings, read once at start
        for block, el in zip(_ENTRY_RE.findall(raw), root.iterfind("atom:entry", ATOM_NS), strict=True):
            m = _ID.search((el.findtext("atom:id", namespaces=ATOM_NS) or "").strip())
            published = el.findtext("atom:published", namespaces=ATOM_NS)
            if m is None or published is None or m.group(1) in items:
                continue
            items[m.group(1)] = Item(id=m.group(1), occurred=when(published, "published"), listing=block)
    return list(items.values())


async def _recorded(routes: ReplayRoutes, request: web.Request) -> web.Response:
    lo, hi, start, size = query(request)
    items = routes.window(SPEC.source, lo, hi)
    chunk = items[start: start + size]
    body = feed(request, [s.listing for s in chunk], total=len(items), start=start, size=size)
    return routes._respond(request, body, "application/atom+xml", chunk, conditional=True)


async def _generated(gen: GeneratorRoutes, request: web.Request) -> web.Response:
    lo, hi, start, size = query(request)
    now = clock.now()
    total, items = gen._page(SPEC.source, lo or gen.stream.start, hi or now, offset=start, limit=size)
    body = feed(request, [entry(g) for g in items], total=total, start=start, size=size)
    return gen._respond(request, body, "application/atom+xml", conditional=True)


REPLAY = DomainReplay(
    source=SPEC.source, paths=("/arxiv/query",), items=_items, recorded=_recorded, generated=_generated,
    lag_s=(60, 1800),
    # an old-style arXiv id ("hep-th/9901001"), ours
    external_id=lambda tag, i: f"clkt{tag:03d}/{i:09d}", id_pattern=re.compile(r"^clkt(?P<tag>\d{3})/(?P<i>\d{9})$"),
)
