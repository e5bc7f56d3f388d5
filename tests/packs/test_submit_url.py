"""`clkt submit --url URL PACK` (`clkt.packs.upload`) through the real CLI against the daemon endpoint's `POST /packs`
(`clkt.web.intake`, behind the endpoint's guards) served on 127.0.0.1 over a real SQLite store: a folder or an
archive is taken in once and joins the leaderboard marked submitted, the same pack again changes nothing, and each
bad input (no token, a wrong one, a pack too large, one the verifier refuses, a service that cannot be reached or
takes no upload, a path that is not there, `--url` with `--reproduce`) is one line, exit 2, the store as it was and
the token nowhere in what was printed. A 5xx is tried again, a 4xx never.

The service runs on the test's event loop: the CLI runs in a thread (`asyncio.to_thread`), or the blocked loop would
never answer it."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

import clkt.packs.upload as upload
from clkt.errors import UserError
from clkt.packs.archive import archive_bytes
from clkt.packs.format import MANIFEST_FILE, METRICS_FILE, PREDICTIONS_FILE
from storage.engine import Store
from tests.cli._in_process import Ran, clkt
from tests.packs._packs import intake_app, make_pack, rows, store_dump, submitted

pytestmark = pytest.mark.usefixtures("wide_console")

TOKEN = "intake-url-secret-0123456789"
ENV = "CLKT_INTAKE_TOKEN"


async def _serve(store: Store | None, *, max_bytes: int = 1 << 20) -> TestServer:
    server = TestServer(intake_app(store, token=TOKEN, max_bytes=max_bytes), host="127.0.0.1")
    await server.start_server()
    return server


@pytest.fixture
async def service(stored: Store) -> AsyncIterator[str]:
    """The base address of a service taking uploads into the tiny snapshot's store."""
    server = await _serve(stored)
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV, TOKEN)
    monkeypatch.setattr(upload, "BACKOFF_S", 0.01)  # the retries' waits, short
    return TOKEN


async def _submit(*args: str) -> Ran:
    return await asyncio.to_thread(clkt, "submit", *args)


def _one_line(res: Ran, *secrets: str) -> str:
    """The one error line of a refused command (exit 2), none of `secrets` in anything it printed."""
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = [x for x in res.stderr.splitlines() if x.strip() and not x.startswith("uploading pack ")]
    assert len(lines) == 1, res.stderr
    for secret in (TOKEN, *secrets):
        assert secret not in res.stdout + res.stderr
    return lines[0]


def _board(cfg: Path) -> dict:
    res = clkt("leaderboard", "--spec", "tiny", "--json", "--min-questions", "1", "--config", str(cfg), "--unverified")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


async def test_an_uploaded_pack_is_stored_once_and_joins_the_board(tmp_path: Path, service: str) -> None:
    sha = make_pack(tmp_path / "pack")
    make_pack(tmp_path / "pack.tar.gz")
    first = await _submit("--url", service, str(tmp_path / "pack"))
    assert first.returncode == 0, first.stderr
    assert f"submitted pack {sha[:12]}: tiny on " in first.stdout
    assert ("option-loglik: overall 100.0 %, transfer not interpretable (mean over 1 language pairs; did not learn: en (its "
            "pairs left out of Transfer))") in first.stdout
    assert f"to {service}/packs" in first.stderr and TOKEN not in first.stdout + first.stderr
    (row,) = submitted(tmp_path)
    assert row[0] == sha and row[1] == "tiny" and row[2] == 1
    (board_row,) = _board(tmp_path / "clkt.toml")["rows"]
    assert (board_row["target"], board_row["track"]) == ("tiny (submitted)", "submitted")
    assert board_row["submissions"][0]["pack_sha256"] == sha
    before = store_dump(tmp_path)
    for again, url in (("pack.tar.gz", service), ("pack", f"{service}/packs/")):  # one pack, either form or address
        res = await _submit("--url", url, str(tmp_path / again))
        assert res.returncode == 0, res.stderr
        assert f"pack {sha[:12]} (tiny on " in res.stdout and "was submitted before: nothing changed" in res.stdout
    assert store_dump(tmp_path) == before


def test_a_folder_is_sent_as_the_archive_clkt_evaluate_writes(tmp_path: Path) -> None:
    make_pack(tmp_path / "pack")
    make_pack(tmp_path / "pack.tar.gz")
    assert upload.upload_body(tmp_path / "pack") == (tmp_path / "pack.tar.gz").read_bytes()
    names = (MANIFEST_FILE, PREDICTIONS_FILE, METRICS_FILE)
    assert upload.upload_body(tmp_path / "pack") == archive_bytes({n: (tmp_path / "pack" / n).read_bytes() for n in names})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_REFUSED: list[tuple[str, Callable[[Path, str], list[str]], str]] = [
    ("a pack the verifier refuses", lambda t, u: ["--url", u, _pack(t, snapshot={"id": "tiny-2025-06-ffffffffffff"})],
     "refused the pack (HTTP 400): pack the upload: snapshot tiny-2025-06-ffffffffffff is not one of this store's"),
    ("a question answered twice", lambda t, u: ["--url", u, _pack(t, preds=rows() + rows()[:1], name="twice.tar.gz")],
     "refused the pack (HTTP 400): "),
    ("a path that is not there", lambda t, u: ["--url", u, str(t / "nowhere")], "no pack at "),
    ("not a pack", lambda t, u: ["--url", u, _file(t / "pack.zip")], "is neither a pack folder nor a .tar.gz"),
    ("not an address", lambda t, u: ["--url", "ftp://example.org", _pack(t)], "an http:// or https:// address"),
    ("a user in the address", lambda t, u: ["--url", u.replace("//", "//me:pw@"), _pack(t)], "no user or password"),
    ("--url with --reproduce", lambda t, u: ["--url", u, "--reproduce", "3", _pack(t)],
     "--url uploads a pack to a service; --reproduce re-runs one"),
    ("--token-env without --url", lambda t, u: ["--token-env", "OTHER", _pack(t)], "--token-env is an option of --url"),
    ("a token as --token-env", lambda t, u: ["--url", u, "--token-env", f"{TOKEN}-x", _pack(t)],
     "--token-env takes the NAME of an environment variable"),
]


