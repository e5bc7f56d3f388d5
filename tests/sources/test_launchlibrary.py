"""Launch Library 2 (spaceflight): the recorded lists (schemas 2.0.0 and 2.2.0) parse; only launches with a final
outcome enter, the others are refused with their reason counted (still Go / TBD / in flight / scrubbed, a status
nobody knows, neither provider nor rocket). A null rocket or pad is stored without that fact; a `net` moved after
the launch was stored updates the same entity. Nothing stalls the source."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from sqlalchemy import func, select

from clkt.config import load_settings
from clkt.context import ServiceContext
from clkt.documents import render_all
from clkt.domains.spaceflight.facts import LaunchFacts
from clkt.domains.spaceflight.settings import LaunchLibrarySettings
from clkt.domains.spaceflight.source import LaunchLibrarySource, parse_launch, parse_launch_list
from clkt.errors import PayloadError
from clkt.replay import ReplayServer
from storage.engine import Store
from storage.entities import entity_by_key, skip_counts
from storage.models import Entity

from .conftest import poller_for, settings_for

MakeCtx = Callable[..., ServiceContext]


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        resources.files("clkt.domains.spaceflight").joinpath("data", "launchlibrary", name).read_text(encoding="utf-8"))
    return data


V20 = recorded("v2.0.0-launch-upcoming.json")
V22 = recorded("v2.2.0-launch-upcoming-limit5.json")
KAIROS = V20["results"][1]  # "Failure", with a failreason
STARLINK = V22["results"][0]  # "Launch Successful" (2.2.0: status with abbrev)


def edited(launch: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(launch)
    out.update(changes)
    return out


def test_both_schema_versions_parse_and_only_final_launches_enter() -> None:
    got: dict[str, int] = {}
    for data in (V20, V22, recorded("v2.0.0-launch-upcoming-compact.json")):
        for ref in parse_launch_list(data):
            try:
                parse_launch(ref.listing)
                got["ok"] = got.get("ok", 0) + 1
            except PayloadError as e:
                got[e.reason] = got.get(e.reason, 0) + 1
    assert got == {"ok": 3, "not_final": 22}
    rec = parse_launch(KAIROS)
    f = rec.facts
    assert isinstance(f, LaunchFacts) and rec.domain.value == "spaceflight" and f.outcome == "failure"
    assert f.provider == "Space One" and f.orbit == "Sun-Synchronous Orbit" and f.location == "Spaceport Kii, Japan"
    assert f.failreason and "FTS" in f.failreason
    s = parse_launch(STARLINK).facts
    assert isinstance(s, LaunchFacts) and s.outcome == "success" and s.rocket == "Falcon 9 Block 5"
    docs = render_all(f)
    assert "Space One" in docs["zh"].sentences["provider"] and "2026年3月5日" in docs["ja"].sentences["net"]
    assert "échec" in docs["fr"].sentences["outcome"]


@pytest.mark.parametrize(("status", "reason"), [
    ({"id": 1, "name": "Go for Launch", "abbrev": "Go"}, "not_final"),
    ({"id": 2, "name": "TBD"}, "not_final"),
    ({"id": 6, "name": "In Flight"}, "not_final"),
    ({"id": 42, "name": "Scrubbed"}, "not_final"),
    ({"id": 8}, "not_final"),
    ({"id": 99, "name": "Exploded gloriously"}, "unknown_status"),
    ({"id": "x"}, "bad_type"),  # a typed field of the wrong type
    (None, "unknown_status"),
    ("Success", "unknown_status"),
])
def test_launches_without_a_final_outcome_are_refused(status: Any, reason: str) -> None:
    with pytest.raises(PayloadError) as err:
        parse_launch(edited(KAIROS, status=status))
    assert err.value.reason == reason


def test_final_statuses_by_name_or_by_id() -> None:
    for status, outcome in (({"id": 3, "name": "Success"}, "success"), ({"id": 4}, "failure"),
                            ({"id": 7, "name": "Launch was a Partial Failure", "abbrev": "Partial Failure"},
                             "partial failure")):
        f = parse_launch(edited(KAIROS, status=status)).facts
        assert isinstance(f, LaunchFacts) and f.outcome == outcome


def test_null_rocket_or_pad_is_stored_without_it_and_neither_provider_nor_rocket_is_refused() -> None:
    no_rocket = parse_launch(edited(KAIROS, rocket=None)).facts
    assert isinstance(no_rocket, LaunchFacts) and no_rocket.rocket is None and no_rocket.provider == "Space One"
    assert "rocket" not in render_all(no_rocket)["en"].sentences
    no_pad = parse_launch(edited(KAIROS, pad=None)).facts
    assert isinstance(no_pad, LaunchFacts) and no_pad.pad is None and no_pad.location is None
    assert not {"pad", "location"} & set(render_all(no_pad)["es"].sentences)
    no_mission = parse_launch(edited(KAIROS, mission=None)).facts
    assert isinstance(no_mission, LaunchFacts) and no_mission.orbit is None
    with pytest.raises(PayloadError) as err:
        parse_launch(edited(KAIROS, rocket=None, launch_service_provider=None))
    assert err.value.reason == "no_provider_rocket"
    with pytest.raises(PayloadError) as err:
        parse_launch(edited(KAIROS, net="next Tuesday"))
    assert err.value.reason == "bad_date"


async def test_the_poller_crawls_the_recorded_launches_re_dated(replay: ReplayServer, store: Store, make_ctx: MakeCtx) -> None:
    report = await poller_for(settings_for(replay), "launchlibrary").run_cycle(make_ctx())
    assert report.completed and report.inserted == 3 and report.skipped == {"not_final": 22}
    async with store.session() as s:
        kairos = await entity_by_key(s, "launchlibrary", KAIROS["id"])
        skips = await skip_counts(s)
    assert kairos is not None and kairos.domain == "spaceflight" and kairos.redated_from is not None
    assert kairos.redated_from == datetime(2026, 3, 5, 2, 10, tzinfo=UTC) and kairos.occurred_at != kairos.redated_from
    assert skips[("launchlibrary", "not_final")] == 22


async def test_a_moved_net_updates_the_stored_launch_and_bad_records_never_stall(store: Store, make_ctx: MakeCtx) -> None:
    page: list[Any] = [
        KAIROS, edited(STARLINK, rocket=None), edited(STARLINK, id="pad-less", pad=None),
        edited(STARLINK, id="unknown", status={"id": 99, "name": "Exploded gloriously"}),
        edited(STARLINK, id="anonymous", rocket=None, launch_service_provider=None), "not a launch",
    ]
    seen: list[dict[str, str]] = []

    async def previous(request: web.Request) -> web.Response:
        seen.append(dict(request.query))
        return web.json_response({"count": len(page), "next": None, "previous": None, "results": page})

    app = web.Application()
    app.router.add_get("/launch/previous/", previous)
    async with TestServer(app, host="127.0.0.1") as server:
        base = load_settings(None, environ={})
        src = base.sources.launchlibrary.model_copy(update={"base_url": str(server.make_url("")), "rate_per_s": 1000.0,
                                                            "lookback_days": 365 * 2})
        settings = base.model_copy(update={"sources": base.sources.model_copy(update={"launchlibrary": src})})
        ctx = make_ctx(now=datetime(2026, 4, 1, tzinfo=UTC))
        first = await poller_for(settings, "launchlibrary").run_cycle(ctx)
        assert first.completed and first.inserted == 3
        assert first.skipped == {"unknown_status": 1, "no_provider_rocket": 1, "bad_type": 1}
        page[0] = edited(KAIROS, net="2026-03-06T01:00:00Z")  # the launch time was corrected upstream
        second = await poller_for(settings, "launchlibrary").run_cycle(ctx)
    assert second.inserted == 0 and second.updated == 1
    assert seen[0]["ordering"] == "net" and seen[0]["net__gte"].endswith("Z") and "net__lt" in seen[0]
    async with store.session() as s:
        kairos = await entity_by_key(s, "launchlibrary", KAIROS["id"])
        n = (await s.execute(select(func.count()).select_from(Entity))).scalar_one()
    assert n == 3 and kairos is not None and kairos.occurred_at == datetime(2026, 3, 6, 1, 0, tzinfo=UTC)
    assert kairos.facts["net"].startswith("2026-03-06T01:00")


def test_the_real_endpoint_keeps_the_documented_pace() -> None:
    s = LaunchLibrarySettings()
    assert s.base_url.startswith("https://ll.thespacedevs.com/2.") and s.concurrency == 1 and s.burst == 1
    assert s.rate_per_s * 3600 == pytest.approx(15) and s.api_key_env == "LAUNCHLIBRARY_API_KEY"
    assert "The Space Devs" in LaunchLibrarySource.licence.provider and "attribution" in LaunchLibrarySource.licence.terms
