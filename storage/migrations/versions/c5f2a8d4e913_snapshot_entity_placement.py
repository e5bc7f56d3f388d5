"""snapshot_entity: where each entity landed (exactly one frozen snapshot of a spec), one frozen snapshot per period,
and the view `v_entity_accounting`

An entity that became ready after its period froze, one over its period's quotas, or one of a period that never
filled is carried into the next snapshot that freezes (`clkt.snapshots.carry`). `snapshot_entity` records, per spec,
the one frozen snapshot that holds an entity (primary key spec + entity: a second builder placing it again fails its
freeze), the entity's own period and whether it was carried there. Existing frozen snapshots are filled in from their
items (each entity in its own period, not carried). The partial unique index `uq_snapshot_frozen_period` lets one
frozen snapshot per (spec, period) exist: two builders freezing the same period on one store, one wins.

`v_entity_accounting` gives every entity one state: `pipeline` (not ready yet), `ready` (ready, in no snapshot:
its period's snapshot is not built yet, or it waits to be carried), `frozen` (in its own period's snapshot),
`carried` (in a later snapshot), `dropped` (with `reason`: known, ineligible, rejected, failed, expired; a ready
entity in no snapshot that an active target knows, one added since it became ready, is dropped as known). `month` is the UTC month of its own date.

Revision ID: c5f2a8d4e913
Revises: a7e3c9d1f502
Create Date: 2026-12-06 02:10:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.types

revision = 'c5f2a8d4e913'
down_revision = 'a7e3c9d1f502'
branch_labels = None
depends_on = None


def _month(dialect: str) -> str:
    if dialect == "postgresql":
        return "to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM')"
    return "strftime('%Y-%m', e.occurred_at)"


# a ready entity that an active target (the configuration the daemon last started with) knows
_KNOWN = ("EXISTS (SELECT 1 FROM probe p JOIN target t ON t.active AND p.target_model IN (t.name, t.model) "
          "WHERE p.entity_id = e.id AND p.known)")


def _accounting(dialect: str) -> str:
    return f"""
SELECT e.id AS entity_id, e.source, e.external_id, e.domain, e.occurred_at, {_month(dialect)} AS month, e.status,
       se.spec, se.snapshot_id, s.period AS snapshot_period, se.own_period,
       CASE
         WHEN se.snapshot_id IS NOT NULL AND se.carried THEN 'carried'
         WHEN se.snapshot_id IS NOT NULL THEN 'frozen'
         WHEN e.status IN ('discovered', 'probing', 'generating') THEN 'pipeline'
         WHEN e.status = 'ready' AND {_KNOWN} THEN 'dropped'
         WHEN e.status = 'ready' THEN 'ready'
         ELSE 'dropped'
       END AS state,
       CASE
         WHEN se.snapshot_id IS NOT NULL THEN NULL
         WHEN e.status = 'ready' AND {_KNOWN} THEN 'known'
         WHEN CAST(e.status AS VARCHAR) IN ('known', 'ineligible', 'rejected', 'failed', 'expired')
           THEN CAST(e.status AS VARCHAR)
         ELSE NULL
       END AS reason
FROM entity e
LEFT JOIN snapshot_entity se ON se.entity_id = e.id
LEFT JOIN snapshot s ON s.id = se.snapshot_id"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        # PostgreSQL keeps the statuses in an enum type; the new value may not be used in this transaction, so the
        # view below compares the status as text.
        op.execute("ALTER TYPE entitystatus ADD VALUE IF NOT EXISTS 'expired'")
    op.create_table(
        'snapshot_entity',
        sa.Column('spec', sa.String(length=64), nullable=False),
        sa.Column('entity_id', sa.Integer(), nullable=False),
        sa.Column('snapshot_id', sa.String(length=160), nullable=False),
        sa.Column('own_period', sa.String(length=16), nullable=False),
        sa.Column('carried', sa.Boolean(), nullable=False),
        sa.Column('placed_at', storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['entity_id'], ['entity.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['snapshot_id'], ['snapshot.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('spec', 'entity_id'),
    )
    op.create_index('ix_snapshot_entity_snapshot', 'snapshot_entity', ['snapshot_id'], unique=False)
    op.execute(
        "INSERT INTO snapshot_entity (spec, entity_id, snapshot_id, own_period, carried, placed_at) "
        "SELECT s.spec, si.entity_id, MIN(s.id), MIN(s.period), false, MIN(s.built_at) "
        "FROM snapshot_item si JOIN snapshot s ON s.id = si.snapshot_id AND s.status = 'frozen' "
        "GROUP BY s.spec, si.entity_id"
    )
    op.create_index(
        'uq_snapshot_frozen_period', 'snapshot', ['spec', 'period'], unique=True,
        sqlite_where=sa.text("status = 'frozen'"), postgresql_where=sa.text("status = 'frozen'"),
    )
    op.execute(f"CREATE VIEW v_entity_accounting AS {_accounting(op.get_bind().dialect.name)}")


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS v_entity_accounting")
    op.drop_index('uq_snapshot_frozen_period', table_name='snapshot')
    op.drop_index('ix_snapshot_entity_snapshot', table_name='snapshot_entity')
    op.drop_table('snapshot_entity')