def _pack(tmp: Path, *, name: str = "pack.tar.gz", **kw: object) -> str:
    make_pack(tmp / name, **kw)  # type: ignore[arg-type]
    return str(tmp / name)


def _file(path: Path) -> str:
    path.write_bytes(b"PK")
    return str(path)


@pytest.mark.parametrize(("case", "args", "line"), _REFUSED, ids=[c[0] for c in _REFUSED])
async def test_a_bad_upload_is_one_line_and_changes_nothing(tmp_path: Path, service: str, case: str,
                                                            args: Callable[[Path, str], list[str]], line: str) -> None:
    before = store_dump(tmp_path)
    got = _one_line(await _submit(*args(tmp_path, service)))
    assert line in got, got
    assert store_dump(tmp_path) == before and submitted(tmp_path) == []


async def test_no_token_or_a_wrong_one_is_one_line(tmp_path: Path, service: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pack = _pack(tmp_path)
    before = store_dump(tmp_path)
    monkeypatch.delenv(ENV)
    got = _one_line(await _submit("--url", service, pack))
    assert f"no intake token: the environment variable {ENV} is unset or empty" in got
    monkeypatch.setenv("MY_TOKEN", "")
    assert "MY_TOKEN is unset or empty" in _one_line(await _submit("--url", service, "--token-env", "MY_TOKEN", pack))
    monkeypatch.setenv("MY_TOKEN", "wrong-token-abcdef")
    got = _one_line(await _submit("--url", service, "--token-env", "MY_TOKEN", pack), "wrong-token-abcdef")
    assert "refused the upload (HTTP 401): an upload needs the intake token" in got and "$MY_TOKEN" in got
    monkeypatch.setenv("MY_TOKEN", TOKEN)  # the right token under another name: taken
    ok = await _submit("--url", service, "--token-env", "MY_TOKEN", pack)
    assert ok.returncode == 0 and TOKEN not in ok.stdout + ok.stderr
    assert store_dump(tmp_path) != before and len(submitted(tmp_path)) == 1


async def test_too_large_unreachable_or_no_intake_is_one_line(tmp_path: Path, stored: Store) -> None:
    pack = _pack(tmp_path)
    before = store_dump(tmp_path)
    small = await _serve(stored, max_bytes=256)
    try:
        got = _one_line(await _submit("--url", str(small.make_url("")), pack))
        assert "refused the upload (HTTP 413): the pack's " in got and "256 bytes ([http] intake_max_bytes)" in got
    finally:
        await small.close()
    got = _one_line(await _submit("--url", f"http://127.0.0.1:{_free_port()}", pack))
    assert "could not be reached (ClientConnectorError, 4 tries)" in got
    closed = await _serve(None)  # an endpoint without an intake token: read-only
    try:
        got = _one_line(await _submit("--url", str(closed.make_url("")), pack))
        assert "takes no upload (HTTP 405" in got and "intake_token_env" in got
    finally:
        await closed.close()
    assert store_dump(tmp_path) == before


@pytest.mark.parametrize(("answers", "requests", "line"), [
    ([503, 400], 2, "refused the pack (HTTP 400): nope"),  # a 5xx is tried again
    ([503, 502, 500], 3, "failed the upload 3 times (HTTP 500: nope)"),
    ([400], 1, "refused the pack (HTTP 400): nope"),  # a 4xx never
    ([429], 1, "refused the pack (HTTP 429): nope"),
    ([401], 1, "refused the upload (HTTP 401): nope; the token is read from $CLKT_INTAKE_TOKEN"),
])
async def test_a_5xx_is_tried_again_and_a_4xx_never(answers: list[int], requests: int, line: str) -> None:
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers["Authorization"])
        return web.json_response({"error": "nope"}, status=answers[min(len(seen), len(answers)) - 1])

    app = web.Application()
    app.router.add_post("/packs", handler)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        with pytest.raises(UserError) as e:
            await upload.post_pack(str(server.make_url("/packs")), b"x", token=TOKEN, token_env=ENV, tries=3,
                                   backoff_s=0.01)
    finally:
        await server.close()
    assert line in str(e.value) and TOKEN not in str(e.value)
    assert seen == [f"Bearer {TOKEN}"] * requests


async def test_metrics_that_do_not_match_are_recomputed_by_the_service_and_said_so(tmp_path: Path, service: str) -> None:
    lie = [r.model_copy(update={"correct": True}) for r in rows()]  # every base answer claimed right
    sha = make_pack(tmp_path / "pack", preds=lie)
    res = await _submit("--url", service, str(tmp_path / "pack"))
    assert res.returncode == 0, res.stderr
    assert "does not match its predictions (scorers.option-loglik.accuracy[0].accuracy: 1.0 != 0.5)" in res.stderr
    assert "the metrics recomputed by the service are stored" in res.stderr
    assert "2 answers' `correct` disagreed with their letter against the service's answer key" in res.stderr
    (row,) = submitted(tmp_path)
    assert row[0] == sha and row[2] == 0 and json.loads(row[3])["scorers"]["option-loglik"]["learn"]["en"]["base_accuracy"] == 0.5
