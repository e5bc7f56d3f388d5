"""The replay server: recorded items served by route, re-dating (window, order, disclosure), date filters
consistent with the shifted dates, faults on request, control endpoints, conditional GETs."""

from __future__ import annotations

import glob
import json
import tomllib
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDict

from clkt.config import ReplaySettings
from clkt.errors import UserError
from clkt.replay import ORIGINALS_HEADER, REDATED_HEADER, ReplayServer
from clkt.replay.catalog import load_catalog
from clkt.replay.redate import plan_redate, shift_json, shift_text

END = date(2026, 3, 1)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
async def redated() -> AsyncIterator[ReplayServer]:
    async with ReplayServer(settings=ReplaySettings(enabled=True, redate=True, redate_end=END, redate_days=28)) as s:
        yield s


@pytest.fixture
async def original() -> AsyncIterator[ReplayServer]:
    async with ReplayServer(settings=ReplaySettings(enabled=True, redate=False)) as s:
        yield s


async def get(http: aiohttp.ClientSession, url: str, **kw: Any) -> tuple[int, Mapping[str, str], bytes]:
    async with http.get(url, **kw) as r:  # aiohttp's keywords, passed through
        return r.status, CIMultiDict(r.headers), await r.read()


def test_plan_keeps_order_and_window() -> None:
    for items in load_catalog().items.values():
        plan = plan_redate({i.id: i.occurred for i in items}, end=END, days=28)
        moved = sorted(items, key=lambda i: i.occurred)
        new = [(i.occurred + plan.delta(i.id)).date() for i in moved]
        assert new == sorted(new)  # relative order kept
        assert all(date(2026, 2, 1) <= d < END for d in new)


def test_shift_rewrites_every_date_form() -> None:
    from datetime import timedelta

    d = timedelta(days=10)
    out = shift_json({"date": "2011-09", "release_date": "2011-09-09", "time": 1299822384120, "strSeason": "2014-2015",
                      "note": "MLB 2023-11-01 game", "ts": "2023-11-01T00:03:00"}, d)
    assert out == {"date": "2011-09", "release_date": "2011-09-19", "time": 1299822384120 + 864_000_000,
                   "strSeason": "2014-2015", "note": "MLB 2023-11-11 game", "ts": "2023-11-11T00:03:00"}
    assert shift_text("Tue, 10 Dec 2024 18:09:57 GMT", d) == "Fri, 20 Dec 2024 18:09:57 GMT"


async def test_redated_items_are_disclosed_and_filtered_by_shifted_dates(
    redated: ReplayServer, http: aiohttp.ClientSession
) -> None:
    status, headers, body = await get(http, redated.url + "/tmdb/movie/550?append_to_response=credits,release_dates")
    movie = json.loads(body)
    assert status == 200 and headers[REDATED_HEADER] == "true"
    assert json.loads(headers[ORIGINALS_HEADER]) == {"550": "1999-10-15T00:00:00+00:00"}
    assert date.fromisoformat(movie["release_date"]) >= date(2026, 2, 1)
    assert movie["credits"]["cast"][0]["name"] == "Edward Norton" and movie["release_dates"]["results"]
    day = movie["release_date"]
    _, _, body = await get(http, redated.url + f"/tmdb/discover/movie?primary_release_date.gte={day}&primary_release_date.lte={day}")
    assert 550 in [r["id"] for r in json.loads(body)["results"]]
    _, _, body = await get(http, redated.url + "/tmdb/discover/movie?primary_release_date.lte=2026-01-31")
    assert json.loads(body)["results"] == []  # nothing is left at its recorded date
    _, _, body = await get(http, redated.url + "/gdacs/xml/rss.xml")
    assert b"2024" not in body.split(b"<item>", 1)[1].rsplit(b"</item>", 1)[0] and b"<gdacs:year>2026</gdacs:year>" in body


async def test_original_dates_without_redating(original: ReplayServer, http: aiohttp.ClientSession) -> None:
    status, headers, body = await get(http, original.url + "/usgs/query?format=geojson&starttime=2011-03-11&endtime=2011-03-12&minmagnitude=8.8")
    assert status == 200 and REDATED_HEADER not in headers
    feats = json.loads(body)["features"]
    assert [f["id"] for f in feats] == ["official20110311054624120_30"]
    _, _, body = await get(http, original.url + "/thesportsdb/123/eventsday.php?d=2023-11-01&l=4424")
    assert json.loads(body)["events"][0]["idEvent"] == "1917406"
    _, _, body = await get(http, original.url + "/musicbrainz/release?query=date:[2011-09-01 TO 2011-09-30]&fmt=json")
    assert [r["id"] for r in json.loads(body)["releases"]] == ["94ad3a58-a1cc-46a3-acf4-9cb6c1d6f032"]


