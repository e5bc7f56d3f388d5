"""figure cache: the leaderboard's scored submitted packs and rows, kept by the key of their content and code (issue
45 item 3); a cache: its rows can be deleted at any time

Revision ID: e2b6f4a8c1d7
Revises: e4a6c8b0d2f1
Create Date: 2026-12-06 09:00:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import storage.types

revision = 'e2b6f4a8c1d7'
down_revision = 'e4a6c8b0d2f1'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('figure_cache',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('payload', sa.LargeBinary(), nullable=False),
    sa.Column('made_at', storage.types.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    with op.batch_alter_table('figure_cache', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_figure_cache_kind'), ['kind'], unique=False)
        batch_op.create_index(batch_op.f('ix_figure_cache_made_at'), ['made_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('figure_cache', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_figure_cache_made_at'))
        batch_op.drop_index(batch_op.f('ix_figure_cache_kind'))
    op.drop_table('figure_cache')
