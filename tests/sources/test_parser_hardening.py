"""Parsers on hostile data: a bad list item is skipped with its reason while its neighbours parse; DVD video
items are not tracks; implausible values are refused; the innings pattern is linear; a two-digit year is
not read as 20xx; huge text fields are capped; and (hypothesis) the list parsers never fail a page for one
item and never let anything but PayloadError out."""

from __future__ import annotations

import copy
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clkt.errors import PayloadError
from clkt.facts import FilmFacts, ReleaseFacts
from clkt.sources._parse import MAX_TEXT_CHARS, opt_str, xml_feed
from clkt.sources.deezer import parse_album, parse_releases
from clkt.sources.gdacs import parse_item, parse_rss
from clkt.sources.musicbrainz import parse_release, parse_release_search
from clkt.sources.thesportsdb import _periods, parse_event, parse_events
from clkt.sources.tmdb import parse_discover, parse_movie
from clkt.sources.usgs import parse_quake, parse_quake_list

from .test_parsers import data, tmdb_550


def test_tmdb_list_with_a_tba_date_and_an_item_without_id() -> None:
    page = {"total_pages": 1, "results": [
        {"id": 1, "title": "A", "release_date": "2026-01-02"},
        {"id": 2, "title": "B", "release_date": "TBA"},
        {"title": "no id"},
        None,
    ]}
    refs, pages = parse_discover(page)
    assert [r.external_id for r in refs] == ["1", "2"] and refs[1].occurred_at is None and pages == 1
    assert sorted(e.reason for e in refs.skipped) == ["bad_type", "missing_field"]
    d = tmdb_550() | {"release_date": "TBA"}
    with pytest.raises(PayloadError) as e:
        parse_movie(d)
    assert e.value.reason == "bad_date"


def test_gdacs_item_without_guid_does_not_fail_the_feed() -> None:
    root = ET.fromstring(data("gdacs/rss.xml").encode())
    first = root.find("channel/item")
    assert first is not None
    guid = first.find("guid")
    assert guid is not None
    first.remove(guid)
    refs = parse_rss(root)
    assert [r.external_id for r in refs] == ["EQ1456937"]
    assert [e.reason for e in refs.skipped] == ["missing_field"]


def test_gdacs_refuses_entity_expansion() -> None:
    bomb = b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><rss>&b;</rss>'
    with pytest.raises(ValueError, match="refused"):
        xml_feed(bomb)


def test_gdacs_year_0000_is_not_read_as_2000() -> None:
    item = dict(parse_rss(ET.fromstring(data("gdacs/rss.xml").encode()))[0].listing or {})
    item["fromdate"] = "Mon, 01 Jan 00 00:00:00 GMT"
    with pytest.raises(PayloadError) as e:
        parse_item(item, skip_types=frozenset())
    assert e.value.reason == "bad_date"


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        (("geometry", "coordinates", 1), 200.0, "implausible_value"),  # latitude
        (("geometry", "coordinates", 0), -181.0, "implausible_value"),  # longitude
        (("properties", "mag"), -999, "implausible_value"),
        (("properties", "mag"), 12.5, "implausible_value"),
        (("properties", "time"), -62135596800000 + 1000, "bad_date"),  # year 1
    ],
)
def test_usgs_implausible_values(path: tuple[Any, ...], value: Any, reason: str) -> None:
    q = copy.deepcopy(data("usgs/fdsnws-event-ci3144585.json"))
    node = q
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    with pytest.raises(PayloadError) as e:
        parse_quake(q)
    assert e.value.reason == reason


@pytest.mark.parametrize(("key", "value"), [("intHomeScore", "-3"), ("intAwayScore", "99999"), ("dateEvent", "0000-01-01")])
def test_sportsdb_implausible_values(key: str, value: str) -> None:
    env = copy.deepcopy(data("thesportsdb/lookupevent-441613.json"))
    env["events"][0][key] = value
    with pytest.raises(PayloadError) as e:
        parse_event(env)
    assert e.value.reason in ("implausible_value", "bad_date")


