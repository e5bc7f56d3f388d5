"""Property-based fuzzing of the config loader: whatever the file or the environment holds, `load_settings`
returns a valid Settings (every number finite and in bounds) or raises `ConfigError` with a one-line
message naming a key — nothing else escapes, so the CLI and the daemon can always print one line and exit 2."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clkt.config import Settings, load_settings
from clkt.errors import ConfigError

SECTIONS: dict[str, list[str]] = {
    "daemon": ["lease_s", "grace_period_s", "poll_interval_s", "max_attempts", "min_free_disk_mb"],
    "http": ["host", "port", "enabled"],
    "gpu": ["lora_r", "learning_rate", "epochs", "devices", "scorers", "lora_dropout", "job_timeout_s"],
    "spec": ["name", "languages", "domains", "temporal_buffer_days"],
    "snapshot": ["cadence", "val_ratio", "seed", "quotas"],
    "agents": ["backend", "questions_per_entity", "monthly_budget_usd"],
    "sources.usgs": ["rate_per_s", "burst", "concurrency", "timeout_s", "max_body_bytes"],
    "sources.usgs.options": ["min_magnitude", "page_size", "typo"],
    "sources.thesportsdb.options": ["leagues"],
    "sources.deezer.options": ["page_size", "editorial_id"],
}

_scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(["en", "fr", "movies", "cpu", "4328", "0.0.0.0", "monthly", "llm"]),
)
_values = st.one_of(_scalars, st.lists(_scalars, max_size=3), st.dictionaries(st.sampled_from(["movies", "x"]), _scalars, max_size=2))


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(x)}" for k, x in v.items()) + "}"


@st.composite
def toml_docs(draw: st.DrawFn) -> str:
    lines = []
    for section in draw(st.lists(st.sampled_from(sorted(SECTIONS)), max_size=3, unique=True)):
        lines.append(f"[{section}]")
        for key in draw(st.lists(st.sampled_from(SECTIONS[section]), min_size=1, max_size=3, unique=True)):
            lines.append(f"{key} = {_toml(draw(_values))}")
    return "\n".join(lines) + "\n"


def _check(s: Settings) -> None:
    def walk(x: Any) -> None:
        if isinstance(x, float):
            assert math.isfinite(x)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(s.public_dump())
    assert 0 <= s.http.port <= 65535 and s.daemon.lease_s > 0
    leagues = s.sources.thesportsdb.options.leagues
    assert isinstance(leagues, list) and all(str(x).isdigit() for x in leagues)


def _load(text: str | bytes, environ: dict[str, str] | None = None) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "clkt.toml"
        if isinstance(text, str):
            p.write_text(text, encoding="utf-8")
        else:
            p.write_bytes(text)
        try:
            _check(load_settings(p, environ=environ or {}))
        except ConfigError as e:
            assert e.key and "\n" not in str(e).strip()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=toml_docs())
def test_fuzz_config_file(doc: str) -> None:
    _load(doc)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=st.binary(max_size=200))
def test_fuzz_config_bytes(raw: bytes) -> None:
    _load(raw)


_ENV_KEYS = ["CLKT_DAEMON__LEASE_S", "CLKT_HTTP__PORT", "CLKT_SPEC__LANGUAGES", "CLKT_GPU__EPOCHS", "CLKT_LOG_LEVEL",
             "CLKT_SOURCES__USGS__RATE_PER_S", "CLKT_SNAPSHOT__QUOTAS", "CLKT_SPEC", "CLKT_HTTP__HOST"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(env=st.dictionaries(st.sampled_from(_ENV_KEYS), st.one_of(st.text(max_size=16), _scalars.map(str)), max_size=3))
def test_fuzz_environment(env: dict[str, str]) -> None:
    env = {k: v.replace("\x00", "") for k, v in env.items()}  # the OS refuses NUL in the environment
    _load("", environ=env)
