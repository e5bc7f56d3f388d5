"""gpu job typed config and summary: every job's config and summary in the one shape this version reads

A job's config is now read as a `GpuSettings` (unknown keys refused): keys that earlier versions kept but no
setting reads (and the `"target"` key nothing wrote) are dropped. A job's summary is now always the typed
summary's JSON (`clkt.evaluate.summary.JobSummary`): the flat dicts of earlier versions
(`"base:generate:accuracy"`, `"learn:<scorer>:p_value"`, `"learn-control:..."`, `"scorers": "a,b"`) are rewritten
into it field by field, nothing recomputed. The conversion is written out here as it stands at this revision
(a migration never imports the product's models, which move on).

No schema change. The downgrade leaves the rows as they are: the previous version reads both shapes.

Revision ID: d3a8e6f0c251
Revises: bc47c6ff3049
Create Date: 2026-12-03 08:30:00.000000
"""
from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa
from alembic import op

import storage.types

revision = 'd3a8e6f0c251'
down_revision = 'bc47c6ff3049'
branch_labels = None
depends_on = None

# `clkt.config.GpuSettings`'s fields at this revision
GPU_FIELDS = frozenset((
    'enabled', 'devices', 'lora_r', 'lora_alpha', 'lora_dropout', 'learning_rate', 'full_ft_learning_rate',
    'max_grad_norm', 'batch_size', 'epochs', 'target_modules', 'max_seq_len', 'packing', 'scorers', 'parse', 'circular',
    'max_new_tokens', 'eval_batch_size', 'eval_batch_max', 'job_timeout_s', 'max_attempts', 'torch_threads', 'seed',
    'engine', 'ray_address', 'ray_namespace', 'num_gpus', 'num_cpus', 'resources', 'ray_max_jobs', 'ray_worker_dir',
    'gradient_checkpointing', 'attn_implementation', 'micro_batch_size', 'probe_device', 'probe_cache_size',
    'probe_cache_gb',
))
# `clkt.evaluate.summary`'s flat reading at this revision: the keys kept as they are, Learn's fields
_KEPT = ('selection_scorer', 'generate_parse', 'val_questions', 'test_questions', 'control_questions', 'train_examples',
         'train_tokens_per_s', 'resumed_after_epoch', 'epochs', 'target_family', 'target_size_b', 'target_model_id',
         'control')
_LEARN_FIELDS = ('n', 'base_accuracy', 'injected_accuracy', 'gain', 'gained', 'lost', 'p_value', 'learned')

_jobs = sa.table(
    'gpu_job', sa.column('id', sa.Integer()), sa.column('config', storage.types.JSONType),
    sa.column('summary', storage.types.JSONType),
)


def is_flat(summary: object) -> bool:
    return isinstance(summary, Mapping) and 'scores' not in summary and 'selection_scorer' in summary


def nested_summary(flat: Mapping[str, object]) -> dict[str, object]:
    """A flat summary as the typed summary's JSON (values kept as they were stored)."""
    out: dict[str, object] = {k: flat[k] for k in _KEPT if k in flat}
    raw_scorers = flat.get('scorers') or ''
    if isinstance(raw_scorers, str):
        out['scorers'] = [s for s in raw_scorers.split(',') if s]
    else:
        out['scorers'] = list(raw_scorers) if isinstance(raw_scorers, (list, tuple)) else []
    scores: dict[tuple[int, str], dict[str, object]] = {}
    learn: dict[str, dict[str, dict[str, object]]] = {'learn': {}, 'learn-control': {}}
    for key, value in flat.items():
        head, _, rest = key.partition(':')
        scorer, _, name = rest.rpartition(':')
        if not scorer:
            continue
        if head in ('base', 'injected') and name in ('accuracy', 'parse_failure_rate'):
            order = 0 if head == 'base' else 1
            scores.setdefault((order, scorer), {'variant': head, 'scorer': scorer, 'accuracy': None})[name] = value
        elif head in learn and name in _LEARN_FIELDS:
            learn[head].setdefault(scorer, {})[name] = value
    out['scores'] = [scores[k] for k in sorted(scores)]
    out['learn'] = learn['learn']
    out['learn_control'] = learn['learn-control']
    return out


def one_shape(config: object, summary: object) -> tuple[dict[str, object], dict[str, object]] | None:
    """The row's config and summary in this revision's shape; None when they already are."""
    cfg = dict(config) if isinstance(config, Mapping) else {}
    new_cfg = {k: v for k, v in cfg.items() if k in GPU_FIELDS}
    new_summary = nested_summary(summary) if isinstance(summary, Mapping) and is_flat(summary) else summary
    if new_cfg == config and new_summary == summary:
        return None
    return new_cfg, dict(new_summary) if isinstance(new_summary, Mapping) else {}


def upgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.select(_jobs.c.id, _jobs.c.config, _jobs.c.summary)).all()
    for job_id, config, summary in rows:
        changed = one_shape(config, summary)
        if changed is not None:
            conn.execute(_jobs.update().where(_jobs.c.id == job_id).values(config=changed[0], summary=changed[1]))


def downgrade() -> None:
    pass
