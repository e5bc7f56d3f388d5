"""`POST /packs` (`clkt.web.intake`) on a real SQLite store behind the endpoint's own guards: an upload with the
intake token is verified and stored once, as `clkt submit` does; without the token, with another, past the size
limit or with a bad pack it is refused with one line and the store as it was; without a configured token the
route does not exist and the endpoint stays read-only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from clkt.config import load_settings
from clkt.services import intake_config
from clkt.web.intake import INTAKE_PATH
from storage.engine import Store
from tests.packs._packs import intake_app, make_pack, make_store, rows, store_dump, submitted

TOKEN = "intake-secret-0123456789"


async def _client(store: Store | None, *, max_bytes: int = 1 << 20) -> TestClient[Any, Any]:
    return TestClient(TestServer(intake_app(store, token=TOKEN, max_bytes=max_bytes), host="127.0.0.1"))


async def test_an_upload_with_the_token_is_stored_once(tmp_path: Path, stored: Store) -> None:
    sha = make_pack(tmp_path / "pack.tar.gz")
    body = (tmp_path / "pack.tar.gz").read_bytes()
    async with await _client(stored) as client:
        r = await client.post(INTAKE_PATH, data=body, headers={"Authorization": f"Bearer {TOKEN}"})
        got = await r.json()
        assert r.status == 200, got
        assert (got["pack_sha256"], got["stored"], got["claims_match"]) == (sha, True, True)
        assert got["metrics"]["scorers"]["option-loglik"]["means"]["overall"] == 1.0
        assert [row[0] for row in submitted(tmp_path)] == [sha]
        before = store_dump(tmp_path)
        again = await client.post(INTAKE_PATH, data=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert again.status == 200 and (await again.json())["stored"] is False  # the same pack: nothing changes
        assert store_dump(tmp_path) == before


@pytest.mark.parametrize(("headers", "status", "line"), [
    ({}, 401, "an upload needs the intake token"),
    ({"Authorization": "Bearer wrong"}, 401, "an upload needs the intake token"),
    ({"Authorization": f"Basic {TOKEN}"}, 401, "an upload needs the intake token"),
])
async def test_an_upload_without_the_token_is_refused(tmp_path: Path, stored: Store, headers: dict[str, str],
                                                       status: int, line: str) -> None:
    make_pack(tmp_path / "pack.tar.gz")
    before = store_dump(tmp_path)
    async with await _client(stored) as client:
        r = await client.post(INTAKE_PATH, data=(tmp_path / "pack.tar.gz").read_bytes(), headers=headers)
        assert r.status == status and line in (await r.json())["error"]
    assert store_dump(tmp_path) == before


async def test_a_bad_or_too_large_upload_is_one_line_and_changes_nothing(tmp_path: Path, stored: Store) -> None:
    make_pack(tmp_path / "twice.tar.gz", preds=rows() + rows()[:1])
    make_pack(tmp_path / "good.tar.gz")
    before = store_dump(tmp_path)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with await _client(stored, max_bytes=2048) as client:
        r = await client.post(INTAKE_PATH, data=(tmp_path / "twice.tar.gz").read_bytes(), headers=auth)
        err = (await r.json())["error"]
        assert r.status == 400 and "is answered twice" in err and "\n" not in err and "clkt-upload-" not in err
        r = await client.post(INTAKE_PATH, data=b"not an archive", headers=auth)
        assert r.status == 400 and "not a readable .tar.gz" in (await r.json())["error"]
        r = await client.post(INTAKE_PATH, data=b"", headers=auth)
        assert r.status == 400 and "an empty upload" in (await r.json())["error"]
        r = await client.post(INTAKE_PATH, data=b"x" * 4096, headers=auth)
        assert r.status == 413 and "2,048 bytes" in (await r.json())["error"]
        r = await client.post("/leaderboard", data=b"x", headers=auth)  # the one writable path: others stay read-only
        assert r.status == 405
    assert store_dump(tmp_path) == before


async def test_without_a_token_configured_there_is_no_upload(tmp_path: Path) -> None:
    cfg = await make_store(tmp_path)
    settings = load_settings(cfg, environ={})
    async with Store(url=settings.resolved_store_url) as store:
        assert intake_config(settings, store) is None  # no [http] intake_token_env: off
        cfg.write_text(cfg.read_text() + '[http]\nintake_token_env = "CLKT_INTAKE_TOKEN"\nintake_max_bytes = 4096\n')
        assert intake_config(load_settings(cfg, environ={}), store) is None  # named, but the variable is unset
        on = intake_config(load_settings(cfg, environ={"CLKT_INTAKE_TOKEN": TOKEN}), store)
        assert on is not None and on.submitters.who(f"Bearer {TOKEN}") == "operator" and on.max_bytes == 4096
        assert TOKEN not in repr(on.submitters)  # only its sha256 is held
    async with await _client(None) as client:
        r = await client.post(INTAKE_PATH, data=b"x", headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status == 405 and "read-only" in await r.text()
    assert json.dumps(settings.public_dump()).count(TOKEN) == 0
