"""incontext open answer: the in-context track's short answers (clkt.incontext.open_track), one per snapshot,
target, open question, context language and test language, scored by the normaliser

Revision ID: c8e2a4f6b9d3
Revises: a5d8e2c4f6b1
Create Date: 2026-12-06 22:40:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import storage.types

revision = 'c8e2a4f6b9d3'
down_revision = 'a5d8e2c4f6b1'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('incontext_open_answer',
    sa.Column('snapshot_id', sqlmodel.sql.sqltypes.AutoString(length=160), nullable=False),
    sa.Column('target', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('open_qid', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('context_lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('entity_id', sa.BigInteger(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('verdict', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('other_language', sa.Boolean(), nullable=False),
    sa.Column('answer_lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=True),
    sa.Column('answer', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('reason', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('prompt_version', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('truncated', sa.Boolean(), nullable=False),
    sa.Column('input_tokens', sa.Integer(), nullable=False),
    sa.Column('output_tokens', sa.Integer(), nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=False),
    sa.Column('created_at', storage.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('snapshot_id', 'target', 'open_qid', 'context_lang', 'lang')
    )


def downgrade() -> None:
    op.drop_table('incontext_open_answer')
