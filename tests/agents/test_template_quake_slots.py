"""The quake slots `intensity` (maximum estimated MMI) and `latitude` (the epicentre's), in every language."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.template import TemplateBackend, build_mcqs, plan
from agents.template.distractors import appears_as_token, near_coordinates, seeded_rng, spread_floats
from agents.template.values import CoordValue, FloatValue
from clkt.documents import LANGUAGES, render_document
from clkt.facts import QuakeFacts
from clkt.outputs import MCQ, check_against_document, normalize
from tests.documents.samples import NORTHRIDGE

ENGINE = TemplateBackend()

# the Bolivia deep quake of the replay fixtures: southern and western hemispheres, MMI 3.673
BOLIVIA = NORTHRIDGE.model_copy(update={
    "title": "M 8.2 - 55 km NNW of Reyes, Bolivia", "place": "55 km NNW of Reyes, Bolivia", "magnitude": 8.2,
    "depth_km": 631.3, "latitude": -13.841, "longitude": -67.553, "felt": None, "mmi": 3.673,
})

EXPECTED = {  # lang -> (intensity, latitude) as each document writes them
    "en": ("8.8", "34.213° N"), "ja": ("8.8", "北緯34.213度"), "zh": ("8.8", "北纬34.213度"),
    "fr": ("8,8", "34,213° N"), "es": ("8,8", "34,213° N"),
}
EXPECTED_SOUTH = {
    "en": ("3.7", "13.841° S"), "ja": ("3.7", "南緯13.841度"), "zh": ("3.7", "南纬13.841度"),
    "fr": ("3,7", "13,841° S"), "es": ("3,7", "13,841° S"),
}
_HEMI = {  # lang -> (north, south) as the options write them
    "en": ("N", "S"), "ja": ("北緯", "南緯"), "zh": ("北纬", "南纬"), "fr": ("N", "S"), "es": ("N", "S"),
}
_LAT = {
    "en": re.compile(r"^(\d+)\.(\d{3})° ([NS])$"), "fr": re.compile(r"^(\d+),(\d{3})° ([NS])$"),
    "es": re.compile(r"^(\d+),(\d{3})° ([NS])$"), "ja": re.compile(r"^(北緯|南緯)(\d+)\.(\d{3})度$"),
    "zh": re.compile(r"^(北纬|南纬)(\d+)\.(\d{3})度$"),
}


def _by_slot(facts: QuakeFacts, lang: str) -> dict[str, MCQ]:
    return {m.slot: m for m in build_mcqs(facts, render_document(facts, lang), 99)}


def _lat(option: str, lang: str) -> tuple[float, str]:
    """(degrees, hemisphere word) of a latitude option; fails the test when it has another shape."""
    m = _LAT[lang].match(option)
    assert m is not None, (lang, option)
    if lang in ("ja", "zh"):
        word, whole, frac = m.groups()
    else:
        whole, frac, word = m.groups()
    return float(f"{whole}.{frac}"), word


def _mmi(option: str) -> float:
    assert re.fullmatch(r"\d+[.,]\d", option), option
    return float(option.replace(",", "."))


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize(("facts", "expected"), [(NORTHRIDGE, EXPECTED), (BOLIVIA, EXPECTED_SOUTH)], ids=["north", "south"])
def test_new_slots_in_every_language(facts: QuakeFacts, expected: dict[str, tuple[str, str]], lang: str) -> None:
    doc = render_document(facts, lang)
    qs = _by_slot(facts, lang)
    mmi, lat = expected[lang]
    north, south = _HEMI[lang]
    for slot, answer in (("intensity", mmi), ("latitude", lat)):
        m = qs[slot]
        assert m.answer == answer, (slot, m.options)
        assert normalize(m.answer) in normalize(doc.text) and m.evidence == doc.sentences[slot]
        assert check_against_document(m, doc.text) == []
        assert len({normalize(o) for o in m.options}) == 4
        report = asyncio.run(ENGINE.verify(document=doc, facts=facts, mcq=m))
        assert report.passed, (slot, report.reasons)
        for i, opt in enumerate(m.options):
            if i != m.answer_index:  # a distractor is not in the evidence, nor a number of the document
                assert normalize(opt) not in normalize(m.evidence) and not appears_as_token(opt, doc.text), (slot, opt)
    # the intensity question does not name the MMI, the latitude question names no coordinate
    assert mmi not in qs["intensity"].question
    assert not re.search(r"\d+[.,]\d{3}", qs["latitude"].question)
    # MMI distractors: one decimal, on the scale, near the answer
    x = _mmi(qs["intensity"].answer)
    for opt in qs["intensity"].options:
        assert 1.0 <= _mmi(opt) <= 10.0 and abs(_mmi(opt) - x) <= 2.0 + 1e-6
    # latitude distractors: same hemisphere, 3 decimals, within 3 degrees
    deg, word = _lat(qs["latitude"].answer, lang)
    assert word == (north if facts.latitude >= 0 else south)
    for opt in qs["latitude"].options:
        d, w = _lat(opt, lang)
        assert w == word and (opt == qs["latitude"].answer or 0 < abs(d - deg) <= 3.001), opt


@pytest.mark.parametrize("facts", [NORTHRIDGE, BOLIVIA], ids=["north", "south"])
def test_no_two_distractors_mirror_the_answer(facts: QuakeFacts) -> None:
    """With mirrored pairs (answer ± the same step) the answer is the midpoint of two options."""
    en = _by_slot(facts, "en")
    values = {
        "intensity": [_mmi(o) for o in en["intensity"].options],
        "latitude": [_lat(o, "en")[0] for o in en["latitude"].options],
    }
    for slot, (answer, *others) in values.items():
        for i, a in enumerate(others):
            for b in others[i + 1:]:
                assert abs((a + b) / 2 - answer) > 1e-6, (slot, answer, a, b)


def test_translation_keeps_options_and_digits() -> None:
    en = render_document(NORTHRIDGE, "en")
    qs = _by_slot(NORTHRIDGE, "en")
    for lang in LANGUAGES:
        mmi, lat = EXPECTED[lang]
        for slot, answer in (("intensity", mmi), ("latitude", lat)):
            t = asyncio.run(ENGINE.translate_mcq(mcq=qs[slot], document=en, facts=NORTHRIDGE, target_lang=lang))
            assert t.options[t.answer_index] == answer
            assert t.options == _by_slot(NORTHRIDGE, lang)[slot].options  # the engine's own options, same order


def test_without_mmi_there_is_no_intensity_question() -> None:
    for mmi in (None, 0.0, 0.04):  # unknown, or below the scale as rendered ("0.0")
        facts = NORTHRIDGE.model_copy(update={"mmi": mmi})
        assert plan(facts, "intensity") is None
        for lang in LANGUAGES:
            doc = render_document(facts, lang)
            slots = [m.slot for m in build_mcqs(facts, doc, 99)]
            assert "intensity" not in slots and "latitude" in slots, (mmi, lang)
            assert ("intensity" in doc.sentences) == (mmi is not None)


def test_intensity_like_the_magnitude_drops_the_magnitude_from_the_question() -> None:
    facts = NORTHRIDGE.model_copy(update={"mmi": 6.712})  # reads "6.7", like the magnitude
    for lang in LANGUAGES:
        doc = render_document(facts, lang)
        m = _by_slot(facts, lang)["intensity"]
        assert m.answer == ("6,7" if lang in ("fr", "es") else "6.7")
        assert m.answer not in m.question and check_against_document(m, doc.text) == []
        assert "Reseda" in m.question  # still names the quake
        assert asyncio.run(ENGINE.verify(document=doc, facts=facts, mcq=m)).passed


def test_latitude_at_the_equator_and_the_poles_keeps_its_hemisphere() -> None:
    for lat in (0.0, -0.0004, 0.0004, 89.999, -90.0, 90.0):
        facts = NORTHRIDGE.model_copy(update={"latitude": lat})
        p = plan(facts, "latitude")
        assert p is not None, lat
        for v in p.values:
            assert isinstance(v, CoordValue) and (v.x >= 0) == (lat >= 0) and abs(v.x) <= 90.0, (lat, v)
        for lang in LANGUAGES:
            doc = render_document(facts, lang)
            assert normalize(_by_slot(facts, lang)["latitude"].answer) in normalize(doc.text)


def test_a_latitude_distractor_never_copies_the_longitude() -> None:
    cands = near_coordinates(34.213, seeded_rng("k", "latitude"), avoid=(-34.9,))
    assert cands and all(round(abs(c.x), 3) != 34.9 for c in cands)
    assert len(near_coordinates(34.213, seeded_rng("k", "latitude"))) >= len(cands)


COMMON = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@COMMON
@given(x=st.floats(-90, 90), lon=st.floats(-180, 180), key=st.text(max_size=8))
def test_near_coordinates_property(x: float, lon: float, key: str) -> None:
    cands = near_coordinates(x, seeded_rng(key, "latitude"), avoid=(lon,))
    assert len({c.x for c in cands} - {round(x, 3)}) >= 3  # enough for a question anywhere on the globe
    for c in cands:
        assert (c.x >= 0) == (x >= 0) and abs(c.x) <= 90.0 and c.x == round(c.x, 3)
        assert abs(c.x - x) <= 3.0 + 1e-3
        assert round(abs(c.x), 3) != round(abs(lon), 3)


@COMMON
@given(x=st.floats(1.0, 10.0).map(lambda v: round(v, 1)), key=st.text(max_size=8))
def test_spread_floats_property(x: float, key: str) -> None:
    cands: list[Any] = spread_floats(x, seeded_rng(key, "intensity"), steps=(0.4, 0.6, 0.8, 1.0, 1.3, 1.6, 2.0),
                                     unit="mmi", minimum=1.0, maximum=10.0)
    assert len(cands) >= 3 and len({c.x for c in cands}) == len(cands)
    assert all(isinstance(c, FloatValue) and c.unit == "mmi" and 1.0 <= c.x <= 10.0 and c.x != x for c in cands)
    if 3.0 <= x <= 8.0:  # every step fits both ways: the first picks go one way each, none mirrors another
        first = [c.x for c in cands[:7]]
        assert not any(abs((a + b) / 2 - x) < 1e-6 for i, a in enumerate(first) for b in first[i + 1:])
