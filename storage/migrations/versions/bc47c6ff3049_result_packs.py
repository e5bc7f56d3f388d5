"""result packs: a finished job's test-split answers per scorer, packed for the leaderboard

The leaderboard pools every job of a window of snapshots; reading their `question_result` rows (millions) is
too slow for a page, so each job's answers are also kept as one packed row per scorer (`storage.result_packs`),
written with the results. Jobs stored before this revision have no pack: the reader builds theirs from the
results on the fly, so no data is migrated here.

Revision ID: bc47c6ff3049
Revises: 6115dfb9764e
Create Date: 2026-12-01 20:46:10.253544
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import storage.types

revision = 'bc47c6ff3049'
down_revision = '6115dfb9764e'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('result_pack',
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('scorer', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('langs', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('questions', sa.Integer(), nullable=False),
    sa.Column('question_ids', sa.LargeBinary(), nullable=False),
    sa.Column('entity_ids', sa.LargeBinary(), nullable=False),
    sa.Column('flags', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', storage.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['gpu_job.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('job_id', 'scorer')
    )


def downgrade() -> None:
    op.drop_table('result_pack')
