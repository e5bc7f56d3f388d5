"""docs/reference/metrics.md: every figure of the report, from the metric table (`clkt.report.metric_table`)."""

from __future__ import annotations

from clkt.reference._text import code, escape, generated_header, prose, table

__all__ = ["render_metrics"]


def _first_line(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def _pair_metrics() -> str:
    from clkt.report import metric_table as mt

    rows = []
    for m in mt.PAIR_METRICS:
        when = []
        if m.needs_learned:
            when.append("its train language learned")
        if m.min_n:
            when.append(f"a denominator of at least {m.min_n} questions (else too few)")
        shown = [x for x, chosen in (("ranks the leaderboard", mt.RANK_BY), ("the heatmaps", mt.HEATMAP)) if chosen is m]
        rows.append([
            escape(m.label), code(m.key), code(m.definition), escape("; ".join(when) or "always (None when the denominator is 0)"),
            escape(", ".join(shown) or "every view"), code(f"{m.key}_mean, {m.key}_ci"),
        ])
    heads = ["figure", "key", "definition", "interpretable when", "shown", "JSON fields"]
    return "## Pair metrics\n\n" + table(heads, rows) + "\n"


def _rules() -> str:
    from clkt.report import metric_table as mt
    from clkt.report.basics import BOOTSTRAP_SAMPLES
    from clkt.report.learn import LEARN_ALPHA
    from clkt.report.pooled import percentile_ci

    rows = [
        ("learned", f"{_first_line(mt.learned.__doc__)} (`LEARN_ALPHA` = {LEARN_ALPHA})"),
        ("Learn", "train-language accuracy after injection against the base model on the same questions: "
                  "`learn_accuracy` (correct / n), `learn_gain` (injected - base) / n"),
        ("interval", f"{BOOTSTRAP_SAMPLES} bootstrap draws over the row's own entities; "
                     f"`percentile_ci`: {_first_line(percentile_ci.__doc__)}"),
        ("too few (Transfer)", f"a pair with fewer than `MIN_CELL_N` = {mt.MIN_CELL_N} questions in A+B"),
        ("too few (kept %)", f"{_first_line(mt.kept_too_few.__doc__)} (`MIN_KEPT_N` = {mt.MIN_KEPT_N}, "
                             f"`MIN_KEPT_ENTITIES` = {mt.MIN_KEPT_ENTITIES})"),
    ]
    return "## Rules and intervals\n\n" + table(["rule", "what the code does"], [[escape(a), escape(b)] for a, b in rows]) + "\n"


def render_metrics() -> str:
    from clkt.report import metric_table as mt

    intro = ("The contingency of an ordered language pair (L_train, L_test) over the injected model's test answers: "
             "A right in both, B right in L_train only, C right in L_test only, D wrong in both.")
    return generated_header("Metrics", intro) + _pair_metrics() + _rules() + "## The metric table\n\n" + prose(mt.__doc__)