def _tracks(release: dict[str, Any]) -> int:
    facts = parse_release(release).facts
    assert isinstance(facts, ReleaseFacts)
    return len(facts.tracks)


def test_musicbrainz_video_items_are_not_tracks() -> None:
    rel = copy.deepcopy(data("musicbrainz/release-lookup-94ad3a58.json"))
    n = _tracks(rel)
    dvd = {"format": "DVD-Video", "tracks": [
        {"title": f"Video {i}", "length": 200000, "recording": {"title": f"Video {i}", "video": True}} for i in range(5)
    ]}
    rel["media"].append(dvd)
    rel["media"][0]["tracks"][0].setdefault("recording", {})["video"] = False
    assert _tracks(rel) == n


def test_innings_pattern_on_hostile_results() -> None:
    """Right answers on hostile `strResult`s; the timing (old pattern cubic, new linear) is bench/hostile.py."""
    ok = "Innings:<br>0 0 0 1<br>Innings:<br>1 0 0 0<br>"
    assert [(p.home, p.away) for p in _periods(ok)] == [(0, 1), (0, 0), (0, 0), (1, 0)]
    for hostile in ("Innings: <br>" + "1 " * 20_000, "Innings:<br>" + " " * 20_000 + "x", "Innings:" * 10_000,
                    "Innings:<br>1 2<br>Innings:<br>3 <b>4</b><br>"):
        assert _periods(hostile) == []


def test_huge_text_fields_are_capped() -> None:
    s = opt_str({"overview": "word " * 1_000_000}, "overview")
    assert s is not None and len(s) <= MAX_TEXT_CHARS + 1
    rec = parse_movie(tmdb_550() | {"overview": "x" * 2_000_000})
    assert isinstance(rec.facts, FilmFacts) and len(rec.facts.overview or "") <= MAX_TEXT_CHARS + 1


# --- fuzz: one bad item never fails a list page ------------------------------------------------------

_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=10,
)

LISTS = [
    (parse_discover, data("tmdb/discover-movie.json"), "results", lambda r: r[0]),
    (parse_release_search, data("musicbrainz/release-search-rumours.json"), "releases", lambda r: r[0]),
    (parse_releases, data("deezer/editorial-106-releases.json"), "data", lambda r: r[0]),
    (parse_events, data("thesportsdb/eventsday-2023-11-01-l4424.json"), "events", lambda r: r),
    (parse_quake_list, data("usgs/fdsnws-query-19940601-19941006-m8.json"), "features", lambda r: r),
]


@pytest.mark.parametrize(("parser", "base", "key", "refs_of"), LISTS, ids=[x[0].__name__ for x in LISTS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(junk=st.lists(_junk, min_size=1, max_size=4), where=st.integers(0, 50))
def test_fuzz_a_bad_item_never_fails_the_page(parser: Any, base: Any, key: str, refs_of: Any, junk: list[Any],
                                              where: int) -> None:
    good = refs_of(parser(base))
    page = copy.deepcopy(base)
    for j in junk:
        page[key].insert(where % (len(page[key]) + 1), j)
    refs = refs_of(parser(page))
    # every good item still parses; whatever junk did not is counted, none silently dropped
    assert [r.external_id for r in good] == [r.external_id for r in refs if r.external_id in {g.external_id for g in good}]
    assert len(refs) + len(refs.skipped) == len(page[key])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=300))
def test_fuzz_detail_parsers_with_hostile_strings(text: str) -> None:
    """Any string (surrogates, escapes, markup) in any text field: a record or a PayloadError, nothing else."""
    for parser, base, keys in (
        (parse_movie, tmdb_550(), ("title", "overview", "release_date", "status")),
        (parse_album, data("deezer/album-302127.json"), ("title", "release_date", "label")),
        (parse_event, data("thesportsdb/lookupevent-441613.json"), ("strResult", "strTimestamp", "intHomeScore")),
    ):
        for k in keys:
            payload = copy.deepcopy(base)
            target = payload["events"][0] if "events" in payload else payload
            target[k] = text
            try:
                parser(payload)
            except PayloadError as e:
                assert e.reason
