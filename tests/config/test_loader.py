"""Config: the embedded default, TOML + env overrides, one clear error and exit code 2, no secrets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clkt.config import load_settings
from clkt.errors import ConfigError
from tests.conftest import REPO


def test_no_file_gives_the_embedded_offline_default() -> None:
    s = load_settings(None, environ={})
    assert s.offline_demo and s.replay.enabled and s.agents.backend == "template"
    assert [t.model for t in s.spec.targets] == ["embedded:gemma-3-270m"]
    assert s.spec.languages == ["en", "ja", "zh", "fr", "es"]


def test_toml_then_env_override(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[http]\nport = 9001\n[sources.usgs]\nrate_per_s = 1.5\n[spec]\nlanguages = ["en", "fr"]\n')
    s = load_settings(cfg, environ={"CLKT_HTTP__PORT": "9002"})
    assert s.http.port == 9002
    assert s.sources["usgs"].rate_per_s == 1.5
    assert s.sources["usgs"].base_url.startswith("https://earthquake.usgs.gov")  # real default kept
    assert s.spec.languages == ["en", "fr"] and not s.offline_demo


@pytest.mark.parametrize(
    ("toml", "env", "key", "reason"),
    [
        ("[http]\nport = 70000\n", {}, "http.port", "less than or equal to 65535"),
        ("[spec]\nlanguages = [\"en\", \"xx\"]\n", {}, "spec.languages", "unsupported language"),
        ("[sources.nope]\nenabled = true\n", {}, "sources.nope", "unknown source"),
        ("[daemon]\ngrace_period_s = \"soon\"\n", {}, "daemon.grace_period_s", "valid number"),
        ("typo_key = 1\n", {}, "typo_key", "Extra inputs are not permitted"),
        ("[agents]\nbackend = \"llm\"\ngenerator_model = \"openai:a\"\nverifier_model = \"openai:a\"\n"
         "judge_model = \"openai:a\"\ntranslator_model = \"openai:a\"\n", {}, "agents", "verifier_model must differ"),
        ("", {"CLKT_GPU__EPOCHS": "0"}, "gpu.epochs", "greater than or equal to 1"),
        ("[http\nport=1", {}, "<file>", "not valid TOML"),
        ("[http]\npage_size = 0\n", {}, "http.page_size", "greater than or equal to 5"),
        ("[http]\nrefresh_s = 99999\n", {}, "http.refresh_s", "less than or equal to 3600"),
        ("[http]\nallowed_hosts = [\"evil.example/x\"]\n", {}, "http.allowed_hosts.0", "match pattern"),
        ("", {"CLKT_HTTP__ALLOWED_HOSTS": "\"clkt.lab\""}, "http.allowed_hosts", "valid list"),
    ],
)
def test_invalid_config_names_key_and_reason(tmp_path: Path, toml: str, env: dict[str, str], key: str, reason: str) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml)
    with pytest.raises(ConfigError) as ei:
        load_settings(cfg, environ=env)
    assert ei.value.key == key
    assert reason in ei.value.reason


def test_invalid_config_exits_2_and_starts_nothing(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(f'data_dir = "{tmp_path / "data"}"\n[http]\nport = -1\n')
    res = subprocess.run([sys.executable, "run_daemon.py", "--config", str(cfg)], capture_output=True, text=True,
                         cwd=REPO, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 2
    assert "http.port" in res.stderr
    assert not (tmp_path / "data").exists()
    res = subprocess.run([sys.executable, "-m", "clkt.cli", "status", "--config", str(tmp_path / "missing.toml")],
                         capture_output=True, text=True, cwd=REPO, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 2 and "does not exist" in res.stderr


def test_secrets_come_from_env_only_and_never_dump(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[sources.tmdb]\napi_key_env = "MY_TMDB"\n')
    s = load_settings(cfg, environ={"MY_TMDB": "sekrit-value-123"})
    secret = s.secret("MY_TMDB")
    assert secret is not None and secret.get_secret_value() == "sekrit-value-123"
    assert "sekrit-value-123" not in repr(s)
    assert "sekrit-value-123" not in str(s.public_dump())
    assert "sekrit-value-123" not in s.model_dump_json()


def test_the_documented_example_config_is_valid() -> None:
    # every key with its default (generated: tests/docs/test_example_config.py holds it to the code's defaults)
    s = load_settings(REPO / "clkt.example.toml", environ={"OPENAI_API_KEY": "x"})
    assert s.agents.backend == "template" and not s.offline_demo
    assert s.snapshot.quotas and s.gpu.lora_r == 16 and s.gpu.epochs == 5
    assert [t.name for t in s.spec.targets] == ["gemma-3-270m"]


def test_the_demo_profile_is_a_packaged_toml_file_loaded_like_a_users(tmp_path: Path) -> None:
    from clkt.config import DEMO_PROFILE, EMBEDDED_DEFAULT

    copy = tmp_path / "demo.toml"
    copy.write_bytes(DEMO_PROFILE.read_bytes())
    assert load_settings(copy, environ={}) == load_settings(None, environ={})
    assert EMBEDDED_DEFAULT["offline_demo"] is True and EMBEDDED_DEFAULT["spec"]["train_languages"] == ["en"]
    # a user's file that asks for the demonstration is laid over the profile, key by key
    mine = tmp_path / "mine.toml"
    mine.write_text('offline_demo = true\n[sources.thesportsdb]\nrate_per_s = 3.0\n[spec]\nlanguages = ["en", "fr"]\n')
    s = load_settings(mine, environ={})
    assert s.offline_demo and s.replay.enabled and s.sources.thesportsdb.rate_per_s == 3.0
    assert s.sources.thesportsdb.options.leagues == ["4328", "4424"] and s.sources.usgs.lookback_days == 29
    assert s.spec.train_languages is None  # the demo's train subset is for its own languages


def test_each_source_has_its_real_defaults_and_typed_options_once() -> None:
    from clkt.config import MusicBrainzOptions, SourcesSettings

    real = load_settings(REPO / "clkt.example.toml", environ={"OPENAI_API_KEY": "x"}).sources
    assert SourcesSettings.names() == [
        "arxiv", "deezer", "gdacs", "launchlibrary", "musicbrainz", "thesportsdb", "tmdb", "usgs"]
    assert real.musicbrainz.options == MusicBrainzOptions()
    assert real.musicbrainz.options.page_size == 100 and real.musicbrainz.rate_per_s == 1.0
    assert real.musicbrainz.options.query == "status:official AND primarytype:album"
    assert real.thesportsdb.default_api_key == "123" and real.thesportsdb.options.leagues == ["4328", "4424", "4387"]
    assert real["usgs"] is real.usgs and dict(real.items())["tmdb"].api_key_env == "TMDB_API_KEY"


def test_a_poller_takes_only_its_own_sources_settings() -> None:
    from clkt.config import DaemonSettings, SourceSettings
    from clkt.sources.board import SourceBoard
    from clkt.sources.poller import SourcePoller

    plain = SourceSettings(base_url="http://127.0.0.1:9", rate_per_s=1.0)
    with pytest.raises(ConfigError, match=r"sources\.usgs: takes UsgsSettings, not SourceSettings"):
        SourcePoller(source_name="usgs", settings=plain, daemon=DaemonSettings(), board=SourceBoard())
