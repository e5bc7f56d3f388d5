"""A leaderboard row's figures computed once and read back while its content is unchanged (issue 45 item 3).

A row's figures are a function of its own content (`clkt.report.metric_table`, "intervals": its bootstrap draws the
entities of its own answers, seeded by the snapshots' ids), so they are kept under a key made of that content alone:
the metric table's definitions and the rules' thresholds, the group, every answer of it (each pack's snapshot id,
train language, language positions, seed and the bytes of its question ids, entity ids and flags), the public ids of
its entities (the order of its draws), the window's snapshots and whether each is valid for the target, the locality
counts of its jobs and their open control tallies, the languages' order, the bootstrap's seed and draws and the row minimum. Another row's arrival,
a filter or a submission beside it leaves the key and so the row as it was; a changed answer, exclusion or snapshot
changes the key. Rows are kept before ranking (ranks belong to the board) in a bounded in-process table
(`ROW_CACHE_SIZE`, least recently used out), shared by the threads that build rows; a long-running process (the
pages, the daemon) reads them back instead of pooling and drawing again.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from clkt.report import learn, metric_table
from clkt.report.leaderboard_data import LeaderRow
from clkt.report.locality import locality_entities
from clkt.report.metric_table import PAIR_METRICS
from clkt.report.pooled import Answers, Draws
from storage.leaderboard import WindowData

__all__ = ["ROW_CACHE_SIZE", "RowCache", "row_key"]

ROW_CACHE_SIZE = 4096  # rows kept (the least recently used goes first)


def row_key(
    group: tuple[str, str, str], answers: Sequence[Answers], data: WindowData, *, languages: Sequence[str],
    draws: Draws | None, min_questions: int,
) -> str:
    """The key of a row's content (see the module docstring)."""
    target, strategy, _ = group
    h = hashlib.sha256()
    ents: list[np.ndarray] = []
    for a in sorted(answers, key=lambda a: (a.snapshot, a.train_lang, a.seed, a.langs, a.qids.tobytes())):
        h.update(json.dumps([data.snapshots[a.snapshot].id, a.train_lang, list(a.langs), a.seed]).encode())
        for arr in (a.qids, a.ents, a.flags):
            h.update(np.ascontiguousarray(arr).tobytes())
        ents.append(a.ents)
    snapshots = [(s.id, s.period, (s.id, target) in data.ready) for s in data.snapshots]
    jobs = [j for j in data.jobs if (j.target, j.strategy) == (target, strategy) and (j.locality or j.control)]
    locality = [(j.snapshot_id, j.train_lang, j.seed, j.locality, j.control) for j in jobs]
    unique = sorted(set(np.unique(np.concatenate(ents)).tolist() if ents else []) | locality_entities(j.locality for j in jobs))
    public = [data.public_entities.get(int(e)) for e in unique]
    draw = (draws.seed, draws.samples) if draws is not None else None
    table: list[object] = [(m.key, m.numerator, m.denominator, m.needs_learned, m.min_n) for m in PAIR_METRICS]
    table += [learn.LEARN_ALPHA, metric_table.MIN_KEPT_N, metric_table.MIN_KEPT_ENTITIES]  # the rules' thresholds
    h.update(json.dumps([table, list(group), public, snapshots, sorted(locality, key=lambda x: json.dumps(x, sort_keys=True)),
                         list(languages), draw, min_questions], sort_keys=True, default=str).encode())
    return h.hexdigest()


class RowCache:
    """Rows by `row_key`, bounded, least recently used out; safe to share between threads."""

    def __init__(self, size: int = ROW_CACHE_SIZE) -> None:
        self._size = size
        self._rows: OrderedDict[str, LeaderRow | None] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_build(self, key: str, build: Callable[[], LeaderRow | None]) -> LeaderRow | None:
        with self._lock:
            if key in self._rows:
                self._rows.move_to_end(key)
                return self._rows[key]
        row = build()
        self.put(key, row)
        return row

    def peek(self, key: str) -> tuple[bool, LeaderRow | None]:
        """(whether `key` is kept, its row), without building."""
        with self._lock:
            return (True, self._rows[key]) if key in self._rows else (False, None)

    def put(self, key: str, row: LeaderRow | None) -> None:
        """Keep `row` under `key` (built here, or read back from the figure cache: `clkt.report.kept_rows`)."""
        with self._lock:
            self._rows[key] = row
            self._rows.move_to_end(key)
            while len(self._rows) > self._size:
                self._rows.popitem(last=False)

    def forget(self, key: str) -> None:
        with self._lock:
            self._rows.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()

    def __len__(self) -> int:
        return len(self._rows)
