"""docs/reference/sql-views.md: the SQL views of a freshly migrated store (`storage.views`), with their columns
and definitions."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from clkt.reference._text import code, escape, generated_header, table

__all__ = ["render_sql_views"]

_INTRO = """\
For people who query the store directly (`sqlite3 clkt-data/clkt.db`, pandas `read_sql`, datasette): these views
keep their names and columns while the tables behind them change; a column is added, never renamed or dropped
(CHANGELOG.md, "SQL views"). They are the same on SQLite and PostgreSQL; the SQL below is SQLite's, read back from a
store migrated to the newest migration. Questions and entities are named by their public ids (`qid`, `entity_id`),
the store's row ids ride along as `store_question_id` and `store_entity_id`. Booleans are 0/1 on SQLite.
"""


async def _read() -> list[object]:
    from storage.engine import Store
    from storage.views import view_shapes

    with tempfile.TemporaryDirectory(prefix="clkt-views-") as tmp:
        async with Store(url=f"sqlite+aiosqlite:///{Path(tmp) / 'clkt.db'}") as store:
            return list(await view_shapes(store))


def render_sql_views() -> str:
    from storage.views import VIEW_DOCS, ViewShape

    shapes = [s for s in asyncio.run(_read()) if isinstance(s, ViewShape)]
    undocumented = sorted({s.name for s in shapes} - set(VIEW_DOCS))
    if undocumented:
        raise ValueError(f"views without a line in storage.views.VIEW_DOCS: {undocumented}")
    rows = [[code(s.name), ", ".join(code(c) for c in s.columns), escape(VIEW_DOCS[s.name])] for s in shapes]
    out = generated_header("SQL views", _INTRO) + table(["view", "columns, in order", "one row per"], rows) + "\n"
    for s in shapes:
        out += f"## `{s.name}`\n\n{escape(VIEW_DOCS[s.name])}\n\n```sql\n{s.sql}\n```\n\n"
    return out
