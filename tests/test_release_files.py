"""The files a research tool carries (LICENSE, NOTICE, CITATION.cff, CHANGELOG.md, CONTRIBUTING.md) and its one version
string. At the root of tests/ because they are the repository's, not a module's."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import yaml

import clkt
from clkt.packs.format import FORMAT_VERSION
from clkt.publish.card import CITATION
from clkt.publish.state import LAYOUT
from clkt.snapshots.layout import LAYOUT_VERSION
from clkt.sources.registry import SOURCE_TYPES
from tests.cli._in_process import clkt as run_clkt

ROOT = Path(__file__).resolve().parents[1]


def _version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def test_one_version_string_from_the_package_metadata() -> None:
    assert clkt.__version__ == importlib.metadata.version("clkt") == _version()
    ran = run_clkt("--version")
    assert (ran.returncode, ran.stdout) == (0, f"clkt {clkt.__version__}\n")
    # nowhere in the product is the version written a second time
    written = [str(p.relative_to(ROOT)) for pkg in ("clkt", "agents", "storage") for p in (ROOT / pkg).rglob("*.py")
               if re.search(rf"""["']{re.escape(_version())}["']""", p.read_text(encoding="utf-8"))]
    assert written == []


def test_licence_is_apache_2_as_pyproject_says() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == {"text": "Apache-2.0"}


def test_notice_names_every_recorded_source_and_its_terms() -> None:
    notice = (ROOT / "NOTICE").read_text()
    recorded = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "clkt" / "domains").glob("*/data/*") if p.is_dir())
    assert len(recorded) == len(SOURCE_TYPES), recorded  # every source's recordings, in its domain's folder
    for path in recorded:
        assert f"{path}/" in notice, path
    for name, cls in SOURCE_TYPES.items():
        assert cls.licence.provider.split(",")[0] in notice, name
    for terms in ("CC0 1.0", "arXiv API Terms of Use", "Launch Library 2", "public domain"):
        assert terms in notice


def test_citation_cff_is_valid_and_prefers_the_paper() -> None:
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors"):  # CFF 1.2.0's required keys
        assert cff[key], key
    assert all("name" in a or "family-names" in a for a in cff["authors"])
    assert cff["version"] == _version() and cff["license"] == "Apache-2.0"
    paper = cff["preferred-citation"]
    for key in ("type", "title", "authors"):
        assert paper[key], key
    assert paper["title"] in CITATION and str(paper["year"]) in CITATION  # the card's BibTeX: one paper
    for a in paper["authors"]:
        assert f"{a['family-names']}, {a['given-names']}" in " ".join(CITATION.split())


def test_changelog_states_the_contracts_current_versions() -> None:
    log = (ROOT / "CHANGELOG.md").read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| (result pack|snapshot folder|published snapshot folder"
                                                          r"[^|]*) \|[^|]*\| \*\*(\d+)\*\* \|", log, re.M)}
    assert rows == {"result pack": str(FORMAT_VERSION), "snapshot folder": str(LAYOUT_VERSION),
                    "published snapshot folder (Hub dataset repo)": str(LAYOUT)}
    # every migration that creates or changes a view is named (a new one without its line here fails)
    views = [p.name.split("_")[0] for p in (ROOT / "storage" / "migrations" / "versions").glob("*.py")
             if "CREATE VIEW" in p.read_text(encoding="utf-8")]
    assert views and [v for v in views if f"`{v}`" not in log] == []


def test_contributing_names_files_that_exist() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    paths = set(re.findall(r"`((?:clkt|agents|storage|tests|bench)/[\w./-]+?\.py)`", text))
    assert len(paths) >= 10
    assert [p for p in paths if not (ROOT / p).exists()] == []
    for command in ("make run", "make test", "make test-fast", "make lint"):
        assert command in text
