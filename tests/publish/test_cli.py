"""`clkt snapshot publish` and `clkt snapshot retract` through the real entry (`clkt.cli.main`), against the stand-in
Hub in a thread: what they print, the token nowhere but in the requests to the Hub, and every bad input as one
clear line with nothing queued and nothing sent."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from clkt.config import Settings
from clkt.logs import RedactingFormatter, redact
from storage.engine import Store
from tests.fakes.hub_server import FakeHub
from tests.publish.conftest import REPO, TOKEN, publish_settings, seed_snapshot
from tests.test_hostile_catalogue import Run, assert_one_line_error, clkt


@pytest.fixture
def threaded_hub(online_hub_client: None) -> Iterator[FakeHub]:
    """The stand-in on its own event loop in a thread (the CLI runs its own loop in the test's thread)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="stand-in-hub", daemon=True)
    thread.start()

    async def start() -> FakeHub:
        h = FakeHub(token=TOKEN)
        await h.start()
        return h

    hub = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    try:
        yield hub
    finally:
        asyncio.run_coroutine_threadsafe(hub.close(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def _seed(settings: Settings, *, report: bool = True) -> str:
    async def go() -> str:
        async with Store(url=settings.resolved_store_url) as store:
            return await seed_snapshot(store, settings, month=6, prefix="a", report=report)

    return asyncio.run(go())


def _tasks(settings: Settings) -> int:
    async def go() -> int:
        from storage.publish import publish_tasks

        async with Store(url=settings.resolved_store_url) as store, store.session() as s:
            return len(await publish_tasks(s))

    return asyncio.run(go())


def _flat(text: str) -> str:
    return " ".join(text.split())  # rich wraps long lines


def _cfg(tmp_path: Path) -> list[str]:
    return ["--config", str(tmp_path / "clkt.toml")]


def test_publish_retract_publish_and_the_token_is_nowhere_else(
    tmp_path: Path, threaded_hub: FakeHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    hub = threaded_hub
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    settings = publish_settings(tmp_path, hub.url, hold_back_periods=0)
    sid = _seed(settings)
    # every log record of every logger, at DEBUG, as raw text (no redaction): nobody may log the token at all
    raw = io.StringIO()
    handler = logging.StreamHandler(raw)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    for name in ("huggingface_hub", "httpx2", "httpcore2", "clkt", "urllib3"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        runs: list[Run] = []
        runs.append(run := clkt(["snapshot", "publish", sid[:18], "--repo", REPO, "--private", *_cfg(tmp_path)], capsys))
        assert run.code == 0, run
        assert f"published revision 1 of {sid} to {REPO}@main (created the private repo)" in _flat(run.out)
        runs.append(run := clkt(["snapshot", "publish", sid, "--repo", REPO, *_cfg(tmp_path)], capsys))
        assert run.code == 0 and "no-op" in run.out and "revision 1" in _flat(run.out), run
        qid = json.loads(hub.tree(REPO)[f"snapshots/{sid}/hf/data/qa_en-test.jsonl"].decode().splitlines()[0])["qid"]
        runs.append(run := clkt(["snapshot", "retract", sid, str(qid), "--reason", "two options are right", *_cfg(tmp_path)], capsys))
        assert run.code == 0 and f"retracted question {qid} of {sid}" in _flat(run.out), run
        runs.append(run := clkt(["snapshot", "retract", sid, str(qid), "--reason", "again", *_cfg(tmp_path)], capsys))
        assert run.code == 0 and "already retracted" in _flat(run.out) and "two options are right" in _flat(run.out)
        runs.append(run := clkt(["snapshot", "publish", sid, "--repo", REPO, *_cfg(tmp_path)], capsys))
        assert run.code == 0 and "published revision 2" in _flat(run.out) and "1 retracted" in _flat(run.out), run
        runs.append(run := clkt(["status", "--json", *_cfg(tmp_path)], capsys))
        status = json.loads(run.out)
        assert status["publish"]["tasks"] == {"done": 1} and status["publish"]["retractions"] == 1
        assert [r["revision"] for r in status["publish"]["revisions"]] == [2, 1]
        runs.append(run := clkt(["status", *_cfg(tmp_path)], capsys))
        assert "Latest publish revisions" in run.out
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    assert [c.title for c in hub.history(REPO)] == [f"Publish {sid} revision 2", f"Publish {sid} revision 1", "initial commit"]
    # the token went to the Hub (and only there) ...
    assert any(r.headers.get("Authorization") == f"Bearer {TOKEN}" for r in hub.requests)
    # ... and is nowhere else: not in the logs, the output, the store, the staging folder, any committed byte
    assert raw.getvalue() and TOKEN not in raw.getvalue()
    assert all(TOKEN not in r.out + r.err for r in runs)
    stored = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    assert any(p.name == "clkt.db" for p in stored)
    assert all(TOKEN.encode() not in p.read_bytes() for p in stored)
    assert all(TOKEN.encode() not in data for _, _, data in hub.every_committed_file(REPO))
    assert not any((tmp_path / "data" / "publish").glob("*"))  # the staging folders are gone
    # and the one redaction point covers it, had anything tried to print it
    assert redact(f"token={TOKEN} and {TOKEN}") == "token=*** and ***"
    formatter = RedactingFormatter("%(message)s")
    assert TOKEN not in formatter.format(logging.LogRecord("x", logging.ERROR, "f", 1, "leak %s", (TOKEN,), None))


def test_bad_input_is_one_clear_line_and_nothing_is_queued_or_sent(
    tmp_path: Path, threaded_hub: FakeHub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    hub = threaded_hub
    settings = publish_settings(tmp_path, hub.url, hold_back_periods=0)
    sid = _seed(settings, report=False)
    cfg = _cfg(tmp_path)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    cases: list[tuple[list[str], str]] = [
        (["snapshot", "publish", sid, "--repo", "not-a-repo"], "--repo: 'not-a-repo' is not a Hub repo id of the form owner/name"),
        (["snapshot", "publish", sid, "--repo", "a/b/c"], "not a Hub repo id"),
        (["snapshot", "publish", sid], "--repo: name the Hub dataset repo"),
        (["snapshot", "publish", sid, "--repo", REPO, "--revision", "../x"], "--revision"),
        (["snapshot", "publish", "nosuch", "--repo", REPO], "unknown snapshot 'nosuch'"),
        (["snapshot", "publish", sid, "--repo", REPO], "no Hub token: set the environment variable HF_TOKEN"),
        (["snapshot", "retract", sid, "12345", "--reason", "x"], f"snapshot {sid} has no question 12345"),
        (["snapshot", "retract", sid, "abc", "--reason", "x"], "question_id"),
        (["snapshot", "retract", sid, "12345", "--reason", "   "], "--reason"),
        (["snapshot", "retract", sid, "12345"], "--reason"),
    ]
    for argv, needle in cases:
        run = clkt([*argv, *cfg], capsys)
        assert_one_line_error(run, needle)
        assert run.code == 2, run
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    frozen = settings.snapshot.out_dir / "demo" / "2025-06"
    target = frozen / "hf" / "data" / "qa_en-test.jsonl"
    original = target.read_bytes()
    target.write_bytes(original.replace(b"Q0", b"QX", 1))  # the frozen files no longer match their hashes
    run = clkt(["snapshot", "publish", sid, "--repo", REPO, *cfg], capsys)
    assert_one_line_error(run, "hf/data/qa_en-test.jsonl does not match its sha256")
    assert run.code == 2 and "is not published" in run.err
    target.write_bytes(original)
    assert hub.requests == [] and _tasks(settings) == 0  # nothing sent, nothing queued

    # a superseded snapshot is not frozen: never published
    async def rebuild() -> None:
        from datetime import UTC, datetime

        from clkt.services import snapshot_config
        from clkt.snapshots.builder import build_snapshot
        from tests.snapshots.factories import fill_period

        async with Store(url=settings.resolved_store_url) as store:
            await fill_period(store, month_start=datetime(2025, 6, 10, tzinfo=UTC), per_domain=1, prefix="late")
            await build_snapshot(store, snapshot_config(settings), period="2025-06", now=datetime(2025, 7, 5, tzinfo=UTC),
                                 force=True)

    asyncio.run(rebuild())
    run = clkt(["snapshot", "publish", sid, "--repo", REPO, *cfg], capsys)
    assert_one_line_error(run, f"snapshot {sid} is superseded, not frozen")
    assert hub.requests == [] and _tasks(settings) == 0


def test_an_offline_hub_client_is_said_and_nothing_is_lost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # as HF_HUB_OFFLINE=1 leaves it
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    settings = publish_settings(tmp_path, "http://127.0.0.1:9", hold_back_periods=0)
    sid = _seed(settings, report=False)
    run = clkt(["snapshot", "publish", sid, "--repo", REPO, *_cfg(tmp_path)], capsys)
    assert_one_line_error(run, "offline mode (HF_HUB_OFFLINE is set)")
    assert run.code == 1 and "the publish task waits" in run.err
    assert _tasks(settings) == 1
