"""incontext open judgement: the jury's verdicts on the in-context track's short answers (issue 47), one row per
stored answer (incontext_open_answer's key) and judge and one for the jury's majority (judge '*jury*'); the columns
of open_judgement; rows go with their answer

Revision ID: b7d3f5a9c2e4
Revises: c8e2a4f6b9d3
Create Date: 2026-12-07 01:20:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import storage.types

revision = 'b7d3f5a9c2e4'
down_revision = 'c8e2a4f6b9d3'
branch_labels = None
depends_on = None

_KEY = ['snapshot_id', 'target', 'open_qid', 'context_lang', 'lang']


def upgrade() -> None:
    op.create_table('incontext_open_judgement',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('judge', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('panel', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('verdict', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
    sa.Column('reason', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
    sa.Column('error', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=True),
    sa.Column('prompt_version', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('graded_at', storage.types.UTCDateTime(), nullable=False),
    sa.Column('snapshot_id', sqlmodel.sql.sqltypes.AutoString(length=160), nullable=False),
    sa.Column('target', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('open_qid', sa.BigInteger(), nullable=False),
    sa.Column('context_lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.ForeignKeyConstraint(_KEY, [f'incontext_open_answer.{c}' for c in _KEY], name='fk_incontext_open_judgement_answer',
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint(*_KEY, 'judge', name='uq_incontext_open_judgement_judge')
    )
    with op.batch_alter_table('incontext_open_judgement', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_incontext_open_judgement_panel'), ['panel'], unique=False)

def downgrade() -> None:
    with op.batch_alter_table('incontext_open_judgement', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_incontext_open_judgement_panel'))
    op.drop_table('incontext_open_judgement')
