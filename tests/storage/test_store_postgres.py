"""The store tests against PostgreSQL (asyncpg) when CLKT_TEST_PG_URL is set (`.ci/run` starts one).

Same code, other URL: migrations from empty, the claim queue's exclusivity (FOR UPDATE SKIP LOCKED),
expiry, capped attempts and release.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from storage.engine import Store
from tests.storage import test_claim as claim_tests
from tests.storage import test_publish as publish_tests

PG_URL = os.environ.get("CLKT_TEST_PG_URL")
pytestmark = pytest.mark.skipif(not PG_URL, reason="CLKT_TEST_PG_URL not set (no PostgreSQL server for this run)")


async def _reset(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    assert PG_URL
    await _reset(PG_URL)
    yield PG_URL


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[Store]:
    async with Store(url=pg_url) as s:
        yield s


async def test_pg_migrations_from_empty(pg_store: Store) -> None:
    async with pg_store.session() as s:
        names = {r[0] for r in (await s.execute(text("SELECT tablename FROM pg_tables WHERE schemaname='public'"))).all()}
    assert {"entity", "task", "gpu_job", "snapshot", "question_result", "alembic_version"} <= names


async def test_pg_enqueue_is_idempotent(pg_store: Store) -> None:
    await claim_tests.test_enqueue_is_idempotent(pg_store)


async def test_pg_concurrent_claimers_never_share_a_row(pg_url: str) -> None:
    await claim_tests.test_concurrent_claimers_never_share_a_row(pg_url, 0)


async def test_pg_expired_lease_is_reclaimed(pg_store: Store) -> None:
    await claim_tests.test_expired_lease_is_reclaimed(pg_store)


async def test_pg_capped_attempts(pg_store: Store) -> None:
    await claim_tests.test_capped_attempts_end_in_failed_with_last_error(pg_store)


async def test_pg_lease_expiring_on_last_attempt(pg_store: Store) -> None:
    await claim_tests.test_lease_expiring_on_last_attempt_becomes_failed(pg_store)


async def test_pg_release_owner(pg_store: Store) -> None:
    await claim_tests.test_release_owner_refunds_attempts(pg_store)



async def test_pg_publish_queue(pg_store: Store) -> None:
    await publish_tests.test_the_queue_enqueues_once_claims_with_a_lease_and_asks_again(pg_store)


async def test_pg_publish_hub_failures(pg_store: Store) -> None:
    await publish_tests.test_a_hub_failure_spends_no_attempt_other_failures_do(pg_store)


async def test_pg_publish_lease_recovery(pg_store: Store) -> None:
    await publish_tests.test_leases_of_dead_or_stopping_owners_come_back_refunded(pg_store)


async def test_pg_publish_revisions_and_retractions(pg_store: Store) -> None:
    await publish_tests.test_revisions_and_retractions(pg_store)
