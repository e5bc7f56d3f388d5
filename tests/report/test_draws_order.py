"""The bootstrap's draws follow the entities' public ids, not their store ids.

Two fresh runs of the offline demo froze the same snapshot (the same content hash, the same answers) with the same
point estimates but different intervals (Transfer 65.7 % [50.8, 82.4] in one, [52.0, 82.8] in the other): the draws
were made over the entities in the order of their store ids, which depend on the order the pollers happened to
insert them.
"""

from __future__ import annotations

import numpy as np

from clkt.report.clustered import entity_draws
from clkt.report.pooled import Draws

PUBLIC = {"a": 0x5A1, "b": 0x017, "c": 0x9C3, "d": 0x233, "e": 0x700}  # an entity -> its public id


def _weights_by_entity(store_ids: dict[str, int], *, public: bool) -> dict[str, np.ndarray]:
    """Each entity's column of the draws, in a store that gave the entities `store_ids`."""
    universe = np.asarray(sorted(store_ids.values()), dtype=np.int64)
    draws = Draws(universes={0: universe}, names={0: "demo-2026-11-30-69d73926b6cd"}, seed=0, samples=200,
                  public={store_ids[k]: v for k, v in PUBLIC.items()} if public else None)
    w = draws.weights(0)
    col = {int(e): i for i, e in enumerate(universe)}
    return {k: w[:, col[sid]] for k, sid in store_ids.items()}


def test_the_same_entities_get_the_same_draws_whatever_their_store_ids() -> None:
    one = _weights_by_entity({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}, public=True)
    other = _weights_by_entity({"a": 4, "b": 1, "c": 5, "d": 3, "e": 2}, public=True)
    for k in PUBLIC:
        assert np.array_equal(one[k], other[k]), k
    # every draw is still a resample of the 5 entities
    assert all(float(sum(one[k][i] for k in PUBLIC)) == 5.0 for i in range(200))


def test_without_public_ids_the_draws_follow_the_store_ids() -> None:
    """What made the demo's intervals differ: the same entity gets another column of draws in another store."""
    one = _weights_by_entity({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}, public=False)
    other = _weights_by_entity({"a": 4, "b": 1, "c": 5, "d": 3, "e": 2}, public=False)
    assert any(not np.array_equal(one[k], other[k]) for k in PUBLIC)


def test_an_entity_without_a_public_id_comes_after_those_with_one() -> None:
    ids = {"a": 10, "b": 20, "c": 30}
    public = {10: 0x900, 30: 0x100}  # b (20) has none
    got = entity_draws(list(ids.values()), snapshot_id="s", seed=3, samples=50, public=public)
    ref = entity_draws([1, 2, 3], snapshot_id="s", seed=3, samples=50)  # the canonical order c, a, b as 1, 2, 3
    col = {int(e): i for i, e in enumerate(got.entities)}
    assert np.array_equal(got.weights[:, col[30]], ref.weights[:, 0])
    assert np.array_equal(got.weights[:, col[10]], ref.weights[:, 1])
    assert np.array_equal(got.weights[:, col[20]], ref.weights[:, 2])


def test_kept_interval_in_a_store_equals_the_one_on_public_ids() -> None:
    """A job's kept % in the report (store ids and their public ids) and in a result pack of the same answers
    (public ids only) are drawn alike, so they carry the same interval."""
    from clkt.evaluate.summary import EntityKept, LocalityCounts
    from clkt.report.locality import kept_interval

    per = [(3, 3), (4, 1), (2, 2), (5, 4), (1, 0)]  # (right before, kept) of five entities
    public = {11: 0x900, 12: 0x100, 13: 0x500, 14: 0x300, 15: 0x700}  # store id -> public id

    def counts(ids: list[int]) -> LocalityCounts:
        ents = [EntityKept(entity=i, base_right=b, kept=k) for i, (b, k) in zip(ids, per, strict=True)]
        kept, right = sum(k for _, k in per), sum(b for b, _ in per)
        return LocalityCounts(n=right, kept=kept, lost=right - kept, gained=0, entities=ents)

    in_store = kept_interval(counts([11, 12, 13, 14, 15]), name="x", seed=0, samples=300, public=public)
    in_pack = kept_interval(counts([public[i] for i in (11, 12, 13, 14, 15)]), name="x", seed=0, samples=300)
    bare = kept_interval(counts([11, 12, 13, 14, 15]), name="x", seed=0, samples=300)
    assert in_store == in_pack and in_store != bare
