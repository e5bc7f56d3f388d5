"""The in-context track's test wiring: an API target on the fake OpenAI-compatible server, the tiny snapshot."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from pydantic import SecretStr

from clkt.config import AgentSettings, ProviderSettings, TargetSettings
from clkt.incontext import ApiAsker, InContextTrack
from clkt.snapshots.layout import SnapshotData, load_snapshot_dir
from clkt.targets.api import ApiTargets
from storage.engine import Store
from storage.llm_cache import SqlCallCache
from tests.inject._fixtures import write_tiny_snapshot

__all__ = ["api_target", "api_track", "fake_agents", "no_secrets", "tiny"]


def no_secrets(_env: str | None) -> SecretStr | None:
    return None


def fake_agents(base_url: str) -> AgentSettings:
    """A provider `fake` on the fake server: one try per call (a failure is the track's to handle)."""
    return AgentSettings(providers={"fake": ProviderSettings(base_url=base_url, rpm=100_000, max_attempts=1,
                                                              timeout_s=5)})


def api_target(*, context_tokens: int | None = None) -> TargetSettings:
    return TargetSettings(name="api-t", model="fake:tiny-chat", backend="api", kind="instruct",
                          cutoff=date(2024, 1, 1), context_tokens=context_tokens)


def tiny(tmp_path: Path) -> SnapshotData:
    return load_snapshot_dir(write_tiny_snapshot(tmp_path / "snapshot"), verify_hashes=False)


def api_track(store: Store, snapshot: SnapshotData, base_url: str, *, target: TargetSettings | None = None,
              max_new_tokens: int = 16) -> InContextTrack:
    """The API target's track over the tiny snapshot, its calls cached in `store`, one call at a time (the fake's
    scripted answers come in order)."""
    target = target or api_target()
    api = ApiTargets.build(agents=fake_agents(base_url), secret=no_secrets, cache=SqlCallCache(store))
    asker = ApiAsker(api=api, target=target, max_new_tokens=max_new_tokens, concurrency=1)
    return InContextTrack(store=store, snapshot=snapshot, target=target.name, asker=asker, context_langs=["en", "fr"],
                          max_new_tokens=max_new_tokens)
