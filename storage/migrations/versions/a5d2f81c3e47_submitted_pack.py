"""submitted pack: result packs made elsewhere by `clkt evaluate`, verified and taken in by `clkt submit`

Revision ID: a5d2f81c3e47
Revises: e7c41a9b2d10
Create Date: 2026-12-03 20:30:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import storage.types

revision = 'a5d2f81c3e47'
down_revision = 'e7c41a9b2d10'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('submitted_pack',
    sa.Column('pack_sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('snapshot_id', sqlmodel.sql.sqltypes.AutoString(length=160), nullable=False),
    sa.Column('target_name', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('model', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
    sa.Column('model_revision', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
    sa.Column('weights_sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('cutoff', sa.Date(), nullable=False),
    sa.Column('strategy', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('train_langs', sa.JSON().with_variant(sa.JSON(none_as_null=True), 'postgresql'), nullable=False),
    sa.Column('scorers', sa.JSON().with_variant(sa.JSON(none_as_null=True), 'postgresql'), nullable=False),
    sa.Column('format_version', sa.Integer(), nullable=False),
    sa.Column('clkt_version', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('predictions', sa.Integer(), nullable=False),
    sa.Column('claims_match', sa.Boolean(), nullable=False),
    sa.Column('claims_note', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('metrics', sa.JSON().with_variant(sa.JSON(none_as_null=True), 'postgresql'), nullable=False),
    sa.Column('manifest', sa.JSON().with_variant(sa.JSON(none_as_null=True), 'postgresql'), nullable=False),
    sa.Column('answers', sa.LargeBinary(), nullable=False),
    sa.Column('submitted_at', storage.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['snapshot_id'], ['snapshot.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('pack_sha256')
    )
    with op.batch_alter_table('submitted_pack', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_submitted_pack_snapshot_id'), ['snapshot_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('submitted_pack', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_submitted_pack_snapshot_id'))
    op.drop_table('submitted_pack')
