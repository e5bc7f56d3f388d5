"""What a command that starts work checks before it creates, writes or opens anything (`clkt run`, `run_daemon.py`,
`clkt status`, `clkt incontext`): every error of the configuration that can be known at start, as one
`ConfigError` (one line, exit 2), while no store, data directory, log file or port exists yet.

Checked, in this order (the first failure is the one reported):
- every target has a knowledge cutoff, its own or a known one (`clkt.cutoff.check_cutoffs`);
- every API target's provider is known and its key is in the environment (`clkt.targets.api.check_api_targets`);
- every local target can be loaded without a download: a bundled model is installed, a folder exists and holds a
  transformers model, a Hugging Face id is in the local cache (`clkt.targets.loader.check_local_target`);
- for the daemon: the agents' LLM backend resolves (every role's model and key, `clkt.pipeline.backends`) and
  publishing by itself has its Hub token (`publish_token`).

What the config's own validation refuses (unknown strategies, a `<provider>:<model>` string without
`backend = "api"`, a bad cutoff date) is refused earlier, by `clkt.config.load_settings`. What only the store can
tell (a target name that now names another model) is refused once the store is open, before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from clkt.errors import ConfigError, ModelUnavailableError

if TYPE_CHECKING:
    from pydantic import SecretStr

    from clkt.config import Settings, TargetSettings

__all__ = ["check_start", "chosen_targets", "publish_token"]


def chosen_targets(settings: Settings, names: Sequence[str] | None) -> list[TargetSettings]:
    """The spec's targets named by `names` (all when None); a name the spec lacks is a `ConfigError`."""
    targets = settings.spec.targets
    unknown = sorted(set(names or ()) - {t.name for t in targets})
    if unknown:
        raise ConfigError("--target", f"no target {', '.join(unknown)} in the spec (targets: "
                          f"{', '.join(t.name for t in targets)})")
    return [t for t in targets if names is None or t.name in names]


def publish_token(settings: Settings) -> SecretStr:
    """The Hub token publishing by itself uses; a `ConfigError` when it is not in the environment."""
    token = settings.secret(settings.publish.token_env)
    if token is None:
        raise ConfigError("publish.token_env", f"{settings.publish.token_env} is not set: publishing by itself "
                          "(publish.on_freeze / on_report) needs a Hub token with write access in that variable")
    return token


def _check_targets(settings: Settings, targets: Sequence[TargetSettings]) -> None:
    from clkt.targets.api import check_api_targets, is_api_target
    from clkt.targets.loader import check_local_target

    if any(is_api_target(t) for t in targets):
        check_api_targets(targets, settings.agents, secret=settings.secret)
    chosen = {t.name for t in targets}
    for i, t in enumerate(settings.spec.targets):
        if t.name in chosen:
            try:
                check_local_target(t, settings.data_dir)
            except ModelUnavailableError as e:
                raise ConfigError(f"spec.targets[{i}].model ({t.name})", str(e)) from None


def check_start(settings: Settings, *, targets: Sequence[str] | None = None, daemon: bool = True) -> None:
    """Every error of `settings` a command can know before it starts (see the module): `ConfigError` for the first.
    `targets`: only these targets are checked (a name the spec lacks is an error too); `daemon`: the daemon's own
    needs too (the agents' LLM backend, publishing's token)."""
    from clkt.cutoff import check_cutoffs

    check_cutoffs(settings.spec)
    _check_targets(settings, chosen_targets(settings, targets))
    if daemon:
        from clkt.pipeline.backends import check_backend_config

        check_backend_config(settings.agents, secret=settings.secret)
        if settings.publish.automatic:
            publish_token(settings)
