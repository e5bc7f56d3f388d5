"""Every recorded payload parses into typed facts and renders a document stating its key facts; the
eligibility rules skip what they must, with a reason; and no parser lets anything but PayloadError out."""

from __future__ import annotations

import copy
import json
from datetime import UTC, date, datetime
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clkt.documents import render_document
from clkt.domains import DOMAINS
from clkt.errors import PayloadError, SourceBlocked
from clkt.facts import FilmFacts, MatchFacts, QuakeFacts, ReleaseFacts
from clkt.replay.catalog import read_recorded
from clkt.sources.deezer import parse_album, parse_releases, raise_for_error
from clkt.sources.gdacs import parse_item, parse_rss
from clkt.sources.musicbrainz import parse_release, parse_release_search
from clkt.sources.thesportsdb import parse_event, parse_events
from clkt.sources.tmdb import parse_discover, parse_movie
from clkt.sources.usgs import parse_quake, parse_quake_list


def data(path: str) -> Any:
    """A recorded response, `<source>/<file>`, from the folder of the domain whose source it is."""
    source = path.split("/", 1)[0]
    package = next(spec.package for spec in DOMAINS.values() if source in {name for name, _ in spec.sources})
    raw = read_recorded(package, path)
    return raw if path.endswith(".xml") else json.loads(raw)


def tmdb_550() -> dict[str, Any]:
    d = data("tmdb/movie-details-550.json")
    d["credits"] = {k: v for k, v in data("tmdb/movie-credits-550.json").items() if k != "id"}
    d["release_dates"] = {"results": data("tmdb/movie-release-dates-550.json")["results"]}
    return d


def test_tmdb_movie_parses_and_renders() -> None:
    rec = parse_movie(tmdb_550())
    f = rec.facts
    assert isinstance(f, FilmFacts)
    assert (rec.external_id, f.title, f.release_date) == ("550", "Fight Club", date(1999, 10, 15))
    assert f.directors == ["David Fincher"] and f.cast[0].name == "Edward Norton"
    assert (f.runtime_min, f.budget_usd, f.revenue_usd) == (139, 63_000_000, 100_853_753)
    doc = render_document(f, "en")
    for needle in ("Fight Club", "David Fincher", "Edward Norton", "1999", "139"):
        assert needle in doc.text


def test_tmdb_lists_parse() -> None:
    refs, pages = parse_discover(data("tmdb/discover-movie.json"))
    assert len(refs) == 10 and pages >= 1 and "550" in {r.external_id for r in refs}
    refs, _ = parse_discover(data("tmdb/movie-now-playing.json"))
    assert refs[0].occurred_at is not None


def test_musicbrainz_release_parses_and_renders() -> None:
    rec = parse_release(data("musicbrainz/release-lookup-94ad3a58.json"))
    f = rec.facts
    assert isinstance(f, ReleaseFacts)
    assert (f.title, f.artist_credit, f.release_date, f.label) == ("+", "Ed Sheeran", date(2011, 9, 9), "Asylum Records")
    assert len(f.tracks) == 12 and f.tracks[0].title == "The A Team" and f.release_type == "Album"
    doc = render_document(f, "en")
    for needle in ("Ed Sheeran", "Asylum Records", "The A Team", "2011", "12"):
        assert needle in doc.text


def test_musicbrainz_search_parses_and_year_only_release_is_skipped() -> None:
    refs, count = parse_release_search(data("musicbrainz/release-search-rumours.json"))
    assert refs[0].external_id == "7ec069c0-4424-3169-8ed0-d5e2473e0e84" and count == 90
    rumours = data("musicbrainz/release-search-rumours.json")["releases"][0]
    with pytest.raises(PayloadError) as e:
        parse_release(rumours)
    assert e.value.reason == "imprecise_date"


