"""The one typed configuration object, `Settings`, and its sections.

`load_settings()` reads an optional TOML file (`clkt.toml`), applies `CLKT_*` environment overrides
(nested keys with `__`, e.g. `CLKT_HTTP__PORT=9000`), validates everything with pydantic-settings and
returns a frozen `Settings`. With no file, the packaged demo profile (`clkt/config/demo.toml`, the embedded
offline demonstration) is loaded like a user's file. Invalid input raises `ConfigError` naming the key and
the reason: a file that cannot be read or decoded, an environment value that does not parse, inf/nan
anywhere, a number outside its bounds, a source option of the wrong type (each source's options are a
typed model). An HTTP endpoint bound beyond loopback is accepted with a warning (`loopback_warning`).

Configuration is passed, not pulled: only the entry points and the wiring (`clkt.services`, `clkt.daemon`)
read the whole `Settings`; every service and worker receives its own section(s) in its constructor.

API keys never live in the config: a source or provider names the *environment variable* that holds
its key (`api_key_env`), and `Settings.secret(name)` (a `SecretLookup`) returns it as a `SecretStr`.

The modules: `sources` (one settings class per domain API), `agents`, `spec` (the spec and its targets),
`jury` (the open track's judges), `sections` (snapshot, gpu, daemon, http, replay), `retention` (what the data directory keeps), `publish` (the Hub),
`settings` (the root), `loader` (files, environment, errors, secrets).
"""

from __future__ import annotations

from clkt.config._base import LANGS_DEFAULT, SUPPORTED_LANGS, SecretLookup
from clkt.config.agents import AgentMode, AgentRole, AgentSettings, BatchSettings, PriceSettings, ProviderSettings
from clkt.config.jury import DEFAULT_JURY_SIZE, JuryConfig, judge_family, judge_problem
from clkt.config.loader import DEMO_PROFILE, EMBEDDED_DEFAULT, load_settings, loopback_warning
from clkt.config.publish import PublishSettings
from clkt.config.retention import RetentionSettings
from clkt.config.sections import DaemonSettings, GpuSettings, HttpSettings, ReplaySettings, SnapshotSettings
from clkt.config.settings import Settings
from clkt.config.sources import (
    DeezerOptions,
    DeezerSettings,
    GdacsOptions,
    GdacsSettings,
    MusicBrainzOptions,
    MusicBrainzSettings,
    SourceOptions,
    SourceSettings,
    SourcesSettings,
    TheSportsDbOptions,
    TheSportsDbSettings,
    TmdbOptions,
    TmdbSettings,
    UsgsOptions,
    UsgsSettings,
)
from clkt.config.spec import EMBEDDED_TARGET, ScorerLiteral, SpecSettings, TargetSettings

__all__ = [
    "DEFAULT_JURY_SIZE",
    "DEMO_PROFILE",
    "EMBEDDED_DEFAULT",
    "EMBEDDED_TARGET",
    "LANGS_DEFAULT",
    "SUPPORTED_LANGS",
    "AgentMode",
    "AgentRole",
    "AgentSettings",
    "BatchSettings",
    "DaemonSettings",
    "DeezerOptions",
    "DeezerSettings",
    "GdacsOptions",
    "GdacsSettings",
    "GpuSettings",
    "HttpSettings",
    "JuryConfig",
    "MusicBrainzOptions",
    "MusicBrainzSettings",
    "PriceSettings",
    "ProviderSettings",
    "PublishSettings",
    "ReplaySettings",
    "RetentionSettings",
    "ScorerLiteral",
    "SecretLookup",
    "Settings",
    "SnapshotSettings",
    "SourceOptions",
    "SourceSettings",
    "SourcesSettings",
    "SpecSettings",
    "TargetSettings",
    "TheSportsDbOptions",
    "TheSportsDbSettings",
    "TmdbOptions",
    "TmdbSettings",
    "UsgsOptions",
    "UsgsSettings",
    "judge_family",
    "judge_problem",
    "load_settings",
    "loopback_warning",
]
