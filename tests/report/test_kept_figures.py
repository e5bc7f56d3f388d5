"""The leaderboard's figures kept in the store (`clkt.report.kept_figures`, `kept_rows`, `storage.figure_cache`;
issue 45 item 3): a board in a fresh process reads the rows and scored packs an earlier one computed, and they are
the figures it would compute; a pack's rows are computed when it is taken in; an entry that does not decode is
computed again and written over; another code makes other keys; a store that cannot be written still answers."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from clkt.packs.intake import submit_pack
from clkt.packs.pack import read_pack
from clkt.report import kept_figures, leaderboard, submitted
from clkt.report.kept_figures import ROW, SCORED, decode_scored, encode_scored, row_store_key, scored_key
from clkt.report.leaderboard import ROWS
from clkt.report.window import LeaderboardQuery, board_groups, load_leaderboard, resolve_window
from storage import figure_cache
from storage.engine import Store
from storage.result_packs import ResultPackRecord
from tests.packs._packs import make_pack, make_store
from tests.report._window_store import LANGS, SPEC, seed_window_store
from tests.report.test_submitted_board import PERIOD, _submit_copy_of


def _query() -> LeaderboardQuery:
    return LeaderboardQuery(spec=SPEC, period_from=PERIOD, period_to=PERIOD, languages=LANGS, samples=200, unverified=True)


def _forget() -> None:
    """What a fresh process has: no row, no scored pack in memory."""
    ROWS.clear()
    submitted._RESCORED = submitted._Rescored(submitted.RESCORED_KEEP)


def _computing_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any row pooled or pack scored from here on fails the test: everything must be read back."""
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("computed, not read from the figure cache")

    monkeypatch.setattr(leaderboard, "pool", refuse)
    monkeypatch.setattr(submitted, "_answers", refuse)


async def _kinds(store: Store) -> dict[str, int]:
    async with store.session() as s:
        rows = (await s.execute(text("SELECT kind, count(*) FROM figure_cache GROUP BY kind"))).all()
    return {str(k): int(n) for k, n in rows}


async def _seeded(tmp_path: Path) -> Store:
    store = Store(url=f"sqlite+aiosqlite:///{tmp_path / 'k.db'}")
    await store.initialize()
    info = await seed_window_store(store)
    await _submit_copy_of(store, info, "alpha", name="elsewhere")
    await _submit_copy_of(store, info, "beta", name="liar", flip_flags=True)
    return store


async def test_a_fresh_process_reads_what_an_earlier_one_computed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _forget()
    store = await _seeded(tmp_path)
    try:
        first = await load_leaderboard(store, _query())
        kinds = await _kinds(store)
        assert kinds[SCORED] == 2 and kinds[ROW] == len(board_groups(await resolve_window(store, _query()), _query()))
        assert any(r.track == "submitted" for r in first.rows) and any(r.track == "run here" for r in first.rows)
        _forget()
        _computing_refused(monkeypatch)
        again = await load_leaderboard(store, _query())
        assert again.model_dump() == first.model_dump()  # every figure, interval and flag the same
        assert await _kinds(store) == kinds  # nothing new written
    finally:
        await store.close()


async def test_an_entry_that_does_not_decode_is_computed_again_and_written_over(tmp_path: Path) -> None:
    _forget()
    store = await _seeded(tmp_path)
    try:
        first = await load_leaderboard(store, _query())
        async with store.transaction() as s:
            await s.execute(text("UPDATE figure_cache SET payload = :p"), {"p": b'{"target": 3'})
        _forget()
        assert (await load_leaderboard(store, _query())).model_dump() == first.model_dump()
        async with store.session() as s:
            bad = (await s.execute(text("SELECT count(*) FROM figure_cache WHERE payload = :p"), {"p": b'{"target": 3'})).scalar()
        assert bad == 0  # every entry written again
    finally:
        await store.close()


async def test_a_store_that_cannot_be_written_still_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    _forget()
    store = await _seeded(tmp_path)

    async def refuse(*_: object, **__: object) -> int:
        raise OperationalError("INSERT", {}, Exception("attempt to write a readonly database"))

    monkeypatch.setattr(figure_cache, "write_figure_cache", refuse)
    try:
        with caplog.at_level(logging.WARNING, logger="clkt.report.kept_rows"):
            board = await load_leaderboard(store, _query())
        assert board.rows and "not kept in the store" in caplog.text
        assert await _kinds(store) == {}
    finally:
        await store.close()


