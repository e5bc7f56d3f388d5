"""The generated pages' Markdown pieces (`clkt.reference._text`): any text is shown as written, never as markup."""

from __future__ import annotations

import markdown

from clkt.reference._text import code, escape, prose, table

HOSTILE = 'a <script>x</script> [l](javascript:y) <http://z> *b* _c_ a|b &amp; \\ `d<e>` snake_case'


def _html(text: str) -> str:
    return markdown.markdown(text, extensions=["tables", "fenced_code"])


def test_escaped_text_renders_as_written() -> None:
    html = _html(escape(HOSTILE))
    assert "<script" not in html and "<a " not in html and "<em>" not in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "[l](javascript:y)" in html and "*b* _c_ a|b" in html
    assert "&amp;amp;" in html and "<code>d&lt;e&gt;</code>" in html and "snake_case" in html  # a code span stays one
    assert escape("line\none\t two") == "line one two"


def test_a_cell_with_a_pipe_stays_one_cell() -> None:
    html = _html(table(["a", "b"], [[escape("x|y"), code("p|q")]]))
    assert html.count("<td>") == 2 and "x|y" in html and "<code>p|q</code>" in html
    assert code("plain") == "`plain`" and code("") == "<code></code>"


def test_a_docstring_keeps_its_fences_and_lists() -> None:
    doc = """Title line.

    A paragraph with `code` and *emphasis*
    over two lines.

    - one item
      continued
    - two <b>

    ```
    x  y   <kept as="is">
    ```
    """
    out = prose(doc)
    assert out.startswith("Title line.\n\nA paragraph with `code` and *emphasis* over two lines.\n\n")
    assert "- one item continued\n\n- two &lt;b&gt;" in out
    assert "```text\nx  y   <kept as=\"is\">\n```" in out
    html = _html(out)
    assert "<em>emphasis</em>" in html and "<b>" not in html and "<pre><code class=\"language-text\">x  y   &lt;kept as=&quot;is&quot;&gt;" in html
    assert prose(None) == "" and prose("```\nnever closed") == ""
