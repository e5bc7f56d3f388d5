"""Alembic environment: always run with a connection handed over by `storage.engine`."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import storage.models  # noqa: F401  (registers the tables)

target_metadata = SQLModel.metadata
connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `clkt db upgrade` (storage.engine), not the alembic CLI")

context.configure(
    connection=connection,
    target_metadata=target_metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
sqlite = connection.dialect.name == "sqlite"
if sqlite:
    # the SQL views (`v_*`) read tables that a batch migration on SQLite recreates ("move and copy": a new table,
    # the old dropped, the new renamed); SQLite refuses that rename while a view names the dropped table unless
    # the legacy rule is on. The view reads the table by name, which is there again after the rename.
    connection.exec_driver_sql("PRAGMA legacy_alter_table = ON")
try:
    with context.begin_transaction():
        context.run_migrations()
finally:
    if sqlite:
        connection.exec_driver_sql("PRAGMA legacy_alter_table = OFF")
