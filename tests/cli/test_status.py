"""`clkt status` shows LLM cost as a table per stage and model (through the real CLI, `clkt.cli.main` in this process), with the n of
accepted questions beside $ per question and a warning when n is too small."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from clkt.status import collect_status, cost_table
from storage.engine import Store
from storage.models import LlmCall
from storage.types import utcnow
from tests.cli._in_process import Ran, clkt


async def _seed(tmp_path: Path, *, accepted: int = 0) -> Path:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'data_dir = "{tmp_path}"\n')
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, store.transaction() as s:
        rows = [("judge", "openai:gpt-4o-mini", True, 1000, 600, 0.001),
                ("judge", "openai:gpt-4o-mini", False, 1000, 0, 0.002),
                ("generate", "anthropic:claude-x[bold]", True, 3000, 0, 0.01)]
        for i, (stage, model, batch, inp, cached, usd) in enumerate(rows):
            s.add(LlmCall(key=f"{i:064d}", model=model, stage=stage, prompt_version="v1", output={},
                          input_tokens=inp, cached_input_tokens=cached, output_tokens=100, cost_usd=usd,
                          batch=batch, created_at=utcnow()))
    return cfg


def _clkt(*args: str) -> Ran:
    return clkt(*args, columns=220)


async def test_status_prints_the_cost_table(tmp_path: Path) -> None:
    cfg = await _seed(tmp_path)
    res = _clkt("status", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "LLM cost" in out and "Cost: {" not in out  # a table, not a JSON string
    judge = next(line for line in out.splitlines() if "judge" in line and "gpt-4o-mini" in line)
    assert "2" in judge and "2,000" in judge and "600" in judge and "50%" in judge and "$0.0030" in judge
    assert "claude-x[bold]" in out  # text, never markup
    assert "no accepted question yet" in out
    res = _clkt("status", "--config", str(cfg), "--json")
    stages = json.loads(res.stdout)["cost"]["stages"]
    assert {(st["stage"], st["batch_share"]) for st in stages} == {("judge", 0.5), ("generate", 1.0)}


async def test_cost_per_question_says_when_n_is_too_small(tmp_path: Path) -> None:
    await _seed(tmp_path)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        rep = await collect_status(store)
    cost = rep.cost.model_copy(update={"accepted_questions": 4})
    console = Console(width=220, record=True)
    console.print(cost_table(cost))
    text = console.export_text()
    assert "n=4, too few" in text and "$0.0033" in text  # 0.013 / 4 per accepted question, total row


async def test_the_status_json_keeps_its_keys_and_values(tmp_path: Path) -> None:
    """The report `/status` and `clkt status --json` emit: the same JSON as the dict-built report had (failed
    work as plain objects, the cost summary as JSON, the daemon's owner and restarts; `{}` with no daemon)."""
    from dataclasses import asdict

    from clkt.status import DaemonInfo
    from storage.enums import LeaseStatus, Stage
    from storage.llm_cache import cost_summary
    from storage.models import Entity, EntityStatus, Task
    from storage.status_counts import store_counts

    await _seed(tmp_path)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store:
        async with store.transaction() as s:
            e = Entity(source="tmdb", external_id="1", domain="movies", name="A film", content_hash="h",
                       occurred_at=utcnow(), status=EntityStatus.discovered)
            s.add(e)
            await s.flush()
            s.add(Task(stage=Stage.probe, entity_id=e.id or 0, key="m", status=LeaseStatus.failed, attempts=5,
                       last_error="boom"))
        rep = await collect_status(store, paused="budget", daemon=DaemonInfo(owner="me", restarts={"stage:probe": 2}))
        bare = await collect_status(store)
        async with store.session() as s:
            counts = await store_counts(s)
            cost = await cost_summary(s)
    got = rep.model_dump(mode="json")
    want = {
        "generated_at": got["generated_at"], "entities": counts.entities, "entities_by_domain": counts.entities_by_domain,
        "stages": counts.stages, "gpu_jobs": counts.gpu_jobs, "snapshots": counts.snapshots, "skipped": counts.skipped,
        "last_errors": [asdict(f) for f in counts.failures], "cost": cost.model_dump(mode="json"), "paused": "budget",
        "daemon": {"owner": "me", "restarts": {"stage:probe": 2}},
        "targets": {"targets": [], "snapshots": []},  # targets over time (clkt.status.TargetsStatus): none recorded
        "publish": {"tasks": {}, "open_tasks": [], "revisions": [], "retractions": 0},
        "gpu_engine": None,  # the local engine, or no consumer ran yet
        "knowledge": None,  # the known-rate curves: only when collected with the spec (`clkt status`, the pages)
        # where every entity is, per month of occurrence (clkt.snapshots.accounting): the one discovered entity
        "accounting": [{"month": utcnow().strftime("%Y-%m"), "pipeline": 1, "ready": 0, "frozen": 0, "carried": 0,
                        "waiting": 0, "dropped": {}}],
    }
    assert list(got) == list(want) and got == want
    assert got["last_errors"] == [{"stage": "probe", "entity_id": 1, "key": "m", "attempts": 5, "error": "boom"}]
    assert json.loads(rep.model_dump_json()) == got
    assert bare.model_dump(mode="json")["daemon"] == {} and bare.model_dump(mode="json")["paused"] is None
