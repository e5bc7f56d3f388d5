"""The open-answer section of `report.md` (`clkt.report.open_track`): its Learn, Overall and Transfer, contingency,
training seeds, control split, locality, answers in another language, paired view and the jury's figure (apart), each figure with its n and its 95% interval."""

from __future__ import annotations

from collections.abc import Callable

from clkt.report.data import LEARN_HEADER, ci_text, learn_rows, metric_cell, pct1
from clkt.report.locality import KEPT_HEADER, KeptLang, kept_row
from clkt.report.metric_table import MIN_CELL_N, MIN_KEPT_N, OVERALL, PAIR_METRICS, TRANSFER
from clkt.report.metrics import ALL_DOMAINS
from clkt.report.open_control import ControlFigure
from clkt.report.open_jury import JURY_TITLE, OpenJury
from clkt.report.open_track import OPEN_TITLE, OpenTrack
from clkt.report.seed_report import SEED_HEADER, seed_lines

__all__ = ["open_lines"]

_INTRO = (
    "The same facts asked as short-answer questions, answered greedily (`clkt.openqa`), each answer scored by the "
    "normaliser layer (CORRECT only when it meets a gold form of the test language; an answer in another language is "
    "INCORRECT and counted apart). The same metrics as above, computed by the same functions, never pooled with the "
    "multiple-choice rows: Learn (exact McNemar; 95% CIs from the bootstrap over entities), Overall and Transfer "
    "(mean ± std over pairs [95% CI over entities]; a job that did not learn is left out of Transfer)."
)


def _table(header: list[str], rows: list[list[str]], md_row: Callable[[list[str]], str]) -> list[str]:
    return [md_row(header), "|" + "---|" * len(header), *(md_row(r) for r in rows), ""]


def open_lines(track: OpenTrack, md_row: Callable[[list[str]], str]) -> list[str]:
    """The section's Markdown lines; `md_row`: the report's table row (escapes what could break the table)."""
    unscorable = (f"; {track.unscorable} could not be scored (UNSCORABLE: left out of every figure, never right; "
                  "their reasons in the open predictions)") if track.unscorable else ""
    lines = [f"## {OPEN_TITLE}", "", _INTRO, "", f"Scorer(s): {', '.join(track.scorers)}; {track.answers} answers{unscorable}.", ""]
    if track.learn:
        lines += ["### Learn (train language, base vs injected)", "", *_table(LEARN_HEADER, learn_rows(track.learn), md_row)]
    cells = [c for c in track.table2 if c.domain == ALL_DOMAINS]
    if cells:
        lines += ["### Overall and Transfer (all domains pooled)", ""]
        lines += _table(["model", "strategy", "scorer", "pairs", *(m.label for m in PAIR_METRICS)],
                        [[c.model, c.strategy, c.scorer, str(c.pairs), *(metric_cell(c, m) for m in PAIR_METRICS)]
                         for c in cells], md_row)
    if track.seeds:
        lines += ["### Training seeds (the cells above pool them, as the leaderboard row does)", "",
                  *_table(SEED_HEADER, seed_lines(track.seeds), md_row)]
    pairs = [p for p in track.pairs if p.domain == ALL_DOMAINS and not p.missing]
    if pairs:
        lines += ["### Contingency per ordered pair (injected)", ""]
        lines += _table(["model", "strategy", "train", "test", "A", "B", "C", "D", f"{OVERALL.label} %", f"{TRANSFER.label} % (n = A+B)"],
                        [[p.model, p.strategy, p.train_lang, p.test_lang, str(p.table.a), str(p.table.b), str(p.table.c),
                          str(p.table.d), pct1(p.overall), f"{pct1(p.transfer)} (n={p.table.a + p.table.b})"]
                         for p in pairs], md_row)
    lines += _control_lines(track.control_learn, md_row) + _locality_lines(track.locality, md_row)
    if track.other_language:
        lines += ["### Answered in another language (INCORRECT, counted apart)", ""]
        lines += _table(["model", "strategy", "train", "variant", "test language", "n", "other", "share % [CI]"],
                        [[o.model, o.strategy, o.train_lang, o.variant, o.lang, str(o.n), str(o.other),
                          f"{pct1(o.share)}{ci_text(o.ci)}"] for o in track.other_language], md_row)
    if track.agreement:
        lines += ["### The same fact asked both ways (MCQ verdict against open verdict, per job)", ""]
        lines += _table(["job", "model", "strategy", "train", "variant", "n", "agree % [CI]", "both right", "MCQ only",
                         "open only", "neither"],
                        [[str(a.job_id), a.model, a.strategy, a.train_lang, a.variant, str(a.n),
                          f"{pct1(a.rate)}{ci_text(a.ci)}", str(a.both_right), str(a.mcq_only), str(a.open_only),
                          str(a.neither)] for a in track.agreement], md_row)
    if track.jury is not None:
        lines += jury_lines(track.jury, md_row)
    return lines


