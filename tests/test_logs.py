"""`clkt.logs.setup_logging`: the libraries' chatter stays below our own level (alembic's seven "setup plugin"
INFO lines at every start of the store), and is heard when our level is DEBUG.
(`clkt/logs.py` is a top-level module of clkt: its tests are `tests/test_logs.py`.)"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clkt.logs import LIBRARY_LOGGERS, setup_logging
from tests.conftest import REPO

_START_THE_STORE = """
import asyncio, sys
from clkt.logs import setup_logging
setup_logging(sys.argv[1])
import logging
logging.getLogger("clkt.test").info("ours at INFO")
from storage.engine import Store
async def main() -> None:
    async with Store(url=f"sqlite+aiosqlite:///{sys.argv[2]}"):
        pass
asyncio.run(main())
"""


def _start_store(level: str, db: Path) -> list[str]:
    res = subprocess.run([sys.executable, "-c", _START_THE_STORE, level, str(db)], capture_output=True, text=True,
                         cwd=REPO, timeout=120, check=True)
    return res.stderr.splitlines()


def test_starting_the_store_logs_no_alembic_info(tmp_path: Path) -> None:
    lines = _start_store("INFO", tmp_path / "a.db")  # a fresh process: alembic logs its plugins once per process
    assert any("clkt.test: ours at INFO" in ln for ln in lines), lines
    assert not [ln for ln in lines if "alembic" in ln], lines
    assert (tmp_path / "a.db").exists()  # the store was created and migrated


def test_at_debug_the_libraries_are_heard(tmp_path: Path) -> None:
    lines = _start_store("DEBUG", tmp_path / "b.db")
    assert any("INFO    alembic.runtime.plugins: setup plugin" in ln for ln in lines), lines


@pytest.fixture
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {n: logging.getLogger(n).level for n in LIBRARY_LOGGERS}
    yield
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)
    for n, lv in levels.items():
        logging.getLogger(n).setLevel(lv)


@pytest.mark.usefixtures("_restore_logging")
@pytest.mark.parametrize(
    ("ours", "libraries"),
    [("INFO", logging.WARNING), ("WARNING", logging.WARNING), ("ERROR", logging.ERROR), ("DEBUG", logging.NOTSET)],
)
def test_library_levels_follow_ours(ours: str, libraries: int) -> None:
    import io

    buf = io.StringIO()
    setup_logging(ours, stream=buf)
    assert {logging.getLogger(n).level for n in LIBRARY_LOGGERS} == {libraries}
    logging.getLogger("httpx").info("HTTP Request: GET http://127.0.0.1/ 200 OK")
    logging.getLogger("alembic.runtime.plugins").info("setup plugin x")
    assert ("setup plugin x" in buf.getvalue()) is (ours == "DEBUG")
    assert ("HTTP Request" in buf.getvalue()) is (ours == "DEBUG")


@pytest.mark.usefixtures("_restore_logging")
def test_the_daemon_log_file_rotates_within_its_size_and_count(tmp_path: Path) -> None:
    """`[retention] daemon_log`: a rotating file beside stderr (redacted like it), at most max_bytes x (backups + 1)."""
    import io

    from pydantic import SecretStr

    from clkt.config import RetentionSettings

    ret = RetentionSettings(daemon_log=Path("logs/clkt.log"), daemon_log_max_bytes=64 * 1024, daemon_log_backups=2)
    log_file = ret.log_file(tmp_path)
    assert log_file == tmp_path / "logs" / "clkt.log"
    buf = io.StringIO()
    setup_logging("INFO", secrets=[SecretStr("hunter2-secret-key")], stream=buf, log_file=log_file,
                  max_bytes=ret.daemon_log_max_bytes, backups=ret.daemon_log_backups)
    log = logging.getLogger("clkt.test")
    for i in range(3000):  # ~300 KB of lines: the file rotates several times
        log.info("line %05d with the key hunter2-secret-key and some padding to make it long enough", i)
    for h in logging.getLogger().handlers:
        h.flush()
    files = sorted(p.name for p in log_file.parent.iterdir())
    assert files == ["clkt.log", "clkt.log.1", "clkt.log.2"]  # the newest, and its 2 backups: no more
    sizes = [p.stat().st_size for p in log_file.parent.iterdir()]
    assert max(sizes) <= ret.daemon_log_max_bytes and sum(sizes) <= ret.log_cap_bytes
    text = log_file.read_text(encoding="utf-8")
    assert "line 02999" in text and "hunter2-secret-key" not in text and "***" in text  # redacted like stderr
    assert "line 02999" in buf.getvalue()
    setup_logging("INFO", stream=buf)  # set up again without a file: the file handler is closed, not leaked
    assert not any(isinstance(h, logging.FileHandler) for h in logging.getLogger().handlers)
