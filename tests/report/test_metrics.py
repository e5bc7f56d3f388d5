from __future__ import annotations

import dataclasses

import pytest

from clkt.report.metrics import (
    ALL_DOMAINS,
    AVG_DOMAINS,
    BASE_FLAG_P,
    Outcome,
    base_accuracy,
    contingency,
    mcnemar_tests,
    pair_metrics,
    summarize,
)


def _o(train: str, lang: str, qid: int, correct: bool, *, domain: str = "movies", variant: str = "injected") -> Outcome:
    return Outcome(model="m", strategy="cpt-lora", scorer="generate", variant=variant, train_lang=train, lang=lang,
                   qid=qid, domain=domain, correct=correct)


def _job(train: str, answers: dict[str, list[bool]], domain: str = "movies") -> list[Outcome]:
    return [_o(train, lang, q, c, domain=domain) for lang, cs in answers.items() for q, c in enumerate(cs, start=1)]


def test_contingency_by_hand() -> None:
    t = contingency({1: True, 2: True, 3: False, 4: False, 5: True}, {1: True, 2: False, 3: True, 4: False, 6: True})
    assert (t.a, t.b, t.c, t.d) == (1, 1, 1, 1)  # qid 5 and 6 are not in both languages
    assert t.overall == 0.25 and t.transfer == 0.5


def test_pairs_by_hand_including_b_zero_and_a_zero() -> None:
    # trained in en: en answers (train language) and ja/fr answers of the same 4 questions
    out = _job("en", {"en": [True, True, False, False], "ja": [True, False, True, False], "fr": [False, False, True, True]})
    # trained in ja: nothing right in ja -> A = B = 0 -> Transfer undefined for ja->en and ja->fr
    out += _job("ja", {"ja": [False, False, False, False], "en": [True, False, False, False], "fr": [False] * 4})
    pairs = {(p.train_lang, p.test_lang): p for p in pair_metrics(out, ["en", "ja", "fr"]) if p.domain == ALL_DOMAINS}
    en_ja = pairs[("en", "ja")]
    assert (en_ja.table.a, en_ja.table.b, en_ja.table.c, en_ja.table.d) == (1, 1, 1, 1)
    assert en_ja.overall == 0.25 and en_ja.transfer == 0.5
    en_fr = pairs[("en", "fr")]
    assert (en_fr.table.a, en_fr.table.b, en_fr.table.c, en_fr.table.d) == (0, 2, 2, 0)
    assert en_fr.transfer == 0.0  # A = 0 with B > 0 is a real zero
    ja_en = pairs[("ja", "en")]
    assert (ja_en.table.a, ja_en.table.b, ja_en.table.c, ja_en.table.d) == (0, 0, 1, 3)
    assert ja_en.transfer is None and ja_en.overall == 0.0  # undefined, never 0
    assert ("fr", "en") not in pairs  # no job trained in fr


def test_b_zero_with_a_positive_gives_full_transfer() -> None:
    out = _job("en", {"en": [True, False, True], "fr": [True, True, True]})
    (p,) = [p for p in pair_metrics(out, ["en", "fr"]) if p.domain == ALL_DOMAINS]
    assert (p.table.a, p.table.b, p.table.c, p.table.d) == (2, 0, 1, 0)
    assert p.transfer == 1.0 and p.overall == pytest.approx(2 / 3)


def test_missing_language_is_reported_missing_not_zero() -> None:
    out = _job("en", {"en": [True, True], "ja": [True, False]})
    pairs = {(p.train_lang, p.test_lang): p for p in pair_metrics(out, ["en", "ja", "zh"]) if p.domain == ALL_DOMAINS}
    assert pairs[("en", "zh")].missing and pairs[("en", "zh")].overall is None and pairs[("en", "zh")].transfer is None
    cells = {c.domain: c for c in summarize(out, ["en", "ja", "zh"], bootstrap=False)}
    assert cells[ALL_DOMAINS].missing == 1 and cells[ALL_DOMAINS].pairs == 1
    assert cells[ALL_DOMAINS].overall_mean == 0.5  # the missing pair is not averaged in as 0


