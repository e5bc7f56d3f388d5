"""`POST /packs`'s limits (`clkt.web.intake_gate`, `clkt.web.intake`) on a real server: a token per submitter, kept
only as its sha256; a rate limit and a concurrent-upload limit per submitter (429, `Retry-After`); a stalled sender cut
off (408); the size limit on Content-Length before a byte is read; every refusal one logged line with its status,
never the token."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from clkt.errors import UserError
from clkt.web.intake import INTAKE_PATH
from clkt.web.intake_gate import IntakeLimits, Submitters, hash_token, read_tokens_file, token_line
from storage.engine import Store
from tests.cli._in_process import clkt
from tests.packs._packs import intake_app, make_pack, store_dump, submitted

TOKEN = "operator-secret-0123456789"
ALICE = "alice-secret-abcdefghijkl"


def _client(store: Store, limits: IntakeLimits, *, max_bytes: int = 1 << 20) -> TestClient[Any, Any]:
    app = intake_app(store, token=TOKEN, max_bytes=max_bytes, limits=limits, tokens={"alice": ALICE})
    return TestClient(TestServer(app, host="127.0.0.1"))


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_tokens_file_holds_hashes_and_is_checked(tmp_path: Path) -> None:
    f = tmp_path / "tokens"
    f.write_text(f"# submitters\n{token_line('alice', ALICE)}\n{token_line('bob', 'bob-token')}  # bob\n")
    assert ALICE not in f.read_text() and hash_token(ALICE) in f.read_text()
    subs = Submitters.of(tokens_file=f, operator_token=TOKEN)
    assert [subs.who(f"Bearer {t}") for t in (ALICE, "bob-token", TOKEN, "nope")] == ["alice", "bob", "operator", None]
    assert subs.who(f"Basic {ALICE}") is None and subs.who("Bearer ") is None
    f.write_text("alice sha256:1234\n")
    with pytest.raises(UserError, match=r"tokens:1: not 'NAME sha256:HEX'"):
        read_tokens_file(f)
    f.write_text(f"{token_line('a', 'x')}\n{token_line('a', 'y')}\n")
    with pytest.raises(UserError, match="submitter a is named twice"):
        read_tokens_file(f)
    with pytest.raises(UserError, match="is not a submitter name"):
        token_line("a b", "x")


def test_clkt_intake_token_prints_the_token_once_and_stores_its_hash(tmp_path: Path) -> None:
    f = tmp_path / "tokens"
    res = clkt("intake-token", "carol", "--file", str(f))
    assert res.returncode == 0, res.stderr
    token = res.stdout.strip()
    assert token and token not in f.read_text() and read_tokens_file(f) == {hash_token(token): "carol"}
    assert (f.stat().st_mode & 0o777) == 0o600
    again = clkt("intake-token", "carol", "--file", str(f))
    assert again.returncode == 2 and "already has a token for carol" in again.stderr


async def test_each_submitter_is_rate_limited_apart(tmp_path: Path, stored: Store, caplog: pytest.LogCaptureFixture) -> None:
    make_pack(tmp_path / "pack.tar.gz")
    body = (tmp_path / "pack.tar.gz").read_bytes()
    caplog.set_level(logging.INFO, logger="clkt.web")
    async with _client(stored, IntakeLimits(rate_per_hour=1, burst=2)) as client:
        statuses = [(await client.post(INTAKE_PATH, data=body, headers=_auth(ALICE))).status for _ in range(2)]
        r = await client.post(INTAKE_PATH, data=body, headers=_auth(ALICE))
        assert statuses == [200, 200] and r.status == 429 and int(r.headers["Retry-After"]) > 60
        assert "submitter alice passed 1 uploads an hour" in (await r.json())["error"]
        assert (await client.post(INTAKE_PATH, data=body, headers=_auth(TOKEN))).status == 200  # another submitter
        assert (await client.post(INTAKE_PATH, data=b"x", headers=_auth("wrong"))).status == 401
    lines = [r.getMessage() for r in caplog.records]
    assert any("HTTP 429, submitter alice" in x for x in lines) and any("HTTP 401, submitter -" in x for x in lines)
    assert not any(t in x for x in lines for t in (TOKEN, ALICE, "wrong"))
    assert len(submitted(tmp_path)) == 1


async def _slow(first: bytes, *, stall_s: float) -> AsyncIterator[bytes]:
    yield first
    await asyncio.sleep(stall_s)
    yield b"rest"


async def test_one_upload_at_a_time_and_stalled_senders_are_cut_off(tmp_path: Path, stored: Store) -> None:
    before = store_dump(tmp_path)
    async with _client(stored, IntakeLimits(concurrent=1, read_timeout_s=0.5, burst=10)) as client:
        stalled = asyncio.create_task(client.post(INTAKE_PATH, data=_slow(b"x" * 100, stall_s=3), headers=_auth(ALICE)))
        await asyncio.sleep(0.2)
        r = await client.post(INTAKE_PATH, data=b"y", headers=_auth(ALICE))
        assert r.status == 429 and "has 1 upload(s) in hand already" in (await r.json())["error"]
        assert (await client.post(INTAKE_PATH, data=b"y", headers=_auth(TOKEN))).status == 400  # another: read
        got = await stalled
        assert got.status == 408 and "stalled past 0.5 s" in (await got.json())["error"]
    assert store_dump(tmp_path) == before


async def test_the_size_limit_holds_on_content_length_and_on_the_stream(tmp_path: Path, stored: Store) -> None:
    async with _client(stored, IntakeLimits(), max_bytes=2048) as client:
        r = await client.post(INTAKE_PATH, data=b"x" * 4096, headers=_auth(ALICE))
        assert r.status == 413
        r = await client.post(INTAKE_PATH, data=_slow(b"x" * 3000, stall_s=0), headers=_auth(ALICE))  # chunked
        assert r.status == 413 and "2,048 bytes" in (await r.json())["error"]
