"""docs/benchmarks.md renders every results file present, whatever its shape, and shows its values as text: a
figure is data, never markup, and a file that does not parse is named, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import markdown

from clkt.reference.bench_page import read_runs, render_benchmarks
from tests.conftest import REPO

RESULTS = REPO / "bench" / "results"


def test_every_results_file_present_is_rendered_with_its_latest_run() -> None:
    page = render_benchmarks(RESULTS)
    paths = sorted(RESULTS.glob("*.json"))
    assert len(paths) >= 10
    for path in paths:
        runs, bad = read_runs(path)
        assert f"`bench/results/{path.name}`: {len(runs)} run(s) recorded" in page
        assert bad == [], path
        latest = runs[-1]
        if isinstance(latest, dict) and "met" in latest:
            section = page.split(f"`bench/results/{path.name}`", 1)[1].split("\n## ", 1)[0]
            assert f"Goals met: **{'yes' if latest['met'] else 'no'}**" in section, path.name


def test_the_latest_run_is_shown_not_an_earlier_one(tmp_path: Path) -> None:
    lines = [{"bench": "b", "figures": {"wall_s": n}, "goals": {"wall_s": "<= 5"}, "met": n <= 5} for n in (9, 4)]
    (tmp_path / "b.json").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    page = render_benchmarks(tmp_path)
    assert "2 run(s) recorded" in page and "| `wall_s` | 4 |" in page and "| `wall_s` | 9 |" not in page
    assert "Goals met: **yes**" in page and "| `wall_s` | &lt;= 5 | 4 |" in page


def test_odd_and_hostile_files_render_as_text(tmp_path: Path) -> None:
    hostile = {"bench": "x", "figures": {"name": "<script>alert(1)</script>", "link": "[a](javascript:alert(1))",
                                         "*bold*": "a|b", "deep": {"a": {"b": {"c": {"d": {"e": 1}}}}},
                                         "long": list(range(100)), "rows": [{"a": 1}]},
               "goals": "not a table", "met": "maybe"}
    (tmp_path / "a.json").write_text(json.dumps(hostile) + "\n{not json\n", encoding="utf-8")
    (tmp_path / "b.json").write_text("[1, 2, 3]", encoding="utf-8")  # one document, not a record
    (tmp_path / "c.json").write_text("", encoding="utf-8")
    (tmp_path / "d.json").write_bytes(b"\xff\xfe{")
    (tmp_path / "e.json").write_text(json.dumps({"snapshot_id": "s", "jobs": []}), encoding="utf-8")
    page = render_benchmarks(tmp_path)
    assert "line(s) 2 do not parse" in page and "Goals met: **not recorded**" in page
    assert "a list of 100 items (in the file)" in page and "a list of 1 items (in the file)" in page
    assert page.count("No run record to show.") == 3  # b (a list), c (empty), d (not UTF-8 JSON)
    assert "Not a bench run record" in page
    html = markdown.markdown(page, extensions=["tables"])
    assert "<script" not in html and "javascript:alert" not in html.replace("[a](javascript:alert(1))", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<strong>bold" not in html
    assert 'href="javascript' not in html
