"""incontext answer scorer: which scorer gave each in-context answer (`generate` with the letter parse, or
`option-loglik-norm` for a local base target, the scorer its parametric jobs are headlined with); the answers
stored before it were all `generate`

Revision ID: b4d91e6a3c27
Revises: c8e2a4f6b913
Create Date: 2026-12-04 06:30:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = 'b4d91e6a3c27'
down_revision = 'c8e2a4f6b913'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('incontext_answer', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scorer', sqlmodel.sql.sqltypes.AutoString(length=32), server_default='generate',
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('incontext_answer', schema=None) as batch_op:
        batch_op.drop_column('scorer')
