"""`bench/intake_fuzz.py` small: 60 hostile packs (every fixed family, then truncations and bit flips) through
`POST /packs` of a real daemon process. No pack is accepted that should not be, no refusal changes the store or the
data folder, the daemon stays up without a restart or a 5xx. (Its RSS and latency goals are the bench's, not a
test's.)"""

from __future__ import annotations

import pytest

from bench.intake_fuzz import fuzz
from bench.support.intake_mutations import cases


def test_the_catalogue_has_every_family_and_at_least_n_packs() -> None:
    got = cases(1000, seed=3, bomb_bytes=1 << 20)
    assert len(got) >= 1000
    assert {c.family for c in got} >= {
        "truncation", "bitflip-gzip", "bitflip-tar", "huge-header", "nested-header", "member-type", "name", "long-name",
        "deep", "duplicate", "manifest-lie", "letter-lie", "metric-lie", "container", "many-members"}


@pytest.mark.slow
def test_hostile_packs_through_a_running_daemon() -> None:
    f = fuzz(60, seed=1, bomb_mb=20)
    assert f["packs"] >= 60 and f["refused"] >= 50
    assert f["accepted_that_should_not_be"] == 0, f["examples"]
    assert f["store_or_folder_changed_by_a_refusal"] == 0, f["examples"]
    assert f["daemon_up"] and f["service_restarts"] == 0 and f["http_5xx_or_no_answer"] == 0
