"""`clkt.cli.main`: what escapes a command becomes one line and an exit code; no arguments show the help."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer

import clkt.cli as cli


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        cli.main(argv)
        code = 0
    except SystemExit as e:
        code = int(e.code) if isinstance(e.code, int) else 1
    got = capsys.readouterr()
    return code, got.out, got.err


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("clkt:") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def toy_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[typer.Typer]:
    """`main()` over an app of commands that fail in every way a command can (the real areas not registered)."""
    app = typer.Typer(name="clkt", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

    @app.command("boom")
    def boom() -> None:
        raise ValueError("the cause, said once")

    @app.command("refuse")
    def refuse(n: int = typer.Option(1, min=1)) -> None:
        raise typer.BadParameter(f"{n} is refused")

    @app.command("abort")
    def abort() -> None:
        raise typer.Abort()

    @app.command("interrupt")
    def interrupt() -> None:
        raise KeyboardInterrupt

    @app.command("exit3")
    def exit3() -> None:
        raise typer.Exit(3)

    monkeypatch.setattr(cli, "app", app)
    monkeypatch.setattr(cli, "_registered", ["yes"])
    yield app


def test_an_unexpected_error_is_one_line_and_exit_1(toy_app: typer.Typer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["boom"], capsys)
    assert code == 1
    assert "ValueError" in _one_line(err) and "the cause, said once" in err


def test_a_refused_parameter_names_the_command(toy_app: typer.Typer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["refuse", "--n", "0"], capsys)
    assert code == 2
    line = _one_line(err)  # "clkt: <program> refuse: ..." (the program is `clkt`, or `-m ...` under python)
    assert line.startswith("clkt: clkt") and " refuse: Invalid value for '--n'" in line
    code, _, err = _run(["refuse", "--n", "4"], capsys)
    assert code == 2 and "4 is refused" in _one_line(err)


def test_abort_interrupt_and_exit_codes(toy_app: typer.Typer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["abort"], capsys)
    assert code == 130 and _one_line(err) == "clkt: aborted"
    code, _, err = _run(["interrupt"], capsys)  # typer turns it into exit 130
    assert code == 130 and "Traceback" not in err
    code, _, err = _run(["exit3"], capsys)
    assert code == 3 and err == ""


def test_unknown_command_and_no_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["nosuch"], capsys)
    line = _one_line(err)
    assert code == 2 and line.startswith("clkt: clkt") and line.endswith(": No such command 'nosuch'.")
    code, out, err = _run([], capsys)  # the help, exit 2 (click's rule for no arguments)
    assert code == 2 and "Usage:" in out and "snapshot" in out and "clkt:" not in err
    code, out, err = _run(["snapshot"], capsys)
    assert code == 2 and "build" in out and "export" in out and "clkt:" not in err
    code, out, err = _run(["--help"], capsys)
    assert code == 0 and "Usage:" in out and err == ""


def test_help_loads_neither_the_store_nor_torch() -> None:
    import subprocess
    import sys

    code = "import sys, clkt.cli; clkt.cli._register_areas(); print(sorted(m for m in ('sqlalchemy', 'torch', 'aiohttp') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _command_paths() -> list[list[str]]:
    """Every command and group of the real `clkt`, as the argument paths that reach it."""
    cli._register_areas()
    out: list[list[str]] = []

    def walk(cmd: Any, path: list[str]) -> None:  # typer's own (vendored) click: a group has `commands`
        out.append(path)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            if not sub.hidden:
                walk(sub, [*path, name])

    walk(typer.main.get_command(cli.app), [])
    return out


def test_every_commands_help_renders(capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` of every command prints its usage, exit 0: help texts are rich markup, where a literal `[...]`
    (`hf://owner/name[/snapshot-id]`) is a tag and a stray closing one broke `clkt evaluate --help`."""
    paths = _command_paths()
    assert ["evaluate"] in paths and ["snapshot", "build"] in paths and len(paths) > 20
    for path in paths:
        code, out, err = _run([*path, "--help"], capsys)
        assert code == 0 and "Usage:" in out and err == "", (path, err)
    code, out, _ = _run(["evaluate", "--help"], capsys)
    assert "hf://owner/name[/snapshot-id][@revision]" in " ".join(out.split()).replace("│ ", "").replace(" │", "")
