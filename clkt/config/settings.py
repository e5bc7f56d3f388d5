"""`Settings`: the one typed configuration object, made of the sections; built once by an entry point
(`clkt.config.loader.load_settings`) and handed out section by section by the wiring.

Where its values come from, highest first: the `CLKT_*` environment (nested keys with `__`), the TOML
file(s) `load_settings` names (the user's file, then the demo profile under it when the file asks for
`offline_demo`), then each class's defaults. pydantic-settings merges them key by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars

from clkt.config.agents import AgentSettings
from clkt.config.publish import PublishSettings
from clkt.config.retention import RetentionSettings
from clkt.config.sections import DaemonSettings, GpuSettings, HttpSettings, ReplaySettings, SnapshotSettings
from clkt.config.sources import SourcesSettings
from clkt.config.spec import SpecSettings
from clkt.logs import redact

__all__ = ["LoadSources", "MappingEnvSource", "Settings", "settings_sources"]


class MappingEnvSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping instead of `os.environ`."""

    def __init__(self, settings_cls: type[BaseSettings], *, environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._environ, bool(self.case_sensitive), self.env_ignore_empty, self.env_parse_none_str)


@dataclass(frozen=True, kw_only=True)
class LoadSources:
    """The sources of one `load_settings` call: the environment it was given and its TOML files, highest first."""

    env: PydanticBaseSettingsSource
    files: tuple[PydanticBaseSettingsSource, ...] = ()


# set by `load_settings` around the construction of its Settings (a classmethod cannot take arguments)
settings_sources: ContextVar[LoadSources | None] = ContextVar("clkt_settings_sources", default=None)


class Settings(BaseSettings):
    """Everything the daemon needs, built once by an entry point; each part receives its own section(s)."""

    model_config = SettingsConfigDict(
        env_prefix="CLKT_", env_nested_delimiter="__", extra="forbid", frozen=True, allow_inf_nan=False
    )

    offline_demo: bool = False  # the embedded offline demonstration: says so loudly everywhere
    data_dir: Path = Path("clkt-data")  # the store, converted models, GPU job folders, reports (relative to the cwd)
    store_url: str | None = None  # None: sqlite+aiosqlite:///<data_dir>/clkt.db
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"  # of the daemon's log (stderr, and retention.daemon_log)
    http: HttpSettings = Field(default_factory=HttpSettings)
    sources: SourcesSettings = Field(default_factory=SourcesSettings)
    replay: ReplaySettings = Field(default_factory=ReplaySettings)
    agents: AgentSettings = Field(default_factory=AgentSettings)
    spec: SpecSettings = Field(default_factory=SpecSettings)
    snapshot: SnapshotSettings = Field(default_factory=SnapshotSettings)
    gpu: GpuSettings = Field(default_factory=GpuSettings)
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    publish: PublishSettings = Field(default_factory=PublishSettings)
    # resolved at load time from the env vars named by api_key_env; never dumped
    secrets: dict[str, SecretStr] = Field(default_factory=dict, exclude=True, repr=False)

    @model_validator(mode="after")
    def _simulated_clock_without_batches(self) -> Settings:
        # a provider batch found again after a restart is matched by the provider's (real) timestamps
        api_batches = self.agents.incontext_batched() and any(t.backend == "api" for t in self.spec.targets)
        if self.daemon.clock_start is not None and (api_batches or any(
            self.agents.batched(role) for role in ("judge", "generate", "verify", "translate")
        )):
            raise ValueError(
                "daemon.clock_start (a simulated calendar) cannot run provider batches (agents.mode / stage_modes "
                "'batch'): their timestamps are the provider's real ones"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # the environment overrides the keyword arguments, which override the TOML files of `load_settings`
        given = settings_sources.get()
        if given is not None:
            return (given.env, init_settings, *given.files)
        return (env_settings, init_settings)

    @property
    def resolved_store_url(self) -> str:
        return self.store_url or f"sqlite+aiosqlite:///{self.data_dir / 'clkt.db'}"

    def secret(self, env_name: str | None) -> SecretStr | None:
        """The value of the environment variable `env_name` as read at load time (a `SecretLookup`)."""
        if env_name is None:
            return None
        return self.secrets.get(env_name)

    def public_dump(self) -> dict[str, Any]:
        """The config as JSON-able data, safe for logs, the store and manifests (no secrets, no URL password)."""
        out = self.model_dump(mode="json", exclude={"secrets"})
        if out.get("store_url"):
            out["store_url"] = redact(out["store_url"])
        return out
