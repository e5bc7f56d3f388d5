"""Short chaos test (CI): the real daemon with API faults on and the LLM path on a fake provider, killed
with SIGKILL a handful of times and restarted, against one uninterrupted run. The long version is
`bench/chaos.py`.
At the root of tests/ because it is cross-cutting: the whole daemon, every stage and the store at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import chaos_harness as ch

pytestmark = pytest.mark.slow


def test_kill9_restarts_lose_nothing_and_duplicate_nothing(tmp_path: Path) -> None:
    fake, url = ch.start_fake_llm(tmp_path / "fake.log")
    try:
        ref = ch.run(tmp_path / "ref", url, languages=["en", "fr", "ja"], kills=0, seed=1)
        chaos = ch.run(tmp_path / "chaos", url, languages=["en", "fr", "ja"], kills=4, seed=2)
        # the snapshot built from both stores is byte-identical (build.json holds only the build time); the fake
        # provider still runs: the LLM roles write the open track at freeze
        r1, r2 = ch.build_snapshot(ref.root / "clkt.toml"), ch.build_snapshot(chaos.root / "clkt.toml")
    finally:
        fake.kill()
    a, b = ch.store_facts(ref.db), ch.store_facts(chaos.db)
    assert a["entities"], "the uninterrupted run ingested nothing"
    # every recorded entity present once, same questions and translations, nothing duplicated
    assert b["entities"] == a["entities"]
    assert a["entity_dups"] == b["entity_dups"] == []
    assert b["questions"] == a["questions"]
    assert a["question_dups"] == b["question_dups"] == []
    assert b["translations"] == a["translations"]
    assert a["translation_dups"] == b["translation_dups"] == []
    assert b["statuses"] == a["statuses"]
    # no lease left stale after a clean stop
    assert all(n == 0 for _, n in b["stale_leases"])
    # LLM calls: the uninterrupted run never repeats one; the chaos run repeats at most what was in flight
    # at each kill (a reply that never reached the store), bounded by kills x the provider's in-flight cap
    assert ref.llm_repeated == 0
    assert chaos.llm_repeated <= chaos.kills * 4
    assert chaos.llm_calls <= ref.llm_calls + chaos.llm_repeated
    assert r1.returncode == 0, r1.stdout + r1.stderr
    assert r2.returncode == 0, r2.stdout + r2.stderr
    f1, f2 = ch.snapshot_files(ref.root), ch.snapshot_files(chaos.root)
    assert f1 and f1 == f2
