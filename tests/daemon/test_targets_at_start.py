"""`clkt run` with a configuration that gives a target name of the store another model: one clear line, exit 2,
nothing started (no endpoint, no info file, the registry unchanged)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

from clkt.config import SpecSettings, TargetSettings
from storage.engine import Store
from storage.targets import list_targets, sync_targets
from tests.conftest import REPO


def _folder(path: Path) -> Path:
    """A model folder as far as the start-up check looks (`clkt.preflight`: it exists, with a config.json)."""
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    return path


def _config(tmp_path: Path, model: str) -> Path:
    cfg = tmp_path / f"clkt-{Path(model).name}.toml"
    cfg.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[http]\nport = 0\n[gpu]\nenabled = false\n'
        f'[[spec.targets]]\nname = "t1"\nmodel = "{model}"\ncutoff = 2024-01-01\n'
        f'[[spec.targets]]\nname = "t2"\nmodel = "{_folder(tmp_path / "models" / "other")}"\ncutoff = 2024-01-01\n',
        encoding="utf-8",
    )
    return cfg


def test_clkt_run_refuses_a_renamed_target_and_starts_nothing(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'data' / 'clkt.db'}"

    async def seed() -> None:  # what an earlier daemon of this store recorded: t1 is /models/a
        async with Store(url=url) as store, store.transaction() as s:
            spec = SpecSettings(targets=[TargetSettings(name="t1", model="/models/a", cutoff=date(2024, 1, 1))])
            from clkt.roster import identities

            await sync_targets(s, identities(spec))

    asyncio.run(seed())
    b = _folder(tmp_path / "models" / "b")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "clkt.cli", "run", "--config", str(_config(tmp_path, str(b)))],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("clkt:")]
    assert proc.returncode == 2, proc.stderr
    assert len(ours) == 1 and "Traceback" not in proc.stderr
    assert "spec.targets" in ours[0] and "'t1' is model '/models/a' in this store" in ours[0] and str(b) in ours[0]
    assert not (tmp_path / "data" / "daemon.json").exists()  # no endpoint, no services

    async def registry() -> list[tuple[str, str]]:
        async with Store(url=url) as store, store.session() as s:
            return [(t.name, t.model) for t in await list_targets(s)]

    assert asyncio.run(registry()) == [("t1", "/models/a")]  # t2 was not recorded either: nothing half-written
