"""`load_settings()`: a TOML file (or the packaged demo profile) plus `CLKT_*` overrides, validated into one
frozen `Settings`, or one `ConfigError` naming the key and the reason.

The file is read by pydantic-settings' TOML source, the environment by its environment source (over the
mapping given, never `os.environ` when one is given); pydantic-settings merges them key by key over the
classes' defaults. With no file, the demo profile (`clkt/config/demo.toml`) is the file; a user's file
with `offline_demo = true` is laid over it. API keys are read here once, from the variables the
configuration names (`api_key_env`), into `Settings.secrets`, and registered for redaction. This is the
only module that reads `os.environ`.
"""

from __future__ import annotations

import logging
import os
import re
import tomllib
from collections.abc import Mapping
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsError, TomlConfigSettingsSource

from clkt.config.settings import LoadSources, MappingEnvSource, Settings, settings_sources
from clkt.config.sources import SourcesSettings
from clkt.errors import ConfigError
from clkt.logs import register_secrets

__all__ = ["DEMO_PROFILE", "EMBEDDED_DEFAULT", "load_settings", "loopback_warning"]

log = logging.getLogger("clkt.config")

DEMO_PROFILE: Traversable = files("clkt.config") / "demo.toml"


def _read_demo() -> Mapping[str, Any]:
    with DEMO_PROFILE.open("rb") as fh:
        return MappingProxyType(tomllib.load(fh))


# the demo profile as data (read-only), for tools that want to look at it; `load_settings()` reads the file
EMBEDDED_DEFAULT: Mapping[str, Any] = _read_demo()


class _DemoProfile(TomlConfigSettingsSource):
    """The demo profile under a user's file that asks for `offline_demo`."""

    def __init__(self, settings_cls: type[BaseSettings], *, over: Mapping[str, Any]) -> None:
        super().__init__(settings_cls, toml_file=DEMO_PROFILE)
        spec = over.get("spec")
        # the demo's train subset is chosen for its own five languages: a file with other languages trains in all
        self._drop_train_subset = isinstance(spec, Mapping) and "languages" in spec and "train_languages" not in spec

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        if self._drop_train_subset:
            data = {**data, "spec": {k: v for k, v in data["spec"].items() if k != "train_languages"}}
        return data


