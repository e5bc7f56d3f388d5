"""entity occurred index: the status pages' entity table sorted newest first without a full sort

Revision ID: 5c1e0a7d2b94
Revises: 09b20baa164b
Create Date: 2026-12-01 09:05:00
"""
from __future__ import annotations

from alembic import op

revision = '5c1e0a7d2b94'
down_revision = '09b20baa164b'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('entity', schema=None) as batch_op:
        batch_op.create_index('ix_entity_occurred', ['occurred_at', 'id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('entity', schema=None) as batch_op:
        batch_op.drop_index('ix_entity_occurred')
