"""arXiv (science): the recorded Atom feeds (both layouts) parse, and the bad inputs made from them are refused with
their reason counted or stored as the schema allows: a revised paper (v2+), a withdrawn one, an entry without
authors, HTML in a title, TeX in an abstract, dates in other formats, a hostile XML body. The poller crawls the
replay server's re-dated recordings and a local server's mutated feed, and no bad entry stalls it."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from defusedxml.ElementTree import fromstring

from clkt.context import ServiceContext
from clkt.documents import render_all
from clkt.domains.science.facts import PaperFacts
from clkt.domains.science.source import ArxivSource, parse_feed, parse_paper, plain_text
from clkt.errors import PayloadError
from clkt.replay import ReplayServer
from clkt.sources._parse import when, xml_feed
from storage.engine import Store
from storage.entities import entity_by_key, skip_counts

from .conftest import poller_for, settings_for

MakeCtx = Callable[..., ServiceContext]


def recorded(name: str) -> str:
    return resources.files("clkt.domains.science").joinpath("data", "arxiv", name).read_text(encoding="utf-8")


BIPV = recorded("api-query-all-BIPV-max3.xml")
LEGACY = recorded("api-query-au-del_maestro-legacy-2016.xml")
FIRST = re.search(r"<entry>.*?</entry>", BIPV, re.S).group(0)  # type: ignore[union-attr]


def feed_of(*entries: str) -> str:
    head = BIPV[: BIPV.index("<entry>")]
    return head + "\n".join(entries) + "\n</feed>\n"


def one(entry: str) -> Any:
    """The payload of the only entry of a feed holding `entry`."""
    refs = parse_feed(fromstring(feed_of(entry).encode()))
    assert len(refs) == 1 and refs[0].listing is not None, refs.skipped
    return refs[0].listing


def test_the_current_feed_parses_into_papers() -> None:
    refs = parse_feed(fromstring(BIPV.encode()))
    assert [r.external_id for r in refs] == ["2511.18882", "2510.00797", "2509.26396"]
    rec = parse_paper(refs[0].listing)
    f = rec.facts
    assert isinstance(f, PaperFacts) and rec.source == "arxiv" and rec.domain.value == "science"
    assert f.title == "Facade Segmentation for Solar Photovoltaic Suitability" and f.authors[0] == "Ayca Duran"
    assert len(f.authors) == 5 and f.primary_category == "cs.CV" and f.version == 1
    assert rec.occurred_at == datetime(2025, 11, 24, 8, 37, 35, tzinfo=UTC)
    docs = render_all(f)
    assert "Ayca Duran" in docs["ja"].sentences["first_author"] and "5" in docs["fr"].sentences["author_count"]


def test_the_legacy_feed_parses_and_its_revisions_are_refused() -> None:
    refs = parse_feed(fromstring(LEGACY.encode()))
    assert len(refs) == 10 and not refs.skipped
    reasons: dict[str, int] = {}
    for r in refs:
        try:
            parse_paper(r.listing)
            reasons["ok"] = reasons.get("ok", 0) + 1
        except PayloadError as e:
            reasons[e.reason] = reasons.get(e.reason, 0) + 1
    assert reasons == {"ok": 6, "new_version": 4}
    assert parse_paper(refs[1].listing).external_id == "cond-mat/0412498"  # an old-style id


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda e: e.replace("2511.18882v1</id>", "2511.18882v2</id>"), "new_version"),
    (lambda e: re.sub(r"<arxiv:comment>.*?</arxiv:comment>", "<arxiv:comment>This paper has been withdrawn by the "
                      "authors due to an error</arxiv:comment>", e, flags=re.S), "withdrawn"),
    (lambda e: re.sub(r"<author>.*?</author>", "", e, flags=re.S), "no_authors"),
    (lambda e: re.sub(r"<name>.*?</name>", "<name>  </name>", e, flags=re.S), "no_authors"),
    (lambda e: re.sub(r"<published>.*?</published>", "<published>24/11/2025</published>", e), "bad_date"),
    (lambda e: re.sub(r"<published>.*?</published>", "<published>0001-01-01T00:00:00Z</published>", e), "bad_date"),
    (lambda e: re.sub(r"<published>.*?</published>", "", e), "missing_field"),
    (lambda e: re.sub(r'<(?:arxiv:primary_)?category [^>]*/>', "", e), "missing_field"),
])
def test_entries_that_are_not_self_contained_new_papers_are_refused(edit: Callable[[str], str], reason: str) -> None:
    with pytest.raises(PayloadError) as err:
        parse_paper(one(edit(FIRST)))
    assert err.value.reason == reason


@pytest.mark.parametrize(("stamp", "expected"), [
    ("2025-11-24T08:37:35Z", datetime(2025, 11, 24, 8, 37, 35, tzinfo=UTC)),
    ("2025-11-24T10:37:35+02:00", datetime(2025, 11, 24, 8, 37, 35, tzinfo=UTC)),
    ("2025-11-24T08:37:35", datetime(2025, 11, 24, 8, 37, 35, tzinfo=UTC)),
    ("2025-11-24", datetime(2025, 11, 24, tzinfo=UTC)),
    ("Mon, 24 Nov 2025 08:37:35 GMT", datetime(2025, 11, 24, 8, 37, 35, tzinfo=UTC)),
])
def test_dates_in_other_formats_are_read(stamp: str, expected: datetime) -> None:
    assert when(stamp, "published") == expected
    rec = parse_paper(one(re.sub(r"<published>.*?</published>", f"<published>{stamp}</published>", FIRST)))
    assert rec.occurred_at == expected


def test_html_in_titles_is_dropped_and_tex_in_abstracts_kept() -> None:
    html = FIRST.replace("<title>Facade Segmentation", "<title>&lt;i&gt;Facade&lt;/i&gt; &amp;amp; <b>Segmentation</b>")
    tex = re.sub(r"<summary>.*?</summary>", r"<summary>We bound $\\mathcal{O}(n^2)$ terms\n  of \\emph{facades}.</summary>",
                 html, flags=re.S)
    f = parse_paper(one(tex)).facts
    assert isinstance(f, PaperFacts)
    assert f.title == "Facade & Segmentation for Solar Photovoltaic Suitability"
    assert f.summary == r"We bound $\mathcal{O}(n^2)$ terms of \emph{facades}."  # as written, whitespace folded
    for doc in render_all(f).values():
        assert "<" not in doc.text and "mathcal" not in doc.text  # the abstract stays out of the documents
    assert plain_text("<script>alert(1)</script>A") == "alert(1)A"  # data, never markup


def test_a_hostile_xml_body_is_refused() -> None:
    bomb = (b'<?xml version="1.0"?><!DOCTYPE f [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>'
            b"<feed><title>&b;</title></feed>")
    with pytest.raises(ValueError, match="refused"):
        xml_feed(bomb)
    with pytest.raises(PayloadError):
        parse_feed({"not": "xml"})


async def test_the_poller_crawls_the_recorded_feeds_re_dated(replay: ReplayServer, store: Store, make_ctx: MakeCtx) -> None:
    report = await poller_for(settings_for(replay), "arxiv").run_cycle(make_ctx())
    assert report.completed and report.inserted == 15 and report.skipped == {"new_version": 9}
    async with store.session() as s:
        paper = await entity_by_key(s, "arxiv", "2511.18882")
        skips = await skip_counts(s)
    assert paper is not None and paper.domain == "science" and paper.redated_from is not None
    assert paper.redated_from.year == 2025 and paper.occurred_at.year == 2026
    assert skips[("arxiv", "new_version")] == 9


async def test_bad_entries_are_skipped_or_stored_and_never_stall_the_source(store: Store, make_ctx: MakeCtx) -> None:
    entries = [
        FIRST,
        re.sub(r"<author>.*?</author>", "", FIRST.replace("2511.18882", "2511.00001"), flags=re.S),  # no authors
        FIRST.replace("2511.18882", "2511.00002").replace("<title>Facade", "<title>&lt;i&gt;Facade&lt;/i&gt;"),
        re.sub(r"<published>.*?</published>", "<published>24/11/2025</published>",
               FIRST.replace("2511.18882", "2511.00003")),
        re.sub(r"<published>.*?</published>", "<published>Mon, 24 Nov 2025 09:00:00 GMT</published>",
               FIRST.replace("2511.18882", "2511.00004")),
        "<entry><id>not an arXiv id</id></entry>",
    ]
    seen: list[str] = []

    async def query(request: web.Request) -> web.Response:
        seen.append(request.query["search_query"])
        return web.Response(body=feed_of(*entries).encode(), content_type="application/atom+xml")

    app = web.Application()
    app.router.add_get("/api/query", query)
    async with TestServer(app, host="127.0.0.1") as server:
        settings = settings_for_url(str(server.make_url("/api")))
        report = await poller_for(settings, "arxiv").run_cycle(make_ctx(now=datetime(2025, 11, 30, tzinfo=UTC)))
    assert report.completed and report.inserted == 3
    assert report.skipped == {"no_authors": 1, "bad_date": 1, "missing_field": 1}
    assert re.search(r"AND submittedDate:\[\d{12} TO \d{12}\]$", seen[0])
    async with store.session() as s:
        html = await entity_by_key(s, "arxiv", "2511.00002")
    assert html is not None and html.facts["title"] == "Facade Segmentation for Solar Photovoltaic Suitability"


def settings_for_url(url: str) -> Any:
    from clkt.config import load_settings

    base = load_settings(None, environ={})
    src = base.sources.arxiv.model_copy(update={"base_url": url, "rate_per_s": 1000.0, "lookback_days": 30})
    return base.model_copy(update={"sources": base.sources.model_copy(update={"arxiv": src})})


def test_the_real_endpoint_keeps_the_documented_pace() -> None:
    from clkt.domains.science.settings import ArxivSettings

    s = ArxivSettings()
    assert s.base_url == "https://export.arxiv.org/api" and s.concurrency == 1 and s.burst == 1
    assert 1 / s.rate_per_s >= 3.0 and s.user_agent and "mailto:" in s.user_agent
    assert ArxivSource.licence.terms.startswith("arXiv metadata") and "CC0" in ArxivSource.licence.terms
