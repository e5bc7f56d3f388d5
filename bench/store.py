"""Store benchmark: 1,000,000 entities, then `clkt entities --fresh --domain sports --limit 50` query
latency (p50/p95, goal p95 < 20 ms) and claim throughput with 4 concurrent claimers (rows/s).

    python bench/store.py [--entities 1000000] [--tasks 4000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert

from storage.claim import claim, complete
from storage.engine import Store
from storage.entities import EntityQuery, query_entities
from storage.models import Entity, EntityStatus, LeaseStatus, Stage, Task
from storage.types import stored_id, utcnow

DOMAINS = ["movies", "music", "sports", "disasters"]


async def fill(store: Store, n: int) -> float:
    t0 = time.perf_counter()
    base = datetime(2023, 1, 1, tzinfo=UTC)
    now = utcnow()
    batch = 20_000
    for start in range(0, n, batch):
        rows = [
            dict(
                source=f"src{i % 7}", external_id=str(i), domain=DOMAINS[i % 4], name=f"entity {i}",
                occurred_at=base + timedelta(minutes=(i * 1.7) % (3 * 365 * 24 * 60)), payload={"i": i}, facts={},
                content_hash=f"{i:064x}", status=EntityStatus.discovered, discovered_at=now, updated_at=now,
            )
            for i in range(start, min(n, start + batch))
        ]
        async with store.transaction() as s:
            await s.execute(insert(Entity), rows)
    return time.perf_counter() - t0


async def query_latency(store: Store, rounds: int) -> list[float]:
    fresh = datetime(2025, 6, 1, tzinfo=UTC)
    q = EntityQuery(domain="sports", occurred_after=fresh, limit=50)
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        async with store.session() as s:
            rows = await query_entities(s, q)
        out.append((time.perf_counter() - t0) * 1000)
        assert len(rows) == 50
    return out


async def claim_throughput(url: str, n_tasks: int) -> float:
    async with Store(url=url) as store:
        now = utcnow()
        async with store.transaction() as s:
            await s.execute(
                insert(Task),
                [dict(stage=Stage.generate, entity_id=1 + (i % 1000), key=str(i), status=LeaseStatus.pending, attempts=0,
                      max_attempts=3, not_before=now, created_at=now, updated_at=now) for i in range(n_tasks)],
            )
    stores = [Store(url=url) for _ in range(4)]
    for st in stores:
        await st.initialize()
    done = [0] * 4

    async def worker(k: int) -> None:
        st = stores[k]
        while True:
            async with st.transaction() as s:
                rows = await claim(s, Task, owner=f"w{k}", lease=timedelta(minutes=5), limit=1,
                                   where=(Task.stage == Stage.generate,))
            if not rows:
                return
            async with st.transaction() as s:
                await complete(s, Task, stored_id(rows[0].id), owner=f"w{k}")
            done[k] += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(k) for k in range(4)))
    dt = time.perf_counter() - t0
    for st in stores:
        await st.close()
    assert sum(done) == n_tasks
    return n_tasks / dt


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=1_000_000)
    ap.add_argument("--tasks", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        url = f"sqlite+aiosqlite:///{Path(d) / 'bench.db'}"
        async with Store(url=url) as store:
            fill_s = await fill(store, args.entities)
            await query_latency(store, 20)  # warm the page cache
            lat = sorted(await query_latency(store, args.rounds))
        rate = await claim_throughput(url, args.tasks)
    p50 = statistics.median(lat)
    p95 = lat[int(0.95 * len(lat)) - 1]
    figures = {
        "entities": args.entities, "insert_s": round(fill_s, 1), "insert_rows_per_s": round(args.entities / fill_s),
        "query_p50_ms": round(p50, 2), "query_p95_ms": round(p95, 2), "claim_rows_per_s_4_claimers": round(rate, 1),
    }
    goals = {"query_p95_ms": "< 20"}
    print(json.dumps({"bench": "store", "figures": figures, "goals": goals, "met": p95 < 20}))


if __name__ == "__main__":
    asyncio.run(main())
