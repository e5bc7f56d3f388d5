"""Audit files that crawled text cannot break: the HTML form's script stays one script whatever the text,
CSV cells that a spreadsheet would run as formulas are neutralised (in the file and in the form's JS),
and `audit score` takes fields over 128 KiB, non-UTF-8 files, and refuses malformed ones in one clear error."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clkt.errors import UserError
from clkt.snapshots.audit import COLUMNS, CRITERIA, AuditPair, _csv, _html, score_files, write_sample

HOSTILE = ["<!--<script>", "</script><script>alert(1)</script>", "=HYPERLINK(\"http://x\")", "+1+1", "-2+3",
           "@SUM(A1)", "\tTAB", "\u2028line", "a & b > c"]


def pair(i: int, text: str) -> AuditPair:
    return AuditPair(snapshot_id="snap1", language="en", domain="music", qid=i, entity=text, document=f"doc {text}",
                     question=text, options=[text, "b", "c", "d"], answer=text)


def _script(html: str) -> str:
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 1  # exactly one script element: nothing crawled opened or closed one
    return scripts[0]


def test_html_form_script_survives_crawled_text() -> None:
    page = _html([pair(i, t) for i, t in enumerate(HOSTILE)], "Audit")
    script = _script(page)
    assert "<!--" not in script and "<script" not in script and "\u2028" not in script
    assert page.count("<script>") == 1 and page.count("</script>") == 1


@settings(max_examples=80, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("<>/!-&'\"=+@sScriptSCRIPT \u2028\t\n")), max_size=40))
def test_fuzz_html_form_has_one_script(text: str) -> None:
    page = _html([pair(0, text)], "Audit")
    _script(page)
    assert page.lower().count("<script") == 1 and page.lower().count("</script") == 1


def test_hostile_question_text_is_text_in_the_form() -> None:
    import html.parser
    import json

    texts = ["<script>alert(1)</script>", "it's \"quoted\" & 'single'", "{{ 7*7 }} {% if true %}x{% endif %} {# c #}",
             "</section><h1>x</h1>", " line ", "日本語の質問"]
    page = _html([pair(i, t) for i, t in enumerate(texts)], "Audit of <b>snap1</b> {{ title }}")
    seen: list[str] = []
    tags: list[str] = []

    class Reader(html.parser.HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            tags.append(tag)

        def handle_data(self, data: str) -> None:
            seen.append(data)

    Reader(convert_charrefs=True).feed(page)
    assert tags.count("script") == 1 and tags.count("h1") == 1 and tags.count("section") == len(texts)
    assert "Audit of <b>snap1</b> {{ title }}" in seen  # the title: text, not markup, not a template
    for t in texts:
        assert t in seen  # the question, shown as written (escaped in the HTML, never run or rendered)
        assert f"doc {t}" in seen
    assert "49" not in page
    found = re.search(r"const DATA = (.*);\n", page)
    assert found is not None
    data = json.loads(found.group(1))
    assert [row[COLUMNS.index("question")] for row in data] == texts  # the script saves the text as written


def test_csv_cells_are_neutralised_and_the_form_js_too() -> None:
    rows = list(csv.reader(io.StringIO(_csv([pair(i, t) for i, t in enumerate(HOSTILE)]))))
    for row in rows[1:]:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    assert rows[3][COLUMNS.index("entity")] == "'=HYPERLINK(\"http://x\")"
    assert "if (/^[=+\\-@\\t\\r]/.test(v)) v = \"'\" + v;" in _html([pair(0, "x")], "t")


def _sheet(tmp_path: Path, name: str, rows: list[list[str]], encoding: str = "utf-8") -> Path:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow(r)
    p = tmp_path / name
    p.write_bytes(buf.getvalue().encode(encoding))
    return p


def _row(sid: str, document: str, tick: str = "") -> list[str]:
    """A row whose verdict is `correct`, or `unrelated` when `tick` is given."""
    return [sid, "snap1", "en", "music", "1", "Entité", document, "q", "A. a", "a", "" if tick else "1", tick, "", "", "", ""]


def test_score_takes_huge_fields_and_non_utf8(tmp_path: Path) -> None:
    big = _sheet(tmp_path, "big.csv", [_row("snap1:1", "x" * 300_000), _row("snap1:2", "y", "1")])
    latin = _sheet(tmp_path, "latin.csv", [_row("snap1:1", "café"), _row("snap1:2", "é", "")], encoding="cp1252")
    utf16 = _sheet(tmp_path, "u16.csv", [_row("snap1:1", "文書"), _row("snap1:2", "y", "1")], encoding="utf-16")
    res = score_files([big, latin, utf16])
    assert res.annotators == 3 and res.overall.pairs == 2 and res.overall.correct == 1


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "not an audit sheet"),
        (b"\x00\x01\x02garbage", "not"),
        (b"sample_id,snapshot_id\n1,2\n", "missing columns"),
        (",".join(COLUMNS).encode() + b"\nsnap1:1,snap1,music\n", "does not have the sheet's columns"),
        (",".join(COLUMNS).encode() + b"\n" + b",".join([b"snap1:1", b"snap1", b"en", b"music", b"1", b"e", b"d\x00", b"q",
                                                              b"o", b"a", b"1", b"", b"", b"", b"", b""]) + b"\n", "bad.csv:2"),
        (",".join(COLUMNS).encode() + b"\n" + ",".join(_row("snap1:1", "d", "maybe")).encode() + b"\n", "is not a tick"),
    ],
    ids=["empty", "binary", "foreign", "short-row", "nul-byte", "bad-tick"],
)
def test_score_refuses_malformed_sheets_with_one_clear_error(tmp_path: Path, content: bytes, match: str) -> None:
    p = tmp_path / "bad.csv"
    p.write_bytes(content)
    try:
        res = score_files([p])
    except UserError as e:
        assert match in str(e) and "\n" not in str(e)
    else:  # a NUL inside a field may be read as data: then the sheet scores
        assert match == "bad.csv:2" and res.overall.pairs == 1


def test_write_sample_round_trip_with_hostile_text(tmp_path: Path) -> None:
    csv_path, html_path = write_sample([pair(i, t) for i, t in enumerate(HOSTILE)], tmp_path / "a")
    with pytest.raises(UserError, match="no verdict"):
        score_files([csv_path])  # the form as written holds no verdict
    rows = list(csv.reader(io.StringIO(csv_path.read_text(encoding="utf-8"))))
    for row in rows[1:]:
        row[COLUMNS.index("correct")] = "1"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    csv_path.write_text(buf.getvalue(), encoding="utf-8")
    assert score_files([csv_path]).overall.pairs == len(HOSTILE)
    _script(html_path.read_text(encoding="utf-8"))
    assert set(CRITERIA) <= set(COLUMNS)
