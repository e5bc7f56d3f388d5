"""The SQL views, a public interface (CHANGELOG.md, "SQL views"): what each one holds, and their shapes as a
migrated store has them (name, columns in order, the SQL that defines it).

The views are created and changed by migrations only (`storage/migrations/versions/`); `VIEW_DOCS` says in one
line what a row of each is, and the reference page (`docs/reference/sql-views.md`, `python -m clkt.reference`)
shows it beside the columns and SQL read back from a freshly migrated store, so the page follows the migrations.
A view without a line here fails the page's generation (and its test)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from storage.engine import Store

__all__ = ["VIEW_DOCS", "ViewShape", "view_shapes"]

VIEW_DOCS: dict[str, str] = {
    "v_fresh_entities": "entity that passed the temporal gate for every current target (occurred on or after each "
    "active target's cutoff + buffer, as recorded at the last start), with its pipeline status",
    "v_snapshot_questions": "question of a frozen (or since superseded) snapshot in one of its languages: its text "
    "and options in the snapshot's order, as in its files",
    "v_job_results": "stored answer of a GPU job (`variant` base or injected; `predicted` A-D or NULL when "
    "unparseable; `qid` NULL for a question that is no item of the job's snapshot)",
    "v_pair_results": "job and test language other than its train language: the paper's contingency over the injected "
    "model's test answers (A right in both, B right in the train language only, C right in the test language only, "
    "D wrong in both), `n` = A+B+C+D, Overall = A/n, Transfer = A/(A+B), NULL when the denominator is 0 (what "
    "`clkt report` computes per pair)",
    "v_snapshot_targets": "frozen snapshot and target: `ready` / `probing` / `out_of_window`, its real entities, "
    "those excluded for the target, `valid` = entities - excluded when ready (else 0)",
    "v_entity_accounting": "entity and spec: its one state, `pipeline` (not ready yet) / `ready` (in no snapshot yet) "
    "/ `frozen` (in its own period's snapshot) / `carried` (in a later period's snapshot, `manifest.carried`) / "
    "`dropped` (`reason`: known, ineligible, rejected, failed, expired past `snapshot.carry_max_days`); `month` and "
    "`own_period` are the entity's own date, never the snapshot's",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewShape:
    """One view of a migrated store."""

    name: str
    columns: tuple[str, ...]  # in order
    sql: str  # the definition as the database keeps it (SQLite: the CREATE VIEW statement)


def _tidy(sql: str) -> str:
    """The definition's lines without trailing blanks and empty lines (its words and comments as they are)."""
    return "\n".join(line.rstrip() for line in sql.strip().splitlines() if line.strip())


def _shapes(conn: Connection) -> list[ViewShape]:
    insp = inspect(conn)
    return [
        ViewShape(name=name, columns=tuple(c["name"] for c in insp.get_columns(name)),
                  sql=_tidy(str(insp.get_view_definition(name))))
        for name in sorted(insp.get_view_names())
    ]


async def view_shapes(store: Store) -> list[ViewShape]:
    """Every view of `store` (opened, so migrated to head), sorted by name."""
    async with store.session() as session:
        conn = await session.connection()
        return await conn.run_sync(_shapes)
