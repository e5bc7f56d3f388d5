"""A row's figures computed once per content (`clkt.report.row_cache`): another row, a filter or a submission beside
it leaves its key (and so its figures) as they were; a changed answer or threshold changes the key; the table is
bounded."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np
import pytest

from clkt.report import learn
from clkt.report.leaderboard import ROWS, build_rows, group_answers, window_draws
from clkt.report.row_cache import RowCache, row_key
from storage.leaderboard import WindowData
from tests.report.test_one_rule import _data


def _key(data: WindowData, group: tuple[str, str, str] = ("t", "cpt-lora", "generate")) -> str:
    return row_key(group, group_answers(data)[group], data, languages=["en", "fr"],
                   draws=window_draws(data, seed=0, samples=100), min_questions=0)


def test_the_key_is_the_rows_content_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _data()
    key = _key(data)
    assert _key(data) == key  # the same content, the same key
    # another target's jobs and packs beside it (a submission, an unfiltered board): the same key
    from storage.leaderboard import WindowJob
    from storage.result_packs import build_packs
    from tests.report.test_one_rule import _answers

    other = WindowJob(id=99, snapshot_id=data.snapshots[0].id, target="u", strategy="cpt-lora", train_lang="en")
    wider = replace(data, jobs=(*data.jobs, other), packs=(*data.packs, *build_packs(99, _answers(0))),
                    ready=data.ready | {(data.snapshots[0].id, "u")})
    assert _key(wider) == key
    # one answer flipped: another key
    first = data.packs[0]
    flags = np.frombuffer(first.flags, dtype="<u8").copy()
    flags[0] ^= np.uint64(0b10)
    changed = replace(data, packs=(replace(first, flags=flags.tobytes()), *data.packs[1:]))
    assert _key(changed) != key
    # a rule's threshold: another key
    monkeypatch.setattr(learn, "LEARN_ALPHA", 0.01)
    assert _key(data) != key


def test_rows_are_built_once_per_content_and_the_table_is_bounded() -> None:
    data = _data()
    ROWS.clear()
    first = build_rows(data, ["en", "fr"], samples=100, min_questions=0)
    assert len(ROWS) == 1
    again = build_rows(data, ["en", "fr"], samples=100, min_questions=0)
    assert again == first and len(ROWS) == 1  # read back, not computed again
    assert build_rows(data, ["en", "fr"], samples=50, min_questions=0) != first and len(ROWS) == 2

    cache, built = RowCache(size=2), list[str]()

    def build(k: str) -> None:
        built.append(k)

    for k in ("a", "b", "a", "c", "b"):
        cache.get_or_build(k, partial(build, k))
    assert built == ["a", "b", "c", "b"] and len(cache) == 2  # "b" was the least recently used when "c" came