def test_other_code_or_content_makes_other_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = (row_store_key("r"), scored_key("a" * 64, "d", None), scored_key("a" * 64, "d", "generate"))
    assert len(set(keys)) == 3 and scored_key("b" * 64, "d", None) != keys[1] and scored_key("a" * 64, "e", None) != keys[1]
    monkeypatch.setattr(kept_figures, "code_digest", lambda: "another version of the code")
    assert row_store_key("r") != keys[0] and scored_key("a" * 64, "d", None) != keys[1]


def test_scored_packs_round_trip_and_bad_payloads_are_refused() -> None:
    p = ResultPackRecord(job_id=0, scorer="generate", langs=("en", "fr"), question_ids=(7).to_bytes(8, "little"),
                         entity_ids=(3).to_bytes(8, "little"), flags=(0b101).to_bytes(8, "little"))
    assert decode_scored(encode_scored({"en": [p]})) == {"en": [p]}
    for bad in (b"", b"{", b"[1]", b'[["en", "g", ["en"], "!!", "", ""]]', b'[["en", "g", ["en"], "AAAA", "", ""]]'):
        assert decode_scored(bad) is None, bad


async def test_a_pack_taken_in_has_its_rows_computed_then(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`submit_pack` with the default board's query: the board read afterwards, in a fresh process, computes
    nothing for the pack."""
    _forget()
    cfg = await make_store(tmp_path)
    make_pack(tmp_path / "pack")
    q = LeaderboardQuery(spec="tiny", languages=("en", "fr"), min_questions=1)
    async with Store(url=f"sqlite+aiosqlite:///{cfg.parent / 'clkt.db'}") as store:
        got = await submit_pack(store, read_pack(tmp_path / "pack"), buffer_days=0, board=q)
        assert got.stored and (await _kinds(store)).get(ROW, 0) >= 1 and (await _kinds(store))[SCORED] == 1
        _forget()
        _computing_refused(monkeypatch)
        board = await load_leaderboard(store, LeaderboardQuery(spec="tiny", languages=("en", "fr"), min_questions=1,
                                                               unverified=True))
    (row,) = board.rows
    assert row.track == "submitted" and row.metrics["overall"].value == 1.0


async def test_recompute_computes_every_row_and_writes_over_the_kept_one(tmp_path: Path) -> None:
    """`clkt leaderboard --no-cache`: a kept row that was altered (it decodes) is computed again and written over."""
    _forget()
    store = await _seeded(tmp_path)
    try:
        first = await load_leaderboard(store, _query())
        row = first.rows[0]
        key = next(k for k, _, _ in board_groups(await resolve_window(store, _query()), _query()) if ROWS.peek(k)[1] == row)
        altered = row.model_copy(update={"questions": row.questions + 1000})
        async with store.transaction() as s:
            await s.execute(text("UPDATE figure_cache SET payload = :p WHERE key = :k"),
                            {"p": altered.model_dump_json().encode(), "k": row_store_key(key)})
        _forget()
        assert (await load_leaderboard(store, _query(), recompute=True)).model_dump() == first.model_dump()
        _forget()
        assert (await load_leaderboard(store, _query())).model_dump() == first.model_dump()  # the kept one was replaced
    finally:
        await store.close()


async def test_a_retracted_question_leaves_every_row_of_the_board(tmp_path: Path) -> None:
    """A question retracted after the board was computed (`clkt snapshot retract`) leaves the rows run here and the
    submitted ones, as it leaves the snapshot's report; the kept rows of before are not read (their key moved)."""
    from storage.retractions import add_retraction
    from tests.report.test_submitted_board import _items

    _forget()
    store = await _seeded(tmp_path)
    try:
        before = {(r.target, r.scorer): r for r in (await load_leaderboard(store, _query())).rows}
        sid = (await resolve_window(store, _query())).snapshots[0].id
        row, qid = sorted((await _items(store, sid)).items())[0]
        async with store.transaction() as s:
            await add_retraction(s, snapshot_id=sid, qid=qid, question_id=row, reason="wrong answer key")
        _forget()
        after = {(r.target, r.scorer): r for r in (await load_leaderboard(store, _query())).rows}
    finally:
        await store.close()
    assert after.keys() == before.keys()
    assert all(after[k].questions == before[k].questions - 1 for k in before)  # each row answered it once
    assert after[("alpha", "generate")].metrics == after[("elsewhere (submitted)", "generate")].metrics
