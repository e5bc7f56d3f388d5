"""gpu job seed: a job's identity is (snapshot, target, strategy, train language, seed) (`spec.seeds`); every
existing job becomes seed 0, the one seed of a spec that names none

On SQLite the unique constraint changes by recreating `gpu_job` (alembic's batch "move and copy"). Foreign keys
are on in the migration's transaction (and cannot be turned off inside it), so dropping the old table would
cascade into its children (`question_result`, `result_pack`): their rows are kept aside in temporary tables for
the move and written back after it, unchanged (ids included).

The downgrade removes the jobs of seeds other than 0 (with their results): the previous version has no room
for them.

Revision ID: f1b9c3d5e7a2
Revises: a5d2f81c3e47
Create Date: 2026-12-03 23:40:00.000000
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op
from alembic.operations import BatchOperations

revision = 'f1b9c3d5e7a2'
down_revision = 'a5d2f81c3e47'
branch_labels = None
depends_on = None

_CHILDREN = ('question_result', 'result_pack')  # the tables whose rows reference gpu_job (ON DELETE CASCADE)
_OLD = ('snapshot_id', 'target_model', 'strategy', 'train_lang')


@contextmanager
def _children_kept() -> Iterator[None]:
    """On SQLite: the children's rows outlive the recreation of `gpu_job` (see the module docstring)."""
    bind = op.get_bind()
    sqlite = bind.dialect.name == 'sqlite'
    if sqlite:
        for t in _CHILDREN:
            op.execute(f'CREATE TEMP TABLE _keep_{t} AS SELECT * FROM {t}')
    yield
    if sqlite:
        for t in _CHILDREN:
            op.execute(f'DELETE FROM {t}')  # nothing when the drop cascaded; everything when it did not
            op.execute(f'INSERT INTO {t} SELECT * FROM _keep_{t} WHERE job_id IN (SELECT id FROM gpu_job)')
            op.execute(f'DROP TABLE _keep_{t}')


def _recreate(change: Callable[[BatchOperations], None]) -> None:
    with _children_kept(), op.batch_alter_table('gpu_job', schema=None) as batch_op:
        change(batch_op)


def upgrade() -> None:
    def change(b: BatchOperations) -> None:
        b.add_column(sa.Column('seed', sa.Integer(), server_default='0', nullable=False))
        b.drop_constraint('uq_gpujob_identity', type_='unique')
        b.create_unique_constraint('uq_gpujob_identity', [*_OLD, 'seed'])

    _recreate(change)


def downgrade() -> None:
    op.execute('DELETE FROM question_result WHERE job_id IN (SELECT id FROM gpu_job WHERE seed <> 0)')
    op.execute('DELETE FROM result_pack WHERE job_id IN (SELECT id FROM gpu_job WHERE seed <> 0)')
    op.execute('DELETE FROM gpu_job WHERE seed <> 0')

    def change(b: BatchOperations) -> None:
        b.drop_constraint('uq_gpujob_identity', type_='unique')
        b.create_unique_constraint('uq_gpujob_identity', list(_OLD))
        b.drop_column('seed')

    _recreate(change)
