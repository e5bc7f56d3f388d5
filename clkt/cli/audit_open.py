"""`clkt audit sample --open` and `clkt audit score` on open-answer forms (issue 47): the open track's human audit.

The sample is drawn from the snapshot's finished jobs' stored answers (`clkt.snapshots.audit_open`), the forms
scored against every scorer's stored verdicts (`clkt.snapshots.audit_open_score`). Nothing is stored: the score
is printed (`--json`: one JSON object), and a refused form leaves nothing behind.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table

from clkt.cli.common import console, load_cli_settings, plain, print_table, read_store, run_async
from clkt.snapshots.audit_open_score import OpenAuditScore, ScorerAgreement

__all__ = ["sample_open", "score_open_forms"]


def sample_open(
    ident: str, out: Path, *, per_language: int, languages: Sequence[str] | None, seed: int | None, config: Path | None,
) -> None:
    from clkt.snapshots.audit_open import sample_answers, write_open_form
    from clkt.snapshots.stored import load_snapshot
    from storage.open_results import open_results_for_snapshot

    settings = load_cli_settings(config)

    async def draw() -> tuple[tuple[Path, Path], dict[str, int]]:
        async with read_store(settings) as store, store.session() as s:
            snap = await load_snapshot(s, ident)
            stored = await open_results_for_snapshot(s, snap.row.id)
        rows = sample_answers(snap.content, stored, per_language=per_language, languages=languages,
                              seed=snap.row.seed if seed is None else seed)
        paths = write_open_form(rows, out)
        counts: dict[str, int] = {}
        for a in rows:
            counts[a.language] = counts.get(a.language, 0) + 1
        return paths, counts

    (c, h), counts = run_async(draw)
    per = ", ".join(f"{lang} {n}" for lang, n in counts.items())
    console.print(plain(f"{sum(counts.values())} open answers ({per}), no verdict shown: label each CORRECT, "
                        f"INCORRECT or NOT_ATTEMPTED → {c} and {h}"))


def _kappa_text(a: ScorerAgreement) -> str:
    if a.reading == "too few":
        return f"too few (n = {a.n})"
    if a.kappa is None:
        return "undefined (one grade throughout)"
    ci = f" [{a.ci[0]:.2f}, {a.ci[1]:.2f}]" if a.ci is not None else " (no interval)"
    return f"{a.kappa:.2f}{ci}"


def _annotators_text(score: OpenAuditScore) -> str:
    a = score.annotator_agreement
    if a is None:
        return ""
    if a.kappa is None:
        return f"; the annotators' agreement is undefined over {a.pairs} answers"
    return f"; the annotators' {a.method} {a.kappa:.2f} over {a.pairs} answers all labelled, {a.observed:.0%} unanimous"


def _table(score: OpenAuditScore) -> Table:
    t = Table("scorer", "language", "n", "agree", "entities", "Cohen's κ [95% CI]",
              title=f"{score.snapshot_id}: open answers, each scorer against the human labels ({score.ci_method})")
    for a in score.agreement:
        t.add_row(plain(a.scorer), a.language, str(a.n), f"{a.agree} ({a.agree / a.n:.0%})" if a.n else "0",
                  str(a.entities), _kappa_text(a))
    return t


def score_open_forms(files: Sequence[Path], *, as_json: bool, config: Path | None) -> None:
    from clkt.errors import UserError
    from clkt.snapshots.audit_open_score import read_open_forms, score_open
    from storage.open_judgements import jury_rows_for_snapshot
    from storage.open_results import open_results_for_snapshot
    from storage.snapshots import find_snapshot

    settings = load_cli_settings(config)

    async def read() -> OpenAuditScore:
        labels = read_open_forms(files)
        async with read_store(settings) as store, store.session() as s:
            snap = await find_snapshot(s, labels.snapshot_id)
            if snap is None:
                raise UserError(f"the form is of snapshot {labels.snapshot_id}, which this store does not have")
            stored = await open_results_for_snapshot(s, snap.id)
            judged = await jury_rows_for_snapshot(s, snap.id, votes=True)
        return score_open(labels, stored, seed=snap.seed, judged=judged)

    score = run_async(read)
    if as_json:
        sys.stdout.write(score.model_dump_json(indent=1) + "\n")
        return
    who = "one annotator" if score.annotators == 1 else f"the majority of {score.annotators} annotators"
    console.print(plain(f"{score.labelled} answers labelled by {who}"
                        + (f"; {score.no_majority} without a majority left out" if score.no_majority else "")
                        + _annotators_text(score)))
    print_table(_table(score))
    if score.without_verdicts:
        console.print(plain(f"no verdicts stored per answer for {' and '.join(score.without_verdicts)}: "
                            "no jury graded these answers ([agents.jury] judges), so their agreement cannot be measured on this form"))
