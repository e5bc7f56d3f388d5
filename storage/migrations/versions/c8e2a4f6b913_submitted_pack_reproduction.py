"""submitted pack reproduction: `clkt submit --reproduce`'s result on the pack's row (letters agreed / checked,
the threshold, reproduced or not, the engine and when); null until a re-run, the latest re-run replaces it;
and when it was stored (`reproduced_at`, read by the leaderboard's window fingerprint)

Revision ID: c8e2a4f6b913
Revises: f1b9c3d5e7a2
Create Date: 2026-12-04 04:00:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.types

revision = 'c8e2a4f6b913'
down_revision = 'f1b9c3d5e7a2'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('submitted_pack', schema=None) as batch_op:
        batch_op.add_column(sa.Column('reproduction', sa.JSON().with_variant(sa.JSON(none_as_null=True), 'postgresql'),
                                      nullable=True))
        batch_op.add_column(sa.Column('reproduced_at', storage.types.UTCDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('submitted_pack', schema=None) as batch_op:
        batch_op.drop_column('reproduced_at')
        batch_op.drop_column('reproduction')
