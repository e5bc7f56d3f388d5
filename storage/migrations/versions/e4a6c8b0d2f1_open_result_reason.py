"""open result reason: the open answer's identified language and the scorer's reason, stored beside its verdict
(issue 47: the open predictions exports carry them); rows stored before have an empty reason and no language

Revision ID: e4a6c8b0d2f1
Revises: d9e4b7a1c3f6
Create Date: 2026-12-06 08:50:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = 'e4a6c8b0d2f1'
down_revision = 'd9e4b7a1c3f6'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('open_result', schema=None) as batch_op:
        batch_op.add_column(sa.Column('answer_lang', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=True))
        batch_op.add_column(sa.Column('reason', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False,
                                      server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('open_result', schema=None) as batch_op:
        batch_op.drop_column('reason')
        batch_op.drop_column('answer_lang')
