"""`clkt entities` filters against a real store, through the real CLI (`clkt.cli.main`, in this process)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from storage.engine import Store
from storage.models import Entity, EntityStatus
from tests.cli._in_process import Ran, clkt


async def _seed(tmp_path: Path) -> Path:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n[spec]\ntemporal_buffer_days = 0\n[[spec.targets]]\nname = "t"\nmodel = "x/y"\ncutoff = 2025-01-01\n')
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, store.transaction() as s:
        base = datetime(2024, 12, 1, tzinfo=UTC)
        for i in range(12):
            s.add(Entity(
                source="thesportsdb" if i % 2 else "tmdb", external_id=str(i), domain="sports" if i % 2 else "movies",
                name=f"entity {i}", occurred_at=base + timedelta(days=10 * i), content_hash="h",
                status=EntityStatus.ready if i % 3 == 0 else EntityStatus.discovered,
            ))
    return cfg


def _clkt(*args: str) -> Ran:
    return clkt(*args, columns=200)


async def test_entities_filters(tmp_path: Path) -> None:
    cfg = await _seed(tmp_path)
    res = _clkt("entities", "--config", str(cfg), "--json", "--domain", "sports", "--limit", "3")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(rows) == 3 and all(r["domain"] == "sports" for r in rows)
    assert [r["occurred_at"] for r in rows] == sorted((r["occurred_at"] for r in rows), reverse=True)

    res = _clkt("entities", "--config", str(cfg), "--json", "--fresh", "--limit", "100")
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert rows and all(r["occurred_at"] >= "2025-01-01" for r in rows)
    assert len(rows) == 8  # entities 0-3 (2024-12-01 .. 2024-12-31) are before the cutoff

    res = _clkt("entities", "--config", str(cfg), "--json", "--status", "ready", "--since", "2025-03-01")
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert rows and all(r["status"] == "ready" and r["occurred_at"] >= "2025-03-01" for r in rows)

    res = _clkt("entities", "--config", str(cfg), "--domain", "weather")
    assert res.returncode == 2 and "unknown domain" in res.stderr
    res = _clkt("entities", "--config", str(cfg))
    assert res.returncode == 0 and "entity 11" in res.stdout


async def test_entities_says_how_many_matched(tmp_path: Path) -> None:
    cfg = await _seed(tmp_path)
    res = _clkt("entities", "--config", str(cfg), "--limit", "2")
    assert res.returncode == 0, res.stderr
    assert "showing 2 of 12 entities" in res.stdout
    res = _clkt("entities", "--config", str(cfg), "--domain", "sports", "--status", "ready", "--since", "2025-02-01")
    assert "1 entity" in res.stdout and "1 entities" not in res.stdout  # entity 9 (3 is ready too, but earlier)


def test_help_shows_choices_not_bool_noise() -> None:
    res = _clkt("entities", "--help")
    assert res.returncode == 0 and "<bool>" not in res.stdout, res.stdout
    flat = " ".join(res.stdout.split())
    for value in ("movies", "sports", "discovered", "ready"):
        assert value in flat, res.stdout
