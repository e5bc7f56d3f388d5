"""submitted open answers: a submitted pack's open answers (format version 2's open_answers.jsonl) as scored at
intake, gzip'd; packs stored before (every version-1 pack) have none: no open track

Revision ID: a5d8e2c4f6b1
Revises: f3c7a9e1b5d2
Create Date: 2026-12-06 22:10:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = 'a5d8e2c4f6b1'
down_revision = 'f3c7a9e1b5d2'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('submitted_pack', schema=None) as batch_op:
        batch_op.add_column(sa.Column('open_answers', sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('submitted_pack', schema=None) as batch_op:
        batch_op.drop_column('open_answers')
