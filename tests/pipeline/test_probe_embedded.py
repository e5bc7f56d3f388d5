"""One real probe of a fixture entity with the embedded target model (Gemma 3 270M on CPU)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from sqlalchemy import select

from clkt.config import EMBEDDED_TARGET, Settings
from clkt.services import agent_backend
from storage.engine import Store
from storage.models import Probe
from tests.documents.samples import LIVERPOOL_SWANSEA
from tests.pipeline._harness import FINAL, add_entity, running, settle

_MODELS_DIR = Path(os.environ.get("CLKT_TEST_MODELS_DIR") or Path(tempfile.gettempdir()) / "clkt-test-data")


@pytest.mark.slow
async def test_embedded_target_probe_is_stored_and_judged(store: Store) -> None:
    _MODELS_DIR.mkdir(parents=True, exist_ok=True)  # shared with tests/targets: the model converts once
    settings = Settings(
        data_dir=_MODELS_DIR,
        agents={"backend": "template", "questions_per_entity": 2, "probe_max_new_tokens": 24},
        spec={"languages": ["en", "fr"], "targets": [EMBEDDED_TARGET.model_dump()]},
        gpu={"devices": ["cpu"]},
        daemon={"poll_interval_s": 0.05},
    )
    await add_entity(store, LIVERPOOL_SWANSEA, "Liverpool vs Swansea", domain="sports", external_id="m1")
    async with running(settings, store, agent_backend(settings, store=store), None) as _:  # the target is asked
        final = await settle(store, 1, timeout=600)
    assert set(final.values()) <= FINAL
    async with store.session() as s:
        probes = (await s.execute(select(Probe))).scalars().all()
    assert 1 <= len(probes) <= 2
    assert {p.target_model for p in probes} == {"gemma-3-270m"}
    assert all(p.response.strip() for p in probes)  # the base model completed the summary prompt
    assert all(p.prompt.endswith(("Summary:", "Résumé :")) for p in probes)
