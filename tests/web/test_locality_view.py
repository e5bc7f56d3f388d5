"""The snapshot page's report section shows kept % (the locality split) when the report has it."""

from __future__ import annotations

from pathlib import Path

from clkt.report.writer import build_report, write_report_files
from clkt.web.views import _report_view
from tests.report.test_locality import _counts, _job, _outcomes


def test_the_report_view_has_a_kept_row_per_job_and_language(tmp_path: Path) -> None:
    loc = {"s": {"en": _counts([(4, 4), (4, 3), (4, 4)]), "fr": _counts([(1, 1)])}}
    write_report_files(build_report("snap", ["en", "fr"], [_job(1, loc)], _outcomes()), tmp_path / "with")
    view = _report_view(tmp_path / "with")
    assert view is not None and view.error is None
    assert [r[4] for r in view.kept_rows] == ["en", "fr"] and view.kept_header[-1] == "kept % [95% CI]"
    assert view.kept_rows[0][-1].startswith("91.7 [") and view.kept_rows[1][-1] == "too few (n = 1)"
    write_report_files(build_report("snap", ["en", "fr"], [_job(1, None)], _outcomes()), tmp_path / "without")
    plain = _report_view(tmp_path / "without")
    assert plain is not None and plain.kept_rows == []
