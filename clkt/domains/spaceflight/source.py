"""Launch Library 2 (spaceflight, The Space Devs): past launches by launch time (`/launch/previous/`).

One list call per page (`net__gte`, `net__lt`, `ordering=net`, `limit`/`offset`): the list entry is the record, so
a window costs one request per 100 launches, which matters at 15 requests an hour without a key. A key (from
`api_key_env`) goes in `Authorization: Token <key>`. Both schema versions the fixtures hold (2.0.0: `status` is
`{id, name}`; 2.2.0: with `abbrev`) are read.

Eligibility (a launch whose outcome is known and stated): a final status (success, failure, partial failure);
a launch still Go, TBD, TBC, on hold, in flight or scrubbed is `not_final` (it enters later, once final, as the
same entity), a status nobody knows is `unknown_status`, and a launch naming neither its provider nor its rocket
is `no_provider_rocket`. A missing pad, mission or rocket alone is stored without that fact. A `net` moved after
the launch was stored updates the stored entity (same id): it is never a second launch.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from clkt.domains.spaceflight import SPEC
from clkt.domains.spaceflight.facts import LaunchFacts
from clkt.domains.spaceflight.settings import LaunchLibrarySettings
from clkt.errors import PayloadError
from clkt.facts import Domain, EntityRecord
from clkt.sources._parse import Items, arr, each, guard, obj, opt_int, opt_str, req_str, when
from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window, record_of_listing, skipped_of

__all__ = ["FINAL", "PENDING", "SOURCE", "LaunchLibrarySource", "outcome_of", "parse_launch", "parse_launch_list"]

Outcome = Literal["success", "failure", "partial failure"]
# Launch Library 2's status ids and the names both schema versions give them (name, abbrev), case-folded
FINAL: dict[int, Outcome] = {3: "success", 4: "failure", 7: "partial failure"}
_FINAL_NAMES: dict[str, Outcome] = {
    "success": "success", "launch successful": "success", "failure": "failure", "launch failure": "failure",
    "partial failure": "partial failure", "launch was a partial failure": "partial failure",
}
PENDING: dict[int, str] = {1: "Go", 2: "TBD", 5: "Hold", 6: "In Flight", 8: "TBC"}
_PENDING_NAMES = frozenset({"go", "go for launch", "tbd", "to be determined", "tbc", "to be confirmed", "hold",
                            "on hold", "in flight", "launch in flight", "scrubbed", "scrub"})


def _sub(p: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """`p[key]` when it is an object (a null pad, mission or rocket reads as empty)."""
    sub = p.get(key)
    return sub if isinstance(sub, Mapping) else {}


def _name_of(p: Mapping[str, Any], key: str, *fields: str) -> str | None:
    sub = _sub(p, key)
    for f in fields:
        v = opt_str(sub, f)
        if v:
            return v
    return None


def outcome_of(status: object, launch_id: str) -> Outcome:
    """The final outcome a status states; `PayloadError` `not_final` (pending, scrubbed) or `unknown_status`."""
    if not isinstance(status, Mapping):
        raise PayloadError("unknown_status", f"{launch_id}: no status")
    names = [n.strip().casefold() for n in (opt_str(status, "name"), opt_str(status, "abbrev")) if n]
    sid = opt_int(status, "id")
    for n in names:
        if n in _FINAL_NAMES:
            return _FINAL_NAMES[n]
    if any(n in _PENDING_NAMES or "scrub" in n for n in names):
        raise PayloadError("not_final", f"{launch_id}: status {names[0]!r}")
    if sid in FINAL and not names:
        return FINAL[sid]
    if sid in PENDING and not names:
        raise PayloadError("not_final", f"{launch_id}: status id {sid}")
    raise PayloadError("unknown_status", f"{launch_id}: status {names[:1] or sid!r}")


@guard
def parse_launch_list(payload: object) -> Items[SourceRef]:
    p = obj(payload, "launch list")

    def one(x: object) -> SourceRef:
        r = obj(x, "launch")
        net = opt_str(r, "net")
        return SourceRef(external_id=req_str(r, "id"), name=opt_str(r, "name") or "", listing=dict(r),
                         occurred_at=when(net, "net") if net else None)

    return each(arr(p, "results", required=True), "launch", one)


@guard
def parse_launch(payload: object) -> EntityRecord:
    r = obj(payload, "launch")
    launch_id = req_str(r, "id")
    outcome = outcome_of(r.get("status"), launch_id)
    provider = _name_of(r, "launch_service_provider", "name")
    rocket = _name_of(_sub(r, "rocket"), "configuration", "full_name", "name")
    if provider is None and rocket is None:
        raise PayloadError("no_provider_rocket", f"{launch_id}: neither a provider nor a rocket")
    net = when(req_str(r, "net"), "net")
    mission, pad = _sub(r, "mission"), _sub(r, "pad")
    location = _sub(pad, "location")
    facts = LaunchFacts(
        name=" ".join(req_str(r, "name").split()), net=net, outcome=outcome, provider=provider, rocket=rocket,
        mission=opt_str(mission, "name"), mission_type=opt_str(mission, "type"),
        orbit=_name_of(mission, "orbit", "name"), pad=opt_str(pad, "name"), location=opt_str(location, "name"),
        country_code=opt_str(pad, "country_code") or opt_str(location, "country_code"),
        failreason=opt_str(r, "failreason") if outcome != "success" else None,
    )
    return EntityRecord(
        source=LaunchLibrarySource.name, external_id=launch_id, domain=Domain(SPEC.name),
        name=f"{facts.name} ({net.date().isoformat()})", occurred_at=net, payload=dict(r), facts=facts,
    )


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LaunchLibrarySource(Source[LaunchLibrarySettings]):
    name: ClassVar[str] = "launchlibrary"
    domain: ClassVar[Domain] = Domain(SPEC.name)
    kind: ClassVar[str] = "launch"
    licence: ClassVar[SourceLicence] = SourceLicence(
        provider="Launch Library 2 by The Space Devs, https://thespacedevs.com",
        terms=(
            "The Space Devs' terms: free to use the data in any way and to share what is made with it (please do "
            "not forward it without adding value); accuracy is not guaranteed; attribution is not mandatory but "
            "encouraged. No named licence; linked images are not covered."
        ),
    )

    async def poll(self, window: Window, page: int) -> PollPage:
        size = self.settings.options.page_size
        params = {"net__gte": _iso(window.start), "net__lt": _iso(window.end), "ordering": "net",
                  "limit": size, "offset": (page - 1) * size, "mode": "normal"}
        headers = {"Authorization": f"Token {self.client.api_key}"} if self.client.api_key else None
        got = await self.client.get_json("launch/previous/", params=params, cache=True, headers=headers)
        parsed: Items[SourceRef] = Items() if got.data is None else parse_launch_list(got.data)
        refs = [r.model_copy(update={"redated_from": got.original_dates.get(r.external_id)}) for r in parsed]
        served = len(parsed) + len(parsed.skipped)
        more = got.data is not None and served >= size and bool(obj(got.data, "launch list").get("next"))
        return PollPage(refs=refs, next_page=page + 1 if more else None, not_modified=got.not_modified,
                        skipped=skipped_of(parsed))

    async def fetch(self, ref: SourceRef) -> EntityRecord:
        return record_of_listing(ref, parse_launch)


SOURCE = LaunchLibrarySource  # what the sources' registry reads