def test_deezer_album_parses_and_renders() -> None:
    rec = parse_album(data("deezer/album-302127.json"))
    f = rec.facts
    assert isinstance(f, ReleaseFacts)
    assert (f.title, f.artists, f.release_date, f.label) == ("Discovery", ["Daft Punk"], date(2001, 3, 7), "Parlophone France")
    assert len(f.tracks) == 14 and f.tracks[0].title == "One More Time"
    doc = render_document(f, "en")
    for needle in ("Discovery", "Daft Punk", "Parlophone France", "One More Time", "2001"):
        assert needle in doc.text
    refs, total = parse_releases(data("deezer/editorial-106-releases.json"))
    assert len(refs) == 10 and total == 199


def test_deezer_error_objects() -> None:
    with pytest.raises(PayloadError) as e:
        raise_for_error({"error": {"type": "DataException", "message": "no data", "code": 800}}, "album 1")
    assert e.value.reason == "not_found"
    with pytest.raises(SourceBlocked):
        raise_for_error({"error": {"type": "Exception", "message": "Quota limit exceeded", "code": 4}}, "album 1")


def test_sportsdb_events_parse_and_render() -> None:
    rec = parse_event(data("thesportsdb/lookupevent-441613.json"))
    f = rec.facts
    assert isinstance(f, MatchFacts)
    assert (f.home_team, f.away_team, f.home_score, f.away_score) == ("Liverpool", "Swansea", 4, 1)
    assert (f.venue, f.spectators, f.date) == ("Anfield", 44621, date(2014, 12, 29))
    doc = render_document(f, "en")
    for needle in ("Liverpool", "Swansea", "Anfield", "English Premier League", "2014"):
        assert needle in doc.text
    mlb = data("thesportsdb/eventsday-2023-11-01-l4424.json")
    rec = parse_event(mlb)
    assert isinstance(rec.facts, MatchFacts)
    assert (rec.facts.home_score, rec.facts.away_score) == (7, 11)
    assert [(p.home, p.away) for p in rec.facts.periods][:3] == [(0, 0), (0, 5), (0, 5)]
    assert rec.occurred_at == datetime(2023, 11, 1, 0, 3, tzinfo=UTC)
    assert parse_events(mlb)[0].external_id == "1917406"
    assert "Texas Rangers" in render_document(rec.facts, "en").text


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"strStatus": "NS"}, "not_finished"),
        ({"strPostponed": "yes"}, "postponed"),
        ({"intHomeScore": None}, "no_score"),
        ({"strStatus": "Weird"}, "not_finished"),
    ],
)
def test_sportsdb_eligibility(change: dict[str, Any], reason: str) -> None:
    env = copy.deepcopy(data("thesportsdb/eventsday-2023-11-01-l4424.json"))
    env["events"][0].update(change)
    with pytest.raises(PayloadError) as e:
        parse_event(env)
    assert e.value.reason == reason


def test_usgs_detail_and_lists_parse_and_render() -> None:
    rec = parse_quake(data("usgs/fdsnws-event-ci3144585.json"))
    f = rec.facts
    assert isinstance(f, QuakeFacts)
    assert (f.magnitude, f.place, f.felt, f.tsunami) == (6.7, "1km NNW of Reseda, CA", 10128, False)
    assert f.time_utc.date() == date(1994, 1, 17) and f.depth_km == pytest.approx(18.202, abs=0.01)
    doc = render_document(f, "en")
    for needle in ("Reseda", "6.7", "1994", "10"):
        assert needle in doc.text
    for path in ("usgs/fdsnws-query-19940601-19941006-m8.json", "usgs/fdsnws-query-20110311-m8.8.json",
                 "usgs/fdsnws-query-20170101-20170111-maxmag0.1.json"):
        coll = data(path)
        assert len(parse_quake_list(coll)) == len(coll["features"])
        for feat in coll["features"]:
            q = parse_quake(feat)
            assert q.facts.magnitude == feat["properties"]["mag"]
            assert str(q.facts.magnitude) in render_document(q.facts, "en").text or q.facts.magnitude < 1


def test_usgs_eligibility() -> None:
    feat = copy.deepcopy(data("usgs/fdsnws-query-20110311-m8.8.json")["features"][0])
    feat["properties"]["mag"] = None
    with pytest.raises(PayloadError) as e:
        parse_quake(feat)
    assert e.value.reason == "no_magnitude"
    feat["properties"]["mag"] = 5.0
    feat["properties"]["type"] = "quarry blast"
    with pytest.raises(PayloadError) as e:
        parse_quake(feat)
    assert e.value.reason == "not_earthquake"


