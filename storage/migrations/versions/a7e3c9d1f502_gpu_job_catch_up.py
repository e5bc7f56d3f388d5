"""gpu job catch-up: a job queued for a target that joined after its snapshot froze (`clkt.roster`) is marked, and
the GPU queue claims it after the jobs queued at a freeze (a month's own jobs never wait behind a new target's back
catalogue); every existing job is a freeze's (false)

The downgrade drops the column with SQLite's own ALTER TABLE ... DROP COLUMN (3.35+), not a batch recreation of
`gpu_job`, which would cascade into its children (`question_result`, `result_pack`).

Revision ID: a7e3c9d1f502
Revises: b4d91e6a3c27
Create Date: 2026-12-04 14:05:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = 'a7e3c9d1f502'
down_revision = 'b4d91e6a3c27'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('gpu_job', sa.Column('catch_up', sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    op.execute('ALTER TABLE gpu_job DROP COLUMN catch_up')
