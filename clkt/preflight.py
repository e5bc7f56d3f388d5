"""What a command that starts work checks before it creates, writes or opens anything (`clkt run`, `run_daemon.py`,
`clkt status`, `clkt incontext`, `clkt worker`): every error of the configuration that can be known at start, as
one `ConfigError` (one line, exit 2), while no store, data directory, log file or port exists yet.

Checked, in this order (the first failure is the one reported):
- every target has a knowledge cutoff, its own or a known one (`clkt.cutoff.check_cutoffs`);
- every API target's provider is known and its key is in the environment (`clkt.targets.api.check_api_targets`);
- every local target can be loaded without a download: a bundled model is installed, a folder exists and holds a
  transformers model, a Hugging Face id is in the local cache (`clkt.targets.loader.check_local_target`);
- for the daemon: the agents' LLM backend resolves (every role's model and key, `clkt.pipeline.backends`), every
  judge of the open track's jury resolves (`[agents.jury]`: its provider known, its key in the environment) and
  publishing by itself has its Hub token (`publish_token`).

`clkt worker` (`check_worker`) needs neither API keys nor the agents: its local targets must load without a
download, and each device it trains on must exist here (`cuda:N` on a machine with N or fewer CUDA devices, any
CUDA device on a machine without one); with the Ray engine the devices are the cluster's, not checked here.

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

__all__ = ["check_jury", "check_start", "check_worker", "chosen_targets", "publish_token"]


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


def _check_local_targets(settings: Settings, targets: Sequence[TargetSettings]) -> None:
    """Each local target of `targets` loads without a download (`check_local_target`; other backends pass)."""
    from clkt.targets.loader import check_local_target

    chosen = {t.name for t in targets}
    for i, t in enumerate(settings.spec.targets):
        if t.name in chosen:
            try:
                check_local_target(t, settings.data_dir)
            except ModelUnavailableError as e:
                raise ConfigError(f"spec.targets[{i}].model ({t.name})", str(e)) from None


def _check_targets(settings: Settings, targets: Sequence[TargetSettings]) -> None:
    from clkt.targets.api import check_api_targets, is_api_target

    if any(is_api_target(t) for t in targets):
        check_api_targets(targets, settings.agents, secret=settings.secret)
    _check_local_targets(settings, targets)


def check_jury(settings: Settings) -> None:
    """Every judge of `[agents.jury]` resolves like an agent role's model (its provider, its key): a `ConfigError`
    naming the judge and the variable otherwise (no jury: nothing to check)."""
    from agents.factory import resolve_model

    for i, judge in enumerate(settings.agents.jury.judges):
        resolve_model(settings.agents, judge, key=f"agents.jury.judges[{i}]", secret=settings.secret)


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
        check_jury(settings)
        if settings.publish.automatic:
            publish_token(settings)


def _check_device(device: str, cuda_count: int) -> None:
    if device in ("cpu", "auto"):
        return
    if device == "cuda" or device.startswith("cuda:"):
        index = 0 if device == "cuda" else device[5:]
        if not str(index).isdigit():
            raise ConfigError("gpu.devices", f"{device!r} is not a device (cpu, auto, cuda, cuda:N)")
        if int(index) >= cuda_count:
            have = f"{cuda_count} CUDA device(s)" if cuda_count else "no CUDA device"
            raise ConfigError("gpu.devices", f"device {device}: this machine has {have}")
        return
    raise ConfigError("gpu.devices", f"{device!r} is not a device (cpu, auto, cuda, cuda:N)")


def check_worker(settings: Settings, devices: Sequence[str] | None = None) -> None:
    """What `clkt worker` can know at start (see the module): its local targets and its devices (`devices`, else
    `[gpu] devices`); `ConfigError` for the first problem."""
    _check_local_targets(settings, settings.spec.targets)  # no API key: a worker never trains an API target
    if settings.gpu.engine != "local":
        return
    wanted = list(devices or settings.gpu.devices)
    cuda_count = 0
    if any(d != "cpu" for d in wanted):
        import torch

        cuda_count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    for d in wanted:
        _check_device(d, cuda_count)
