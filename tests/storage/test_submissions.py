"""The submitted packs' repository: one row per pack sha256, a second add changes nothing."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from storage.engine import Store
from storage.submissions import NewSubmission, add_submission, find_submission, list_submissions
from tests.inject._fixtures import SNAPSHOT_ID, seed_store, write_tiny_snapshot


def _new(sha: str, **kw: object) -> NewSubmission:
    base: dict[str, object] = dict(
        pack_sha256=sha, snapshot_id=SNAPSHOT_ID, target_name="t", model="/m", model_revision=None,
        weights_sha256="1" * 64, kind="base", cutoff=date(2024, 8, 1), strategy="cpt-lora", train_langs=["en"],
        scorers=["generate"], format_version=1, clkt_version="0.1.0", predictions=8, claims_match=True, claims_note="",
        metrics={"scorers": {}}, manifest={"format_version": 1}, answers=b"\x1f\x8b",
    )
    return NewSubmission(**{**base, **kw})  # type: ignore[arg-type]


async def test_a_pack_is_stored_once(tmp_path: Path, store: Store) -> None:
    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    async with store.transaction() as s:
        assert await add_submission(s, _new("a" * 64)) is True
    async with store.transaction() as s:
        assert await add_submission(s, _new("a" * 64, target_name="other")) is False  # the same pack: nothing changes
        assert await add_submission(s, _new("b" * 64, claims_match=False, claims_note="x: 1 != 2")) is True
    async with store.session() as s:
        got = await find_submission(s, "a" * 64)
        assert got is not None and got.target_name == "t" and got.cutoff == date(2024, 8, 1)
        assert [r.pack_sha256[0] for r in await list_submissions(s, snapshot_id=SNAPSHOT_ID)] == ["a", "b"]
        assert await list_submissions(s, snapshot_id="other") == []
        assert await find_submission(s, "c" * 64) is None
