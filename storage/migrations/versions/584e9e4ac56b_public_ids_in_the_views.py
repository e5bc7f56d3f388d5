"""public ids in the SQL views: every view names questions and entities as a snapshot's files do

`snapshot_item` records each question's public `qid` and its entity's public id (the content-derived ids of
`clkt.snapshots.ids`, written at freeze; existing rows are filled here from the question's identity), and the views
`v_snapshot_questions` and `v_job_results` carry them as `qid` and `entity_id`; the store's row ids ride along as
`store_question_id` and `store_entity_id`. A job's answer to a question that is no item of its snapshot (none in a
store the product wrote) has a NULL `qid`. The hashing rule is copied here: a migration never imports the product.

Revision ID: 584e9e4ac56b
Revises: d3a8e6f0c251
Create Date: 2026-12-03 08:45:00
"""
from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = '584e9e4ac56b'
down_revision = 'd3a8e6f0c251'
branch_labels = None
depends_on = None


def _public_id(kind: str, *parts: str) -> int:
    """`clkt.snapshots.ids` as of this migration: the first 13 hex digits of sha256(kind \\x1f parts)."""
    return int(hashlib.sha256("\x1f".join((kind, *parts)).encode("utf-8")).hexdigest()[:13], 16)


def _json_at(dialect: str, array: str, index: str) -> str:
    if dialect == "postgresql":
        return f"({array} ->> CAST({index} AS INTEGER))"
    return f"json_extract({array}, '$[' || ({index}) || ']')"


def _order(dialect: str, i: int) -> str:
    if dialect == "postgresql":
        return f"(si.option_order ->> {i})"
    return f"json_extract(si.option_order, '$[{i}]')"


def _has_language(dialect: str, lang: str) -> str:
    if dialect == "postgresql":
        return f"EXISTS (SELECT 1 FROM json_array_elements_text(s.manifest -> 'languages') AS ml(value) WHERE ml.value = {lang})"
    return f"EXISTS (SELECT 1 FROM json_each(s.manifest, '$.languages') AS ml WHERE ml.value = {lang})"


def _snapshot_questions(dialect: str, *, public: bool) -> str:
    options = ",\n".join(
        f"    {_json_at(dialect, 'tr.options', _order(dialect, i))} AS option_{letter}" for i, letter in enumerate("abcd")
    )
    ids = "si.qid, tr.lang, si.public_entity_id AS entity_id" if public else "si.question_id, tr.lang, si.entity_id"
    tail = ",\n       si.question_id AS store_question_id, si.entity_id AS store_entity_id" if public else ""
    return f"""
SELECT si.snapshot_id, {ids}, s.spec, s.period, e.domain, si.split,
       tr.question,
{options},
       si.answer_letter, s.status AS snapshot_status, q.slot, e.source, e.external_id{tail}
FROM snapshot_item si
JOIN snapshot s ON s.id = si.snapshot_id AND s.status IN ('frozen', 'superseded')
JOIN question q ON q.id = si.question_id
JOIN entity e ON e.id = si.entity_id
JOIN (
    SELECT t.question_id, t.lang, t.question, t.options FROM translation t
    UNION ALL
    SELECT q2.id AS question_id, q2.lang, q2.question, q2.options FROM question q2
    WHERE NOT EXISTS (SELECT 1 FROM translation t2 WHERE t2.question_id = q2.id AND t2.lang = q2.lang)
) tr ON tr.question_id = si.question_id
WHERE {_has_language(dialect, "tr.lang")}"""


def _job_results(*, public: bool) -> str:
    if not public:
        return """
SELECT r.job_id, j.snapshot_id, r.question_id, r.lang, j.target_model AS target, j.strategy, j.train_lang,
       r.variant, r.scorer, r.split, r.predicted, r.correct, q.entity_id
FROM question_result r
JOIN gpu_job j ON j.id = r.job_id
JOIN question q ON q.id = r.question_id"""
    return """
SELECT r.job_id, j.snapshot_id, si.qid, r.lang, j.target_model AS target, j.strategy, j.train_lang,
       r.variant, r.scorer, r.split, r.predicted, r.correct, si.public_entity_id AS entity_id,
       r.question_id AS store_question_id, q.entity_id AS store_entity_id
FROM question_result r
JOIN gpu_job j ON j.id = r.job_id
JOIN question q ON q.id = r.question_id
LEFT JOIN snapshot_item si ON si.snapshot_id = j.snapshot_id AND si.question_id = r.question_id"""


def _fill_public_ids() -> None:
    bind = op.get_bind()
    rows = bind.execute(sa.text(
        "SELECT si.id, e.source, e.external_id, q.slot FROM snapshot_item si "
        "JOIN question q ON q.id = si.question_id JOIN entity e ON e.id = q.entity_id"
    )).all()
    for item_id, source, external_id, slot in rows:
        bind.execute(sa.text("UPDATE snapshot_item SET qid = :q, public_entity_id = :e WHERE id = :i"), {
            "q": _public_id("question", source, external_id, slot), "e": _public_id("entity", source, external_id),
            "i": item_id,
        })


def _views(*, public: bool) -> None:
    dialect = op.get_bind().dialect.name
    op.execute("DROP VIEW IF EXISTS v_job_results")
    op.execute("DROP VIEW IF EXISTS v_snapshot_questions")
    op.execute(f"CREATE VIEW v_snapshot_questions AS {_snapshot_questions(dialect, public=public)}")
    op.execute(f"CREATE VIEW v_job_results AS {_job_results(public=public)}")


def upgrade() -> None:
    op.execute("DROP VIEW IF EXISTS v_job_results")
    op.execute("DROP VIEW IF EXISTS v_snapshot_questions")
    op.add_column('snapshot_item', sa.Column('qid', sa.BigInteger(), nullable=True))
    op.add_column('snapshot_item', sa.Column('public_entity_id', sa.BigInteger(), nullable=True))
    _fill_public_ids()
    _views(public=True)


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS v_job_results")
    op.execute("DROP VIEW IF EXISTS v_snapshot_questions")
    with op.batch_alter_table('snapshot_item', schema=None) as batch_op:
        batch_op.drop_column('public_entity_id')
        batch_op.drop_column('qid')
    _views(public=False)