def _user_file(path: Path) -> TomlConfigSettingsSource:
    """The user's file as a settings source; a file that cannot be read or decoded is a `ConfigError`."""
    if not path.exists():
        raise ConfigError("<file>", f"config file {path} does not exist")
    if path.is_dir():
        raise ConfigError("<file>", f"{path} is a directory, not a config file")
    try:
        return TomlConfigSettingsSource(Settings, toml_file=path)
    except FileNotFoundError:
        raise ConfigError("<file>", f"config file {path} does not exist") from None
    except OSError as e:
        raise ConfigError("<file>", f"cannot read {path}: {e.strerror or type(e).__name__}") from None
    except UnicodeDecodeError:
        raise ConfigError("<file>", f"{path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError("<file>", f"{path} is not valid TOML: {e}") from None


def load_settings(path: Path | str | None = None, *, environ: Mapping[str, str] | None = None) -> Settings:
    """Build the Settings from a TOML file (or the demo profile) plus `CLKT_*` overrides."""
    env = dict(os.environ if environ is None else environ)
    if path is None:
        toml: tuple[TomlConfigSettingsSource, ...] = (TomlConfigSettingsSource(Settings, toml_file=DEMO_PROFILE),)
    else:
        user = _user_file(Path(path))
        _check_sources_tables(user.toml_data)
        toml = (user, _DemoProfile(Settings, over=user.toml_data)) if user.toml_data.get("offline_demo") else (user,)
    token = settings_sources.set(LoadSources(env=MappingEnvSource(Settings, environ=env), files=toml))
    try:
        settings = Settings()
    except ValidationError as e:
        raise _config_error(e) from None
    except SettingsError as e:  # an environment value pydantic-settings cannot decode (e.g. not JSON)
        m = re.search(r'field "(\w+)"', str(e))
        prefix = f"CLKT_{m.group(1).upper()}" if m else "CLKT_"
        names = sorted(k for k in env if k.upper().startswith(prefix)) or [prefix + "..."]
        raise ConfigError(", ".join(names)[:200], "not a valid value for this setting (lists and tables are "
                          "JSON, e.g. CLKT_SPEC__LANGUAGES='[\"en\", \"fr\"]')") from None
    except (TypeError, ValueError) as e:  # what a hostile shape may still raise outside validation
        raise ConfigError("<root>", f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}") from None
    finally:
        settings_sources.reset(token)
    for warning in (loopback_warning(settings), settings.agents.jury.size_warning()):
        if warning:
            log.warning("%s", warning)
    return _attach_secrets(settings, env)


def _check_sources_tables(data: Mapping[str, Any]) -> None:
    """The file's own `[sources...]` tables have the right shape, before the environment is laid over them."""
    given = data.get("sources", {})
    if not isinstance(given, Mapping):
        raise ConfigError("sources", "must be a table of [sources.<name>] tables")
    unknown = sorted(set(given) - set(SourcesSettings.names()))
    if unknown:
        raise ConfigError(f"sources.{unknown[0]}", f"unknown source; known: {SourcesSettings.names()}")
    for name, table in given.items():
        if not isinstance(table, Mapping):
            raise ConfigError(f"sources.{name}", "must be a table")
        if "options" in table and not isinstance(table["options"], Mapping):
            raise ConfigError(f"sources.{name}.options", "must be a table")


def _shape_of_sources(loc: tuple[str | int, ...], kind: str) -> str | None:
    """Our own reason for a `[sources...]` value of the wrong shape (from the environment), or None."""
    if not loc or loc[0] != "sources":
        return None
    if len(loc) == 1 and kind in ("model_type", "dict_type"):
        return "must be a table of [sources.<name>] tables"
    if len(loc) == 2 and kind == "extra_forbidden":
        return f"unknown source; known: {SourcesSettings.names()}"
    if (len(loc) == 2 or (len(loc) == 3 and loc[2] == "options")) and kind == "model_type":
        return "must be a table"
    return None


def _is_option(loc: tuple[str | int, ...]) -> bool:
    return len(loc) >= 3 and loc[0] == "sources" and loc[2] == "options"


def _config_error(e: ValidationError) -> ConfigError:
    """The one error to report: a `[sources...]` value of the wrong shape first, then the first error outside the
    sources' options (a source's options are checked once the rest is valid), then the first error."""
    errors = e.errors()
    for err in errors:
        loc = tuple(err.get("loc", ()))
        reason = _shape_of_sources(loc, err.get("type", ""))
        if reason is not None:
            return ConfigError(".".join(str(p) for p in loc), reason)
    first = next((err for err in errors if not _is_option(tuple(err.get("loc", ())))), errors[0])
    key = ".".join(str(p) for p in first.get("loc", ())) or "<root>"
    return ConfigError(key, first.get("msg", "invalid"))


def loopback_warning(settings: Settings) -> str | None:
    """The warning to give when the HTTP endpoint (status, metrics: no authentication) listens beyond loopback."""
    if not settings.http.enabled or settings.http.is_loopback():
        return None
    pages = " and the status pages" if settings.http.pages else ""
    return (f"http.host = {settings.http.host!r} exposes /status and /metrics{pages} (no authentication) beyond this "
            "machine; use 127.0.0.1 unless a firewall or proxy guards the port (the Host header must still be a "
            "loopback name, http.host or one of http.allowed_hosts)")


def _attach_secrets(settings: Settings, env: Mapping[str, str]) -> Settings:
    names: set[str] = set()
    for _name, src in settings.sources.items():
        if src.api_key_env:
            names.add(src.api_key_env)
    for prov in settings.agents.providers.values():
        if prov.api_key_env:
            names.add(prov.api_key_env)
    for t in settings.spec.targets:
        if t.api_key_env:
            names.add(t.api_key_env)
    names.add(settings.publish.token_env)  # the Hub token (clkt.publish)
    if settings.http.intake_token_env:
        names.add(settings.http.intake_token_env)  # the result packs' upload token (clkt.web.intake)
    # the conventional provider variables pydantic-ai reads, and huggingface_hub's
    names |= {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN"}
    secrets = {n: SecretStr(env[n]) for n in sorted(names) if env.get(n)}

    register_secrets(secrets.values())  # from here on, `redact` removes them wherever text goes out
    if settings.store_url:
        try:
            password = urlsplit(settings.store_url).password
        except ValueError:  # an unparsable URL is reported when the store opens
            password = None
        if password:  # as written in the URL and as the driver receives it
            register_secrets(sorted({password, unquote(password)}))
    return settings.model_copy(update={"secrets": secrets})
