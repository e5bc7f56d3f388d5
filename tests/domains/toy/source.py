"""The lighthouse API's poller: `GET lighthouses?lit_gte=&lit_lt=&offset=&limit=` -> `{"results": [...], "next": ...}`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from clkt.facts import Domain, EntityRecord
from clkt.sources._parse import Items, arr, each, guard, obj, req_str, when
from clkt.sources.base import PollPage, Source, SourceLicence, SourceRef, Window, record_of_listing, skipped_of
from tests.domains.toy import SPEC
from tests.domains.toy.facts import LighthouseFacts
from tests.domains.toy.settings import BeaconApiSettings

PAGE = 10


@guard
def parse_list(payload: object) -> Items[SourceRef]:
    def one(x: object) -> SourceRef:
        r = obj(x, "lighthouse")
        return SourceRef(external_id=req_str(r, "id"), name=req_str(r, "name"), listing=dict(r),
                         occurred_at=when(req_str(r, "lit"), "lit"))

    return each(arr(obj(payload, "list"), "results", required=True), "lighthouse", one)


@guard
def parse_one(r: dict[str, Any]) -> EntityRecord:
    lit = when(req_str(r, "lit"), "lit")
    facts = LighthouseFacts(name=req_str(r, "name"), lit=lit.date(), height_m=int(r["height_m"]),
                            keeper=req_str(r, "keeper"))
    return EntityRecord(source=SPEC.source, external_id=req_str(r, "id"), domain=Domain(SPEC.name), name=facts.name,
                        occurred_at=lit, payload=dict(r), facts=facts)


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class BeaconSource(Source[BeaconApiSettings]):
    name: ClassVar[str] = SPEC.source
    domain: ClassVar[Domain] = Domain(SPEC.name)
    kind: ClassVar[str] = "lighthouse"
    licence: ClassVar[SourceLicence] = SourceLicence(provider="The toy lighthouse API (tests only)",
                                                     terms="Made up for the toy-domain test; no rights reserved.")

    async def poll(self, window: Window, page: int) -> PollPage:
        params = {"lit_gte": _iso(window.start), "lit_lt": _iso(window.end), "offset": (page - 1) * PAGE, "limit": PAGE}
        got = await self.client.get_json("lighthouses", params=params, cache=True)
        parsed: Items[SourceRef] = Items() if got.data is None else parse_list(got.data)
        refs = [r.model_copy(update={"redated_from": got.original_dates.get(r.external_id)}) for r in parsed]
        more = got.data is not None and bool(obj(got.data, "list").get("next"))
        return PollPage(refs=refs, next_page=page + 1 if more else None, not_modified=got.not_modified,
                        skipped=skipped_of(parsed))

    async def fetch(self, ref: SourceRef) -> EntityRecord:
        return record_of_listing(ref, parse_one)


SOURCE = BeaconSource
