"""The open track's jury figure (issue 47 item 3), apart from the normaliser's and never merged with it.

Where a jury of LLM judges is configured, the daemon's `open-jury` stage grades every stored open answer
(`storage.open_judgements`); this is its figure, per job group, variant and test language of the test split: n (the
answers the jury graded), the jury's accuracy (CORRECT / n, SimpleQA's rule: an undecided answer is not right) with
its 95% interval from the bootstrap over entities (`accuracy_interval`, the draws of the open track), the undecided
answers (no strict majority: never guessed), the answers with a failed vote, and the jury's agreement with the
normaliser on the same answers (`clkt.openqa.layers.agreement_of`: the answers the jury decided, with its interval
over entities). Its cost is the sum of the stored costs of the jury's rows. The answers the jury has not graded
yet are counted (`pending`), never filled in. Beside it, the jury's kept % on the locality split and its Learn on the
control split, by the normaliser's figures' own functions on the jury's verdicts (`locality`, `control`). `report.md` shows it under its own heading
(`clkt.report.open_lines`), `metrics.json` as `open_track.jury`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from clkt.openqa.layers import agreement_of
from clkt.report.clustered import EntityDraws, accuracy_interval
from clkt.report.locality import KeptLang
from clkt.report.open_control import ControlFigure, control_learn
from clkt.report.open_locality import open_kept
from clkt.report.open_right import jury_right
from storage.open_judgements import JuryRow
from storage.open_results import OpenResultRow

__all__ = ["JURY_SCORER", "JURY_TITLE", "JuryCell", "OpenJury", "open_jury"]

JURY_SCORER = "open-jury"  # the jury layer's name wherever its figure is shown
JURY_TITLE = "The jury of LLM judges (open-jury layer, apart from the normaliser)"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class JuryCell(_Frozen):
    model: str
    strategy: str
    train_lang: str
    variant: str
    lang: str
    n: int  # answers the jury graded
    correct: int
    undecided: int
    failed_votes: int  # answers with a vote that failed (their verdict is the other judges')
    accuracy: float
    ci: tuple[float, float] | None = None  # over entities
    agree: int  # of `decided`, graded as the normaliser grades them
    decided: int
    agreement_ci: tuple[float, float] | None = None  # over entities

    @property
    def agreement(self) -> float | None:
        return self.agree / self.decided if self.decided else None


class OpenJury(_Frozen):
    scorer: str = JURY_SCORER
    prompt_versions: list[str]
    graded: int  # test-split answers the jury graded
    pending: int  # test-split answers it has not graded yet
    cost_usd: float  # what the jury's calls on this snapshot's answers cost (every answer, every split)
    cells: list[JuryCell]
    # the jury's kept % of the locality split's answers it graded, per job x test language, and its Learn on the control
    # split (`clkt.report.open_locality`, `clkt.report.open_control`: the normaliser's figures' functions, on the
    # jury's verdicts: undecided never right nor kept, ungraded in no pair); empty where it graded none of them
    locality: list[KeptLang] = Field(default_factory=list)
    control: list[ControlFigure] = Field(default_factory=list)


def _cell(key: tuple[str, str, str, str, str], pairs: list[tuple[OpenResultRow, JuryRow]], draws: EntityDraws) -> JuryCell:
    model, strategy, train, variant, lang = key
    right = [(j.verdict == "CORRECT", r.entity_id) for r, j in pairs]
    alike, decided = agreement_of((r.verdict, j.verdict) for r, j in pairs)
    same = [(r.verdict == j.verdict, r.entity_id) for r, j in pairs if j.verdict]
    return JuryCell(
        model=model, strategy=strategy, train_lang=train, variant=variant, lang=lang, n=len(pairs),
        correct=sum(c for c, _ in right), undecided=sum(j.verdict is None for _, j in pairs),
        failed_votes=sum(j.failed for _, j in pairs), accuracy=sum(c for c, _ in right) / len(pairs),
        ci=accuracy_interval(right, draws), agree=alike, decided=decided,
        agreement_ci=accuracy_interval(same, draws) if same else None,
    )


def open_jury(
    rows: Sequence[OpenResultRow], jury: Sequence[JuryRow], draws: EntityDraws, *, splits: Sequence[OpenResultRow] = (),
    snapshot_id: str = "", seed: int = 0, samples: int = 0,
) -> OpenJury | None:
    """The jury's figure on the test-split answers `rows` (the tables' jobs), from its stored verdicts `jury` (None:
    the jury graded none of the snapshot's answers); `splits`: the answers whose locality and control splits it
    reads too (every job's, as the normaliser's figures do), with the snapshot's draws (`seed`, `samples`)."""
    if not jury:
        return None
    right = jury_right(jury)
    locality = open_kept(splits, snapshot_id=snapshot_id, seed=seed, samples=samples, right=right, scorer=JURY_SCORER)
    control = control_learn(splits, snapshot_id=snapshot_id, seed=seed, samples=samples, right=right, scorer=JURY_SCORER)
    by_key = {(j.job_id, j.open_qid, j.lang, j.variant, j.scorer): j for j in jury}
    groups: dict[tuple[str, str, str, str, str], list[tuple[OpenResultRow, JuryRow]]] = defaultdict(list)
    pending = 0
    for r in rows:
        if r.split != "test":
            continue
        j = by_key.get((r.job_id, r.open_qid, r.lang, r.variant, r.scorer))
        if j is None or not j.decided:  # not graded yet, or a failed vote left no verdict (tried again): no figure
            pending += 1
        else:
            groups[(r.target_model, r.strategy, r.train_lang, r.variant, r.lang)].append((r, j))
    cells = [_cell(k, ps, draws) for k, ps in sorted(groups.items())]
    return OpenJury(prompt_versions=sorted({j.prompt_version for j in jury}), graded=sum(c.n for c in cells),
                    pending=pending, cost_usd=sum(j.cost_usd for j in jury), cells=cells,
                    locality=locality, control=control)
