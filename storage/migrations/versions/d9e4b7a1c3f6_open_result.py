"""open result: the open track's scored answers (issue 47), one per job, open question, language, variant and
scorer; public ids (open questions have no `question` rows), plain strings (no PostgreSQL enum)

Revision ID: d9e4b7a1c3f6
Revises: c5f2a8d4e913
Create Date: 2026-12-06 05:50:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = 'd9e4b7a1c3f6'
down_revision = 'c5f2a8d4e913'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('open_result',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('open_qid', sa.BigInteger(), nullable=False),
    sa.Column('entity_id', sa.BigInteger(), nullable=False),
    sa.Column('domain', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('fact', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('variant', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('scorer', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('split', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('verdict', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('other_language', sa.Boolean(), nullable=False),
    sa.Column('answer', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['gpu_job.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('job_id', 'open_qid', 'lang', 'variant', 'scorer', name='uq_open_result_identity')
    )
    with op.batch_alter_table('open_result', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_open_result_job_id'), ['job_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('open_result', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_open_result_job_id'))
    op.drop_table('open_result')
