"""Refused before anything runs (`clkt.preflight`): every error of the configuration that `clkt run`,
`run_daemon.py`, `clkt status`, `clkt incontext` and `clkt worker` can know at start is one line on stderr and exit 2, and the
empty folder that is the data directory (and the working directory) stays empty: no store, no log, no info file,
no port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clkt.errors import ConfigError
from tests.cli._in_process import clkt
from tests.conftest import REPO

API = 'name = "api"\nmodel = "openai:gpt-4o-mini"\nbackend = "api"\ncutoff = 2024-06-01\n'

# (case, the config's body after `data_dir`, a fragment the one line must carry)
CASES = [
    ("api-key-missing", f"[[spec.targets]]\n{API}", "OPENAI_API_KEY"),
    ("provider-model-without-backend", '[[spec.targets]]\nname = "t"\nmodel = "openai:gpt-4o-mini"\n'
     'cutoff = 2024-06-01\n', 'add backend = "api"'),
    ("unknown-strategy", '[spec]\nstrategies = ["cpt-lora", "dream"]\n', "unknown strategy 'dream'"),
    ("bad-cutoff", '[[spec.targets]]\nname = "t"\nmodel = "embedded:gemma-3-270m"\ncutoff = "yesterday"\n',
     "spec.targets.0.cutoff"),
    ("unknown-cutoff", '[[spec.targets]]\nname = "mystery"\nmodel = "acme/unknown-7b"\n', "no known knowledge cutoff"),
    ("missing-folder", '[[spec.targets]]\nname = "t"\nmodel = "/nonexistent/clkt-model"\ncutoff = 2024-06-01\n',
     "the model folder /nonexistent/clkt-model does not exist"),
    ("hub-id-not-cached", '[[spec.targets]]\nname = "t"\nmodel = "acme/never-downloaded-7b"\ncutoff = 2024-06-01\n',
     "neither a local model folder nor a Hugging Face id in the local cache"),
    ("unknown-embedded", '[[spec.targets]]\nname = "t"\nmodel = "embedded:nope"\ncutoff = 2024-06-01\n',
     "unknown embedded model"),
]
# what only the daemon needs (and `clkt status`, which reads the daemon's config): refused there, not by incontext
DAEMON_CASES = [
    ("llm-agents-without-key", '[agents]\nbackend = "llm"\njudge_model = "openai:gpt-4o-mini"\n'
     'generator_model = "openai:gpt-4o-mini"\nverifier_model = "anthropic:claude-3-5-haiku-latest"\n'
     'translator_model = "openai:gpt-4o-mini"\n', "needs an API key"),
    ("publish-without-token", '[publish]\nrepo = "someone/clkt-bench"\non_freeze = true\n', "HF_TOKEN is not set"),
]


@pytest.fixture
def empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The data directory and the working directory: an empty folder the refusal must leave empty."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "empty"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _config(tmp_path: Path, empty: Path, body: str) -> str:
    cfg = tmp_path / "clkt.toml"
    cfg.write_text(f'data_dir = "{empty}"\n[http]\nport = 0\n{body}', encoding="utf-8")
    return str(cfg)


def _assert_refused(code: int, err: str, fragment: str, empty: Path) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, (code, err)
    assert lines[0].startswith("clkt:") and fragment in lines[0], err
    assert sorted(empty.iterdir()) == []  # no store, no log, no daemon.json


@pytest.mark.parametrize(("case", "body", "fragment"), CASES + DAEMON_CASES, ids=[c[0] for c in CASES + DAEMON_CASES])
@pytest.mark.parametrize("command", ["run", "status"])
def test_run_and_status_refuse_before_anything(command: str, case: str, body: str, fragment: str, tmp_path: Path,
                                               empty: Path) -> None:
    ran = clkt(command, "--config", _config(tmp_path, empty, body))
    _assert_refused(ran.returncode, ran.stderr, fragment, empty)


@pytest.mark.parametrize(("case", "body", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_incontext_refuses_before_the_store(case: str, body: str, fragment: str, tmp_path: Path, empty: Path) -> None:
    ran = clkt("incontext", "2026-01", "--config", _config(tmp_path, empty, body))
    _assert_refused(ran.returncode, ran.stderr, fragment, empty)


def test_incontext_checks_only_the_targets_it_asks(tmp_path: Path, empty: Path) -> None:
    """An API target without its key does not stop the track of another target; an unknown name is refused."""
    body = f'[[spec.targets]]\nname = "local"\nmodel = "embedded:gemma-3-270m"\n[[spec.targets]]\n{API}'
    cfg = _config(tmp_path, empty, body)
    ran = clkt("incontext", "2026-01", "--target", "nope", "--config", cfg)
    _assert_refused(ran.returncode, ran.stderr, "no target nope in the spec", empty)
    ran = clkt("incontext", "2026-01", "--target", "local", "--config", cfg)
    assert ran.returncode == 1 and "no store here" in ran.stderr  # past the check: the store is looked for, not made
    assert sorted(empty.iterdir()) == []


def test_the_daemons_needs_are_not_incontexts(tmp_path: Path, empty: Path) -> None:
    """Publishing's token is the daemon's need: `clkt incontext` goes on to look for its store."""
    ran = clkt("incontext", "2026-01", "--config", _config(tmp_path, empty, DAEMON_CASES[1][1]))
    assert ran.returncode == 1 and "no store here" in ran.stderr, ran.stderr
    assert sorted(empty.iterdir()) == []


def test_run_daemon_py_refuses_before_anything(tmp_path: Path, empty: Path) -> None:
    """The script entry point, as a process: the same line and exit code as `clkt run`."""
    cfg = _config(tmp_path, empty, CASES[0][1])
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    res = subprocess.run([sys.executable, str(REPO / "run_daemon.py"), "--config", cfg], capture_output=True, text=True,
                         cwd=empty, env={**env, "PYTHONPATH": str(REPO)}, timeout=120)
    _assert_refused(res.returncode, res.stderr, "OPENAI_API_KEY", empty)


def test_a_windows_folder_is_not_a_provider() -> None:
    """`C:\\models\\x` (one letter before the colon) stays a local path; `embedded:` stays the bundled models."""
    from clkt.config import TargetSettings

    assert TargetSettings(name="w", model="C:\\models\\x").backend == "local"
    assert TargetSettings(name="e", model="embedded:gemma-3-270m").backend == "local"
    with pytest.raises(ValueError, match="provider"):
        TargetSettings(name="o", model="ollama:llama3")


@pytest.mark.parametrize(("case", "body", "fragment"), [
    c for c in CASES if c[0] in ("missing-folder", "hub-id-not-cached", "unknown-embedded", "unknown-cutoff")
] + [
    ("cuda-on-a-cpu-machine", '[gpu]\ndevices = ["cuda:0"]\n', "device cuda:0: this machine has no CUDA device"),
    ("not-a-device", '[gpu]\ndevices = ["tpu7"]\n', "'tpu7' is not a device"),
], ids=lambda v: v if isinstance(v, str) and "\n" not in v and " " not in v else None)
def test_worker_refuses_before_the_store(case: str, body: str, fragment: str, tmp_path: Path, empty: Path) -> None:
    """`clkt worker`: a local target it cannot load or a device this machine lacks is one line, exit 2, before the
    store or a log exists (no GPU here: any CUDA device is refused)."""
    ran = clkt("worker", "--burst", "--config", _config(tmp_path, empty, body))
    _assert_refused(ran.returncode, ran.stderr, fragment, empty)


def test_worker_needs_no_api_key(tmp_path: Path, empty: Path) -> None:
    """An API target without its key is the daemon's concern, not the worker's start-up check."""
    from clkt.config import load_settings
    from clkt.preflight import check_start, check_worker

    settings = load_settings(Path(_config(tmp_path, empty, f"[[spec.targets]]\n{API}")), environ={})
    check_worker(settings, ["cpu"])  # passes: the embedded default target loads, the API one is skipped
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        check_start(settings)  # the daemon's check does ask for it
    assert sorted(empty.iterdir()) == []
