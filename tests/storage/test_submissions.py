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


async def test_a_reproduction_is_stored_on_its_pack_and_a_later_one_replaces_it(tmp_path: Path, store: Store) -> None:
    from storage.fingerprints import window_fingerprint
    from storage.submissions import find_submissions_by_prefix, set_reproduction

    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    async with store.transaction() as s:
        await add_submission(s, _new("ab" + "0" * 62))
        await add_submission(s, _new("ac" + "0" * 62))
        fp = await window_fingerprint(s)
        assert await set_reproduction(s, "c" * 64, {"rate": 1.0}) is False  # no such pack: nothing stored
        assert await set_reproduction(s, "ab" + "0" * 62, {"rate": 0.5}) is True
        assert await window_fingerprint(s) != fp  # the board reads afresh
    async with store.transaction() as s:
        assert await set_reproduction(s, "ab" + "0" * 62, {"rate": 1.0}) is True
    async with store.session() as s:
        assert [r.pack_sha256[:2] for r in await find_submissions_by_prefix(s, "a")] == ["ab", "ac"]
        (got,) = await find_submissions_by_prefix(s, "AB")
        assert got.reproduction == {"rate": 1.0}  # the latest re-run replaced the earlier one
        other = await find_submission(s, "ac" + "0" * 62)
        assert other is not None and other.reproduction is None
        assert await find_submissions_by_prefix(s, "a%") == []  # a prefix is text, not a pattern


async def _old_store(tmp_path: Path, revision: str) -> str:
    """A store migrated up to `revision` holding one submitted pack written then; its URL."""
    from sqlalchemy import text

    from tests.storage._revisions import store_at_revision

    url = f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}"
    await store_at_revision(url, revision)
    async with Store(url=url, migrate=False) as old:
        await seed_store(old, write_tiny_snapshot(tmp_path / "snap"))
        async with old.transaction() as s:
            await s.execute(text(
                "INSERT INTO submitted_pack (pack_sha256, snapshot_id, target_name, model, kind, cutoff, strategy, "
                "train_langs, scorers, format_version, clkt_version, predictions, claims_match, claims_note, metrics, "
                "manifest, answers, submitted_at) VALUES (:sha, :sid, 't', '/m', 'base', '2024-08-01', 'cpt-lora', "
                "'[\"en\"]', '[\"generate\"]', 1, '0.1.0', 8, 1, '', '{}', '{}', x'00', '2026-12-03 00:00:00')"),
                {"sha": "a" * 64, "sid": SNAPSHOT_ID})
    return url


async def test_a_store_from_before_reproductions_migrates_with_none(tmp_path: Path) -> None:
    from sqlalchemy import text

    from storage.engine import HEAD_REVISION
    from tests.storage._revisions import migrate_store

    url = await _old_store(tmp_path, "f1b9c3d5e7a2")
    async with Store(url=url) as store, store.session() as s:
        rev = (await s.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        got = await find_submission(s, "a" * 64)
    assert rev == HEAD_REVISION and got is not None and got.reproduction is None and got.target_name == "t"
    await migrate_store(url, "f1b9c3d5e7a2", down=True)
    async with Store(url=url, migrate=False) as store, store.session() as s:
        assert (await s.execute(text("SELECT count(*) FROM submitted_pack"))).scalar() == 1


async def test_open_answers_are_read_only_for_packs_that_have_them(tmp_path: Path, store: Store) -> None:
    from storage.submissions import submissions_open_answers

    await seed_store(store, write_tiny_snapshot(tmp_path / "snap"))
    async with store.transaction() as s:
        await add_submission(s, _new("a" * 64, open_answers=b"\x1f\x8bopen"))
        await add_submission(s, _new("b" * 64))  # a version-1 pack: no open track
    async with store.session() as s:
        assert await submissions_open_answers(s, ["a" * 64, "b" * 64, "c" * 64]) == {"a" * 64: b"\x1f\x8bopen"}


async def test_a_store_from_before_open_answers_migrates_with_none(tmp_path: Path) -> None:
    from sqlalchemy import text

    from storage.submissions import submissions_open_answers
    from tests.storage._revisions import migrate_store

    url = await _old_store(tmp_path, "f3c7a9e1b5d2")
    async with Store(url=url) as store, store.session() as s:
        assert await submissions_open_answers(s, ["a" * 64]) == {}
        assert (await find_submission(s, "a" * 64)) is not None
    await migrate_store(url, "f3c7a9e1b5d2", down=True)
    async with Store(url=url, migrate=False) as store, store.session() as s:
        assert (await s.execute(text("SELECT count(*) FROM submitted_pack"))).scalar() == 1
