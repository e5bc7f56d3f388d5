"""open judgement: the open track's jury verdicts (issue 47), one row per stored open answer and judge and one for
the jury's majority (judge '*jury*'); plain strings, no PostgreSQL enum; rows go with their answer

Revision ID: f3c7a9e1b5d2
Revises: e2b6f4a8c1d7
Create Date: 2026-12-06 12:00:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import storage.types

revision = 'f3c7a9e1b5d2'
down_revision = 'e2b6f4a8c1d7'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('open_judgement',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('open_result_id', sa.Integer(), nullable=False),
    sa.Column('judge', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('panel', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('verdict', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
    sa.Column('reason', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
    sa.Column('error', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=True),
    sa.Column('prompt_version', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('graded_at', storage.types.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['open_result_id'], ['open_result.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('open_result_id', 'judge', name='uq_open_judgement_judge')
    )
    with op.batch_alter_table('open_judgement', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_open_judgement_open_result_id'), ['open_result_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_open_judgement_panel'), ['panel'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('open_judgement', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_open_judgement_panel'))
        batch_op.drop_index(batch_op.f('ix_open_judgement_open_result_id'))
    op.drop_table('open_judgement')
