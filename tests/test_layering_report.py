"""The layering of scoring and reporting (README, Layout), on the import graph of `tests/test_layering.py`
(at the root of tests/ beside it: cross-cutting).

- `clkt.evaluate` (what runs on the GPU side) imports neither `clkt.inject` (which drives it) nor
  `clkt.report` (which reads what was stored);
- `clkt.report` does not import `clkt.inject`: the job's records it reads live below both, in
  `clkt.evaluate.results` and `clkt.evaluate.summary`;
- `clkt.snapshots` does not import `clkt.evaluate` (the answer cue both use is the kernel's
  `clkt.documents.answer_cues`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_layering import MODULES, _imports, _violations, _within

RULES = [  # (packages whose modules are checked, packages they must not import)
    (("clkt.evaluate",), ("clkt.inject", "clkt.report")),
    (("clkt.report",), ("clkt.inject",)),
    (("clkt.snapshots",), ("clkt.evaluate",)),
]


@pytest.mark.parametrize(("importer", "forbidden"), RULES)
def test_scoring_and_reporting_import_nothing_above_them(importer: tuple[str, ...], forbidden: tuple[str, ...]) -> None:
    assert any(_within(m, importer) for m in MODULES)  # the packages exist: the rule is not vacuous
    assert _violations(lambda m: _within(m, importer), lambda _m, d: _within(d, forbidden)) == []


@pytest.mark.parametrize(("text", "caught"), [
    ("from clkt.inject.contract import JobSpec", True),
    ("from clkt.report import writer", True),
    ("def f():\n    import clkt.report.metrics", True),  # inside a function too
    ("from clkt.evaluate.results import ResultItem", False),
])
def test_the_rule_catches_a_violation(tmp_path: Path, text: str, caught: bool) -> None:
    name = "clkt.evaluate.__layering_probe__"
    probe = tmp_path / "__layering_probe__.py"
    probe.write_text(text + "\n", encoding="utf-8")
    found = [dep for dep, _ in _imports(name, probe, MODULES) if _within(dep, ("clkt.inject", "clkt.report"))]
    assert bool(found) is caught, found
