"""incontext answer: the in-context track's answers (clkt.incontext), one per snapshot, target, question, context
language and test language

Revision ID: e7c41a9b2d10
Revises: 584e9e4ac56b
Create Date: 2026-12-03 09:10:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import storage.types

revision = 'e7c41a9b2d10'
down_revision = '584e9e4ac56b'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('incontext_answer',
    sa.Column('snapshot_id', sqlmodel.sql.sqltypes.AutoString(length=160), nullable=False),
    sa.Column('target', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('qid', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('context_lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('entity_id', sa.BigInteger(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('letter', sqlmodel.sql.sqltypes.AutoString(length=1), nullable=True),
    sa.Column('correct', sa.Boolean(), nullable=False),
    sa.Column('truncated', sa.Boolean(), nullable=False),
    sa.Column('input_tokens', sa.Integer(), nullable=False),
    sa.Column('output_tokens', sa.Integer(), nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=False),
    sa.Column('created_at', storage.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('snapshot_id', 'target', 'qid', 'context_lang', 'lang')
    )


def downgrade() -> None:
    op.drop_table('incontext_answer')
