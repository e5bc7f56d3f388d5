"""The canonical document renderer: key facts in every language, determinism, verbatim slot sentences."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from clkt.documents import LANGUAGES, render_all, render_document
from clkt.errors import UserError
from clkt.facts import SLOTS, EntityFacts
from tests.documents.samples import ALL, BURKINA_FLOODS, FIGHT_CLUB, LIVERPOOL_SWANSEA, NORTHRIDGE, PLUS
from tests.documents.strategies import any_facts

KEY_FACTS = {
    "en": {
        "match": ["Liverpool", "Swansea", "Anfield", "English Premier League", "29 December 2014", "4–1", "44,621",
                  "2–0"],
        "film": ["David Fincher", "Edward Norton", "Brad Pitt", "139 minutes", "15 October 1999", "US$63,000,000",
                 "US$100,853,753", "drama", "Overview: A ticking-time-bomb"],
        "release": ["Ed Sheeran", "Asylum Records", "9 September 2011", ": 12.", "The A Team", "Give Me Love",
                    "album"],
        "quake": ["17 January 1994, 12:30 UTC", "1km NNW of Reseda, CA", "6.7", "18.2 km", "10,128",
                  "No tsunami flag", "34.213° N, 118.537° W"],
        "disaster": ["7 August 2015", "flood", "Burkina Faso", "24,354", "FL-2015-000106-BFA", "past"],
    },
    "ja": {
        "match": ["2014年12月29日", "4–1", "44,621人", "Anfield"],
        "film": ["1999年10月15日", "139分", "David Fincher", "ドラマ", "63,000,000米ドル"],
        "release": ["2011年9月9日", "全12曲", "Asylum Records", "アルバム"],
        "quake": ["1994年1月17日 12:30 UTC", "6.7", "18.2 km", "10,128件", "北緯34.213度"],
        "disaster": ["2015年8月7日", "洪水", "24,354人"],
    },
    "zh": {
        "match": ["2014年12月29日", "4–1", "44,621人"],
        "film": ["1999年10月15日", "139分钟", "剧情", "63,000,000美元"],
        "release": ["共收录12首曲目"],
        "quake": ["震级为6.7", "18.2 km", "西经118.537度"],
        "disaster": ["洪水", "24,354人"],
    },
    "fr": {
        "match": ["29 décembre 2014", "4–1", "44\u202f621 spectateurs"],
        "film": ["15 octobre 1999", "139 minutes", "drame", "63\u202f000\u202f000 dollars US"],
        "release": ["9 septembre 2011", "Nombre de titres du disque : 12."],
        "quake": ["17 janvier 1994 à 12:30 UTC", "6,7", "18,2 km", "10\u202f128", "118,537° O"],
        "disaster": ["7 août 2015", "inondation", "24\u202f354"],
    },
    "es": {
        "match": ["29 de diciembre de 2014", "4–1", "44.621 espectadores"],
        "film": ["15 de octubre de 1999", "139 minutos", "63.000.000 USD"],
        "release": ["9 de septiembre de 2011", "Número de pistas del disco: 12."],
        "quake": ["17 de enero de 1994 a las 12:30 UTC", "6,7", "18,2 km", "10.128"],
        "disaster": ["7 de agosto de 2015", "inundación", "24.354"],
    },
}


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("kind", list(ALL))
def test_fixture_documents_state_their_key_facts(kind: str, lang: str) -> None:
    doc = render_document(ALL[kind], lang)
    assert doc.lang == lang
    for fact in KEY_FACTS[lang][kind]:
        assert fact in doc.text, (kind, lang, fact)
    for slot, sentence in doc.sentences.items():
        assert slot in SLOTS[kind]
        assert sentence in doc.text


def test_fixture_slots_are_complete() -> None:
    assert set(render_document(LIVERPOOL_SWANSEA, "ja").sentences) == set(SLOTS["match"])
    assert set(render_document(FIGHT_CLUB, "fr").sentences) == set(SLOTS["film"])
    assert set(render_document(PLUS, "es").sentences) == set(SLOTS["release"])
    # Northridge has no PAGER alert and no fatality count: those slots are absent, never invented
    assert set(render_document(NORTHRIDGE, "zh").sentences) == set(SLOTS["quake"]) - {"alert", "fatalities"}
    assert "deaths" not in render_document(BURKINA_FLOODS, "en").sentences


def test_quake_intensity_and_coordinates_sentences() -> None:
    for lang, lat, mmi in (
        ("en", "Coordinates: 34.213° N, 118.537° W.", "The maximum estimated intensity (MMI) was 8.8."),
        ("ja", "座標：北緯34.213度、西経118.537度。", "推定最大震度（MMI）は8.8であった。"),
        ("zh", "坐标：北纬34.213度，西经118.537度。", "估计最大烈度（MMI）为8.8。"),
        ("fr", "Coordonnées : 34,213° N, 118,537° O.", "L'intensité maximale estimée (MMI) était de 8,8."),
        ("es", "Coordenadas: 34,213° N, 118,537° O.", "La intensidad máxima estimada (MMI) fue de 8,8."),
    ):
        doc = render_document(NORTHRIDGE, lang)
        assert doc.sentences["latitude"] == lat and doc.sentences["intensity"] == mmi, lang
    # no intensity known: no sentence, no slot (the coordinates are always known)
    doc = render_document(NORTHRIDGE.model_copy(update={"mmi": None}), "en")
    assert "intensity" not in doc.sentences and "MMI" not in doc.text and "latitude" in doc.sentences


def test_proper_names_untranslated_and_free_text_english_only() -> None:
    docs = render_all(FIGHT_CLUB)
    for lang, doc in docs.items():
        for name in ("Fight Club", "David Fincher", "Helena Bonham Carter", "Fox 2000 Pictures"):
            assert name in doc.text, (lang, name)
        assert ("ticking-time-bomb" in doc.text) == (lang == "en")
    assert "Mischief. Mayhem. Soap." not in docs["ja"].text


def test_unsupported_language_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="unsupported document language 'de'"):
        render_document(LIVERPOOL_SWANSEA, "de")


def test_draw_and_unknown_values() -> None:
    draw = LIVERPOOL_SWANSEA.model_copy(update={"home_score": 2, "away_score": 2, "venue": None, "spectators": None})
    doc = render_document(draw, "en")
    assert doc.sentences["winner"] == "The match ended in a draw."
    assert "venue" not in doc.sentences and "spectators" not in doc.sentences


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(facts=any_facts)
def test_render_is_deterministic_and_sentences_are_verbatim(facts: EntityFacts) -> None:
    for lang in LANGUAGES:
        a, b = render_document(facts, lang), render_document(facts.model_copy(deep=True), lang)
        assert a.text.encode() == b.text.encode()
        assert a.sentences == b.sentences
        assert set(a.sentences) <= set(SLOTS[facts.kind])
        for sentence in a.sentences.values():
            assert sentence and sentence in a.text
