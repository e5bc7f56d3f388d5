"""gpu engine status: what each GPU consumer last said about its engine (ready, or why GPU jobs wait)

The Ray engine can be unreachable or asked for resources no node offers; `clkt status` and the status page
read this table to say so, since they run apart from the daemon.

Revision ID: 6115dfb9764e
Revises: 15ca9375799d
Create Date: 2026-12-01 21:11:42.149625
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import storage.types

revision = '6115dfb9764e'
down_revision = '15ca9375799d'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('gpu_engine_status',
    sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('engine', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('detail', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('address', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=True),
    sa.Column('updated_at', storage.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('owner')
    )


def downgrade() -> None:
    op.drop_table('gpu_engine_status')