@pytest.mark.parametrize(
    ("path", "status", "marker"),
    [
        ("/tmdb/movie/1", 404, b"could not be found"),
        ("/musicbrainz/release/00000000-0000-0000-0000-000000000000", 404, b"Not Found"),
        ("/deezer/album/1", 200, b'"code": 800'),
        ("/thesportsdb/123/lookupevent.php?id=1", 200, b'"events": null'),
        ("/usgs/query?eventid=nope", 404, b"Error 404"),
    ],
)
async def test_unrecorded_ids_get_each_apis_not_found(
    original: ReplayServer, http: aiohttp.ClientSession, path: str, status: int, marker: bytes
) -> None:
    got_status, _, body = await get(http, original.url + path)
    assert got_status == status and marker in body


async def test_faults_by_query_and_by_control(original: ReplayServer, http: aiohttp.ClientSession) -> None:
    url = original.url + "/deezer/album/302127"
    status, headers, _ = await get(http, url + "?_fault=429&_retry_after=7")
    assert status == 429 and headers["Retry-After"] == "7"
    assert (await get(http, url + "?_fault=503"))[0] == 503
    status, headers, body = await get(http, url + "?_fault=html")
    assert status == 502 and "text/html" in headers["Content-Type"] and b"<html>" in body
    status, _, body = await get(http, url + "?_fault=truncated")
    with pytest.raises(ValueError):
        json.loads(body)
    status, _, body = await get(http, url + "?_fault=drift")
    assert status == 200 and json.loads(body) != json.loads((await get(http, url))[2])
    async with http.post(original.url + "/_control/faults", json={"rules": [{"kind": "500", "route": "/deezer/*", "limit": 1}]}) as r:
        assert r.status == 200
    assert (await get(http, url))[0] == 500
    assert (await get(http, url))[0] == 200  # the rule's limit is spent
    async with http.post(original.url + "/_control/faults", json={"rules": [{"kind": "nope"}]}) as r:
        assert r.status == 400
    async with http.get(original.url + "/_control/stats") as r:
        st = await r.json()
    assert st["routes"]["/deezer/album/{id}"]["statuses"]["500"] == 1


async def test_conditional_requests(original: ReplayServer, http: aiohttp.ClientSession) -> None:
    url = original.url + "/gdacs/xml/rss.xml"
    status, headers, _ = await get(http, url)
    assert status == 200 and headers["ETag"] and headers["Last-Modified"]
    assert (await get(http, url, headers={"If-None-Match": headers["ETag"]}))[0] == 304
    assert (await get(http, url, headers={"If-Modified-Since": headers["Last-Modified"]}))[0] == 304
    assert (await get(http, url, headers={"If-None-Match": '"other"'}))[0] == 200


async def test_lifecycle() -> None:
    server = ReplayServer()
    await server.start()
    assert server.port > 0 and server.base_url("tmdb").endswith(f":{server.port}/tmdb")
    await server.close()
    with pytest.raises(UserError):
        await server.start()
    with pytest.raises(UserError):
        ReplayServer(settings=ReplaySettings(faults={"rules": [{"kind": "bogus"}]}))


def test_catalog_is_package_data_only() -> None:
    cat = load_catalog()
    assert {k: len(v) for k, v in cat.items.items()} == {
        "tmdb": 20, "musicbrainz": 2, "deezer": 11, "thesportsdb": 2, "usgs": 14, "gdacs": 2, "arxiv": 24,
        "launchlibrary": 25}
    assert all(i.occurred.tzinfo is UTC or i.occurred.utcoffset() is not None for v in cat.items.values() for i in v)
    assert datetime(2027, 1, 1, tzinfo=UTC) > max(i.occurred for v in cat.items.values() for i in v)


async def test_enforced_limits_answer_429(http: aiohttp.ClientSession) -> None:
    async with ReplayServer(limits={"usgs": (1.0, 1)}) as server:
        url = server.url + "/usgs/query?eventid=usp0006dzc&format=geojson"
        statuses = [(await get(http, url))[0] for _ in range(4)]
        assert statuses[:2] == [200, 200] and 429 in statuses[2:]  # burst 1 + 1 request of slack
        status, headers, _ = await get(http, url)
        assert status == 429 and int(headers["Retry-After"]) >= 1
        assert (await get(http, server.url + "/deezer/album/302127"))[0] == 200  # other sources unaffected


def test_every_recording_ships_in_the_wheel() -> None:
    """Each domain folder's recordings match pyproject's package data (setuptools globs them recursively, from the
    package's folder), so an installed wheel serves what the checkout does."""
    root = Path(__file__).resolve().parents[2]
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["clkt"]
    shipped = {Path(p) for g in globs for p in glob.glob(str(root / "clkt" / g), recursive=True) if Path(p).is_file()}
    recorded = {p for p in (root / "clkt" / "domains").glob("*/data/**/*") if p.is_file()}
    assert len(recorded) >= 2 * len(load_catalog().items)  # a README and a recording per source at least
    assert recorded - shipped == set()
    assert not (root / "clkt" / "replay" / "data").exists()  # the replay package holds no domain's recordings
