"""The generated documentation (`clkt.reference`) cannot drift: the committed pages and `clkt.example.toml` equal a
fresh generation, a change to the code changes its page and `--check` names the stale file, and the generated pages
build with `mkdocs build --strict`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import yaml
from pydantic import Field

import clkt.cli
import clkt.reference.config_page
from clkt.config import GpuSettings, Settings
from clkt.reference import GENERATED, generate, stale
from clkt.reference.__main__ import main
from clkt.reference.cli_page import render_cli
from clkt.reference.config_page import render_config
from tests.conftest import REPO


class _Gpu(GpuSettings):
    epochs: int = Field(default=7, ge=1, le=1000)  # a default changed in the code


class _ChangedSettings(Settings):
    gpu: _Gpu = Field(default_factory=_Gpu)


def _committed(path: str) -> str:
    return (REPO / path).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def fresh() -> dict[str, str]:
    return generate(REPO)


def test_the_committed_generated_files_equal_a_fresh_generation(fresh: dict[str, str]) -> None:
    assert stale(REPO, fresh) == [], "stale generated files: run `python -m clkt.reference --write`"
    assert sorted(fresh) == sorted(g.path for g in GENERATED) and all(fresh.values())


def test_every_generated_page_names_the_command_that_writes_it(fresh: dict[str, str]) -> None:
    for path, text in fresh.items():
        first = text.splitlines()[0]
        assert "python -m clkt.reference --write" in first and "generated" in first, path


def test_a_changed_default_changes_the_config_page() -> None:
    changed = render_config(_ChangedSettings)
    assert changed != _committed("docs/reference/config.md")
    assert "| `epochs` | int | `7` | `CLKT_GPU__EPOCHS` |" in changed
    assert "| `epochs` | int | `5` | `CLKT_GPU__EPOCHS` |" in _committed("docs/reference/config.md")


def _copy_generated(root: Path) -> None:
    for g in GENERATED:
        (root / g.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / g.path, root / g.path)
    shutil.copytree(REPO / "bench" / "results", root / "bench" / "results")


def test_check_exits_1_naming_the_file_a_code_change_made_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _copy_generated(tmp_path)
    assert main(["--check", "--root", str(tmp_path)]) == 0
    monkeypatch.setattr(clkt.reference.config_page, "render_config", lambda: render_config(_ChangedSettings))
    capsys.readouterr()
    assert main(["--check", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "docs/reference/config.md: stale" in err and err.count("stale") == 1, err
    assert main(["--write", "--root", str(tmp_path)]) == 0  # writes it, and only it
    assert "`7`" in (tmp_path / "docs/reference/config.md").read_text(encoding="utf-8")
    assert main(["--check", "--root", str(tmp_path)]) == 0


def test_a_new_command_changes_the_cli_page_and_one_outside_the_panels_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def probe(level: int = typer.Option(3, "--level", help="how <deep> to [probe]")) -> None:
        """A probe command of this test."""

    clkt.cli._register_areas()
    clkt.cli.app.command("zz-probe")(probe)
    try:
        with pytest.raises(ValueError, match="zz-probe"):
            render_cli()
        monkeypatch.setitem(clkt.cli.PANELS, "Operations", (*clkt.cli.PANELS["Operations"], "zz-probe"))
        page = render_cli()
    finally:
        clkt.cli.app.registered_commands[:] = [c for c in clkt.cli.app.registered_commands if c.name != "zz-probe"]
    assert page != _committed("docs/reference/cli.md")
    assert "### `clkt zz-probe`" in page
    assert "| `--level` | &lt;int&gt; | `3` | how &lt;deep&gt; to \\[probe\\] \\[default: 3\\] |" in page  # markup kept as text
    with pytest.raises(ValueError, match="'zz-probe', which is no command"):
        render_cli()  # a panel naming a command that is gone
    monkeypatch.undo()
    assert render_cli() == _committed("docs/reference/cli.md")  # the app as it was


def test_hidden_options_are_listed_as_deprecated() -> None:
    page = _committed("docs/reference/cli.md")
    section = page.split("### `clkt evaluate`", 1)[1].split("\n### ", 1)[0]
    assert "| `--name` | text | &mdash; | **deprecated** (hidden)" in section


def test_the_generated_pages_build_with_mkdocs_strict(tmp_path: Path) -> None:
    """The generated pages alone (and a stub home page) as a site with the repository's mkdocs.yml: no warning.
    The whole site, with the hand-written pages, is `make docs` (CI)."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = tmp_path / "docs"
    pages = [g.path.removeprefix("docs/") for g in GENERATED if g.path.startswith("docs/")]
    for page in pages:
        (docs / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "docs" / page, docs / page)
    (docs / "index.md").write_text("# clkt\n", encoding="utf-8")
    config.update(docs_dir=str(docs), site_dir=str(tmp_path / "site"), nav=[{"Home": "index.md"}, *pages])
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(tmp_path / "mkdocs.yml")],
                         capture_output=True, text=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1", "PATH": ""})
    assert run.returncode == 0, run.stderr[-3000:]
    html = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "clkt snapshot latest" in html and "<table>" in html
