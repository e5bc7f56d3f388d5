"""Root fixtures: an isolated environment, a real SQLite store in tmp_path (its schema migrated once per session,
`tests/store_template.py`), the condition waiters (from `tests/waiting.py`); and which tests are `slow` (a model
load or a daemon process): `make test-fast` runs the others, `make test` all of them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from clkt import clock
from storage import engine
from storage.engine import Store
from tests.fakes.openai_server import FakeOpenAI
from tests.store_template import migrated_schema, replaying_upgrade
from tests.waiting import handles_signal as handles_signal  # the condition waiters: the tests import them from here
from tests.waiting import wait_for as wait_for
from tests.waiting import wait_until as wait_until

# Property tests time no example: on a loaded 2-core machine the first example (babel's data, a lazy import) can
# pass hypothesis's 200 ms deadline, and a deadline is a speed target (bench/), not a correctness check.
settings.register_profile("clkt", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("clkt")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


# What makes a test slow, marked at collection (besides the explicit `@pytest.mark.slow` of tests that start a
# daemon or load a model in their own body): a fixture that converts or loads the embedded target model, or a
# folder whose every test runs the daemon process.
SLOW_FIXTURES = {
    "models_data_dir": "the embedded target model (converted once, loaded by the test)",
    "shared_models_dir": "the embedded target model (converted once, loaded by the test)",
}
SLOW_FOLDERS = {
    "daemon": "the daemon process (clkt run / run_daemon.py) in a subprocess",
}


def slow_reason(item: pytest.Item) -> str | None:
    """Why `item` is slow (None: it is not), from its fixtures and its folder."""
    for name in getattr(item, "fixturenames", ()):
        if name in SLOW_FIXTURES:
            return SLOW_FIXTURES[name]
    parts = item.path.relative_to(REPO / "tests").parts if item.path.is_relative_to(REPO / "tests") else ()
    if len(parts) > 1 and parts[0] in SLOW_FOLDERS:
        return SLOW_FOLDERS[parts[0]]
    return None


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (`make test-fast` runs one worker per core) each worker gets a PostgreSQL database of its
    own beside `CLKT_TEST_PG_URL`'s (created once, emptied by each test as before): the store tests reset the
    public schema, which two workers must not do to each other."""
    worker, url = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("CLKT_TEST_PG_URL")
    if worker and url:
        import asyncio

        import tests.storage._urls as urls

        os.environ["CLKT_TEST_PG_URL"] = urls.PG_URL = asyncio.run(urls.worker_database(url, worker))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is None and (reason := slow_reason(item)) is not None:
            item.add_marker(pytest.mark.slow(reason=reason))


@pytest.fixture(autouse=True)
def _isolate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(os.environ):
        if k.startswith("CLKT_"):
            monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _restore_clock() -> Iterator[None]:
    """A test that installs a clock (`clkt.clock.install`) never leaves it to the next one."""
    before = clock.current()
    yield
    clock.install(before)


# The tests of the migrations themselves: a new store of theirs is migrated by alembic, as in production. Every
# other new SQLite store of the session (a test's, a module fixture's) gets the schema alembic made once this
# session (`_migrated_once`).
REAL_MIGRATIONS = {"storage/test_engine.py", "storage/test_views.py", "storage/test_store_postgres.py"}
_REAL_UPGRADE = engine._upgrade


@pytest.fixture(scope="session", autouse=True)
def _migrated_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    schema: list[tuple[str, ...]] = []  # made by the first new store of the session: a run without one never migrates

    def upgrade(sync_conn: object) -> None:
        if not schema:
            schema.append(migrated_schema(tmp_path_factory.mktemp("store-template") / "template.db", real=_REAL_UPGRADE))
        replaying_upgrade(schema[0], _REAL_UPGRADE)(sync_conn)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "_upgrade", upgrade)
        yield


@pytest.fixture(autouse=True)
def _real_migrations(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    tests = REPO / "tests"
    if request.node.path.is_relative_to(tests) and request.node.path.relative_to(tests).as_posix() in REAL_MIGRATIONS:
        monkeypatch.setattr(engine, "_upgrade", _REAL_UPGRADE)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}"


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    async with Store(url=db_url) as s:
        yield s


@pytest.fixture(scope="session")
def shared_models_dir() -> Path:
    """A `models/` folder that survives between tests and runs, so the bundled GGUF converts once."""
    root = Path(os.environ.get("CLKT_TEST_MODELS_DIR") or "/tmp/clkt-test-data") / "models"
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture
def loopback_models() -> Iterator[None]:
    """Model requests allowed for the test (`ALLOW_MODEL_REQUESTS` stays off elsewhere): only the fake OpenAI-compatible
    server on 127.0.0.1 is reached."""
    from pydantic_ai.models import override_allow_model_requests

    with override_allow_model_requests(True):
        yield


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    """The fake OpenAI-compatible server on loopback, keeping every request body (`stats.requests`)."""
    async with FakeOpenAI(record_requests=True) as s:
        yield s
