from __future__ import annotations

from clkt.domain_base import Burst, RatePerS, SourceSettings


class BeaconApiSettings(SourceSettings):
    """The made-up lighthouse API: 2 requests/s (its "documented" rate), no key."""

    base_url: str = "https://beacons.invalid/api"
    rate_per_s: RatePerS = 2.0
    burst: Burst = 1
