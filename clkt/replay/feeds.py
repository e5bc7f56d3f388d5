"""The arXiv and Launch Library 2 surfaces of the replay server, in both modes: how their list queries are read
(the submission window of an arXiv `search_query`, LL2's `net__gte` / `net__lt` / `limit` / `offset`), the
Atom feed and the LL2 page they answer, and the generator mode's entries (`arxiv_entry`, `launch_record`) in the
APIs' own shapes, which `clkt.domains.science.source` and `clkt.domains.spaceflight.source` parse.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from aiohttp import web

from clkt import clock
from clkt.domains.science.facts import PaperFacts
from clkt.domains.spaceflight.facts import LaunchFacts
from clkt.replay.query import parse_time, query_int
from clkt.replay.stream import Generated

__all__ = [
    "ARXIV_MAX_RESULTS",
    "LL2_MAX_LIMIT",
    "arxiv_entry",
    "arxiv_feed",
    "arxiv_query",
    "launch_record",
    "ll2_page",
    "ll2_query",
]

ARXIV_MAX_RESULTS = 2000  # the API's largest slice
LL2_MAX_LIMIT = 100
_SUBMITTED = re.compile(r"submittedDate:\[\s*(\d{8,14})\s+TO\s+(\d{8,14})\s*\]", re.I)
_STATUS = {"success": (3, "Launch Successful", "Success"), "failure": (4, "Launch Failure", "Failure"),
           "partial failure": (7, "Launch was a Partial Failure", "Partial Failure")}


def _stamp(s: str) -> datetime:
    s = (s + "000000")[:14]
    try:
        return datetime.strptime(s, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        raise web.HTTPBadRequest(text=f"invalid submittedDate {s!r}") from None


def arxiv_query(request: web.Request) -> tuple[datetime | None, datetime | None, int, int]:
    """(from, to (exclusive), start, max_results) of an API query; the window is inclusive to its last minute."""
    q = request.query
    m = _SUBMITTED.search(q.get("search_query", ""))
    lo = _stamp(m.group(1)) if m else None
    hi = _stamp(m.group(2)) + timedelta(minutes=1) if m else None
    start, size = query_int(q, "start", 0), query_int(q, "max_results", 10)
    if start < 0 or not 0 <= size <= ARXIV_MAX_RESULTS:
        raise web.HTTPBadRequest(text="start and max_results must be non-negative (max_results at most 2000)")
    return lo, hi, start, size


def arxiv_feed(request: web.Request, entries: list[str], *, total: int, start: int, size: int) -> bytes:
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


def ll2_query(request: web.Request) -> tuple[datetime | None, datetime | None, int, int]:
    """(net from, net before, offset, limit) of a launch list query."""
    q = request.query
    lo, hi = parse_time(q.get("net__gte")), parse_time(q.get("net__lt"))
    offset, limit = query_int(q, "offset", 0), query_int(q, "limit", 10)
    if offset < 0 or not 1 <= limit <= LL2_MAX_LIMIT:
        raise web.HTTPBadRequest(text='{"detail": "limit must be 1-100, offset non-negative"}')
    return lo, hi, offset, limit


def ll2_page(request: web.Request, results: list[Any], *, total: int, offset: int, limit: int) -> dict[str, Any]:
    nxt = None
    if offset + limit < total:
        nxt = str(request.url.update_query({"offset": str(offset + limit), "limit": str(limit)}))
    return {"count": total, "next": nxt, "previous": None, "results": results}


# --- the generator mode's entities ------------------------------------------------------------------

def arxiv_entry(g: Generated) -> str:
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


def launch_record(g: Generated) -> dict[str, Any]:
    f = g.facts_as(LaunchFacts)
    sid, name, abbrev = _STATUS[f.outcome]
    r = g.rng("launch")
    return {
        "id": g.external_id, "name": f.name, "net": f.net.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "status": {"id": sid, "name": name, "abbrev": abbrev}, "failreason": "",
        "launch_service_provider": {"id": r.randint(1000, 9999), "name": f.provider, "type": "Commercial"},
        "rocket": {"id": r.randint(10000, 99999), "configuration": {"full_name": f.rocket, "name": f.rocket}},
        "mission": {"name": f.mission, "type": f.mission_type, "orbit": {"name": f.orbit}},
        "pad": {"name": f.pad, "location": {"name": f.location}},
    }