def test_summary_mean_std_over_pairs_and_domain_average() -> None:
    out = _job("en", {"en": [True, True, False, False], "ja": [True, False, True, False], "fr": [True, True, False, False]})
    out += _job("en", {"en": [True, True], "ja": [False, False], "fr": [True, True]}, domain="music")
    # music questions reuse qids 1..2: give them distinct ids
    out = [o if o.domain == "movies" else dataclasses.replace(o, qid=o.qid + 100) for o in out]
    cells = {c.domain: c for c in summarize(out, ["en", "ja", "fr"], seed=1)}
    movies = cells["movies"]
    # en->ja: T = 1/2, O = 1/4; en->fr: T = 1, O = 2/4
    assert movies.transfer_mean == pytest.approx(0.75) and movies.transfer_std == pytest.approx(0.25)
    assert movies.overall_mean == pytest.approx(0.375) and movies.overall_std == pytest.approx(0.125)
    music = cells["music"]  # en->ja: T = 0, en->fr: T = 1
    assert music.transfer_mean == pytest.approx(0.5)
    avg = cells[AVG_DOMAINS]  # per pair mean over domains: ja (0.5+0)/2, fr (1+1)/2 -> mean 0.625
    assert avg.transfer_mean == pytest.approx(0.625) and avg.transfer_std == pytest.approx(0.375)
    assert movies.transfer_ci is not None and movies.transfer_mean is not None
    lo, hi = movies.transfer_ci
    assert 0.0 <= lo <= movies.transfer_mean <= hi <= 1.0
    again = {c.domain: c for c in summarize(out, ["en", "ja", "fr"], seed=1)}
    assert again["movies"].transfer_ci == movies.transfer_ci  # seeded


def test_mcnemar_direction() -> None:
    n = 12
    out = _job("en", {"en": [True] * n, "fr": [True] * 10 + [False] * 2})
    out += _job("fr", {"fr": [True] * n, "en": [True] * 1 + [False] * 11})
    (t,) = mcnemar_tests(out, ["en", "fr"])
    assert (t.forward, t.backward) == (9, 0) and t.stronger == "en->fr"
    assert t.p_value is not None and t.p_value < 0.01


def test_base_accuracy_flags_far_above_chance() -> None:
    out = [_o("en", "en", q, q <= 18, variant="base") for q in range(1, 21)]  # 90%
    out += [_o("en", "ja", q, q <= 5, variant="base") for q in range(1, 21)]  # 25%
    out += [_o("ja", "ja", q, True, variant="base") for q in range(1, 21)]  # a second job: same questions, ignored
    acc = {b.lang: b for b in base_accuracy(out)}
    assert acc["en"].flagged and acc["en"].accuracy == 0.9
    assert not acc["ja"].flagged and acc["ja"].accuracy == 0.25 and acc["ja"].n == 20


def test_base_accuracy_flags_what_is_above_chance() -> None:
    """Flagged means above chance (25%) by an exact one-sided binomial test at p < 0.01, whatever the accuracy:
    the demo's 38% in zh (on its 90 questions) is flagged; 38% on 20 questions is not evidence enough."""
    out = [_o("en", "zh", q, q <= 34, variant="base") for q in range(1, 91)]  # 34/90 = 38%
    out += [_o("en", "fr", q, q <= 8, variant="base") for q in range(1, 21)]  # 8/20 = 40%
    acc = {b.lang: b for b in base_accuracy(out)}
    assert acc["zh"].flagged and acc["zh"].p_above_chance is not None and acc["zh"].p_above_chance < BASE_FLAG_P
    assert not acc["fr"].flagged and acc["fr"].p_above_chance is not None and acc["fr"].p_above_chance > BASE_FLAG_P