def _control_lines(cells: list[ControlFigure], md_row: Callable[[list[str]], str], head: str = "###") -> list[str]:
    if not cells:
        return []
    rows = [[*r[:5], *(["too few"] * 3 if c.too_few else r[5:8]), *r[8:], str(c.entities)]
            for c, r in zip(cells, learn_rows(list(cells)), strict=True)]
    return [f"{head} Control split (fictional entities, injected with the real ones: Learn there is the positive control)",
            "", "Base against injected on the same control questions in the train language (exact McNemar); 95% CIs "
            f"from a bootstrap over the control entities; under {MIN_CELL_N} questions, or one entity: *too few*.", "",
            *_table([*LEARN_HEADER, "entities"], rows, md_row)]


def _locality_lines(kept: list[KeptLang], md_row: Callable[[list[str]], str], head: str = "###") -> list[str]:
    if not kept:
        return []
    return [f"{head} Locality (entities the target knew; never trained on)", "",
            "Kept % = among the locality questions the base model answered right, the share the injected model "
            f"still answers right; 95% CIs from a bootstrap over entities; under {MIN_KEPT_N} right before, or one "
            "entity: *too few*. The multiple-choice locality's definition, on the short answers.", "",
            *_table(KEPT_HEADER, [kept_row(k) for k in kept], md_row)]


def jury_lines(jury: OpenJury, md_row: Callable[[list[str]], str]) -> list[str]:
    """The jury's subsection of the open track in `report.md`."""
    header = ["model", "strategy", "train", "variant", "test language", "n", "jury accuracy % [CI]", "undecided",
              "failed votes", "agrees with normaliser % [CI] (n decided)"]
    rows = [[c.model, c.strategy, c.train_lang, c.variant, c.lang, str(c.n), f"{pct1(c.accuracy)}{ci_text(c.ci)}",
             str(c.undecided), str(c.failed_votes), f"{pct1(c.agreement)}{ci_text(c.agreement_ci)} (n={c.decided})"]
            for c in jury.cells]
    intro = (f"Layer `{jury.scorer}`: the majority of the configured LLM judges (SimpleQA's CORRECT / INCORRECT / "
             "NOT_ATTEMPTED; no strict majority is undecided, never guessed), on the same answers as the normaliser "
             "and never merged with its figures. Accuracy is CORRECT / n with its 95% CI over entities; the agreement "
             "is with the normaliser on the answers the jury decided. It is not agreement with humans (`clkt audit`). "
             f"Prompt(s): {', '.join(jury.prompt_versions)}; {jury.graded} test answers graded, {jury.pending} not yet; "
             f"the jury's cost: ${jury.cost_usd:.4f}.")
    return [f"### {JURY_TITLE}", "", intro, "", *_table(header, rows, md_row),
            *_control_lines(jury.control, md_row, "####"), *_locality_lines(jury.locality, md_row, "####")]
