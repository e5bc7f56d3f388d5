"""A domain from the test tree alone (`tests/domains/toy/`: one folder, named in `CLKT_DOMAIN_PACKAGES`) is
crawled from the replay server, probed, given questions, frozen, injected (a cpt-lora job on a tiny random model,
on the CPU) and reported with its own per-domain rows (`toy_flow.py`, run in its own process so the registry has it
before the product's modules build their types; ~20 s); no product file names it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from clkt.domains import PACKAGES_ENV

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("clkt", "agents", "storage")


def _run(flow: str, packages: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, PACKAGES_ENV: packages, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", flow, "-q", "-p", "no:cacheprovider", "-x"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_the_toy_domain_flows_end_to_end_with_no_product_file_touched() -> None:
    for pkg in PRODUCT:  # the toy is the test tree's: nothing of the product names it
        for p in (ROOT / pkg).rglob("*"):
            if p.is_file() and p.suffix in (".py", ".toml", ".json", ".html"):
                text = p.read_text(encoding="utf-8", errors="replace")
                assert "lighthouse" not in text.lower() and "beaconapi" not in text, p
    done = _run("tests/domains/toy_flow.py", "tests.domains.toy")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


def test_a_domain_package_that_does_not_import_is_refused_by_name() -> None:
    code = "import clkt.facts"
    env = {**os.environ, PACKAGES_ENV: "tests.domains.no_such_toy", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode != 0
    assert f"{PACKAGES_ENV}: domain package 'tests.domains.no_such_toy' does not import" in done.stderr
    env[PACKAGES_ENV] = "tests.domains"  # a package that declares no SPEC
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode != 0 and "'tests.domains' declares no `SPEC`" in done.stderr
