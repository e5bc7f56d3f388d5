"""A toy domain that lives in the test tree only (lighthouses, from a made-up JSON API): registered by naming this
package in `CLKT_DOMAIN_PACKAGES`, it must flow through the product with no product file naming it."""

from __future__ import annotations

from clkt.domains.spec import DomainSpec
from tests.domains.toy.facts import LighthouseFacts
from tests.domains.toy.settings import BeaconApiSettings

SPEC = DomainSpec(
    name="lighthouses", package=__name__, facts=LighthouseFacts, source="beaconapi", settings=BeaconApiSettings,
    quota=5, slots=("lit", "height", "keeper"),
)
