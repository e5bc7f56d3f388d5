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
with context.begin_transaction():
    context.run_migrations()