def test_gdacs_items_parse_and_render() -> None:
    root = ET.fromstring(data("gdacs/rss.xml").encode())
    refs = parse_rss(root)
    assert [r.external_id for r in refs] == ["EQ1457082", "EQ1456937"]
    with pytest.raises(PayloadError) as e:
        parse_item(refs[0].listing)
    assert e.value.reason == "covered_by_other_source"
    rec = parse_item(refs[0].listing, skip_types=frozenset())
    assert rec.facts.kind == "disaster"
    assert (rec.facts.country, rec.facts.affected, rec.facts.alert) == ("United States", 204, "Green")
    doc = render_document(rec.facts, "en")
    assert "United States" in doc.text and "2024" in doc.text
    no_pop = {k: v for k, v in (refs[0].listing or {}).items() if k != "population"}
    with pytest.raises(PayloadError) as e:
        parse_item(no_pop, skip_types=frozenset())
    assert e.value.reason == "no_impact"


def test_tmdb_eligibility() -> None:
    d = tmdb_550()
    d["credits"] = {"cast": [], "crew": []}
    with pytest.raises(PayloadError) as e:
        parse_movie(d)
    assert e.value.reason == "no_credits"
    d = tmdb_550()
    d["status"] = "Post Production"
    with pytest.raises(PayloadError) as e:
        parse_movie(d)
    assert e.value.reason == "not_released"


# --- fuzz: nothing but PayloadError escapes a parser -------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def _mutations(base: Any) -> st.SearchStrategy[Any]:
    """The recorded payload with one field (at any depth) deleted, nulled or replaced by junk."""
    paths: list[tuple[Any, ...]] = []

    def walk(x: Any, path: tuple[Any, ...]) -> None:
        if len(paths) > 400:
            return
        if isinstance(x, dict):
            for k, v in x.items():
                paths.append((*path, k))
                walk(v, (*path, k))
        elif isinstance(x, list):
            for i, v in enumerate(x[:3]):
                paths.append((*path, i))
                walk(v, (*path, i))

    walk(base, ())

    @st.composite
    def mutate(draw: st.DrawFn) -> Any:
        doc = copy.deepcopy(base)
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(paths))
            parent = doc
            try:
                for p in path[:-1]:
                    parent = parent[p]
                action = draw(st.sampled_from(["del", "null", "junk", "str"]))
                key = path[-1]
                if action == "del" and isinstance(parent, dict):
                    parent.pop(key, None)
                elif action == "null":
                    parent[key] = None
                elif action == "str":
                    parent[key] = str(parent[key])
                else:
                    parent[key] = draw(json_values)
            except (KeyError, IndexError, TypeError):
                continue
        return doc

    return mutate()


PARSERS = [
    (parse_movie, tmdb_550()),
    (parse_discover, data("tmdb/discover-movie.json")),
    (parse_release, data("musicbrainz/release-lookup-94ad3a58.json")),
    (parse_release_search, data("musicbrainz/release-search-rumours.json")),
    (parse_album, data("deezer/album-302127.json")),
    (parse_releases, data("deezer/editorial-106-releases.json")),
    (parse_event, data("thesportsdb/lookupevent-441613.json")),
    (parse_events, data("thesportsdb/eventsday-2023-11-01-l4424.json")),
    (parse_quake, data("usgs/fdsnws-event-ci3144585.json")),
    (parse_quake_list, data("usgs/fdsnws-query-19940601-19941006-m8.json")),
    (lambda p: parse_item(p, skip_types=frozenset()), parse_rss(ET.fromstring(data("gdacs/rss.xml").encode()))[0].listing),
]


@pytest.mark.parametrize(("parser", "base"), PARSERS, ids=[p[0].__name__ for p in PARSERS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_fuzz_only_payload_error_escapes(parser: Any, base: Any, data: st.DataObject) -> None:
    payload = data.draw(st.one_of(_mutations(base), json_values))
    try:
        parser(payload)
    except PayloadError as e:
        assert e.reason
