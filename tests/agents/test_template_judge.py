"""The deterministic fact matcher: known / unknown in every language, and tricky negatives."""

from __future__ import annotations

import asyncio

import pytest

from agents.template import TemplateBackend
from clkt.documents import render_document
from clkt.outputs import KnownVerdict
from tests.documents.samples import ALL, ENTITY_NAMES

ENGINE = TemplateBackend()

KNOWN = [
    # (kind, lang, response, expected matched-fact prefix)
    ("match", "en", "Liverpool beat Swansea 4-1 at Anfield in the Premier League.", "final_score"),
    ("match", "en", "Swansea lost 1 to 4 away at Liverpool.", "final_score"),
    ("match", "ja", "リバプールがスウォンジーに４対１で勝利した試合。", "final_score"),
    ("match", "ja", "観客数は４４，６２１人だった。", "spectators"),
    ("match", "zh", "利物浦在2014年12月29日以4比1战胜斯旺西。", "final_score"),
    ("match", "fr", "Liverpool s'est imposé 4 à 1 devant 44\u202f621 spectateurs.", "final_score"),
    ("match", "es", "El partido se jugó el 29 de diciembre de 2014.", "date"),
    ("film", "en", "Fight Club is a film directed by David Fincher.", "director"),
    ("film", "en", "Starring Brad Pitt and Edward Norton, it runs 2 hours and 19 minutes.", "cast"),
    ("film", "ja", "『ファイト・クラブ』の上映時間は139分である。", "runtime"),
    ("film", "zh", "《搏击俱乐部》片长139分钟，于1999年10月15日上映。", "release_date"),
    ("film", "fr", "Réalisé par David Fincher, le film a coûté 63 millions de dollars.", "director"),
    ("film", "es", "La película recaudó 100,9 millones de dólares.", "revenue"),
    ("release", "en", "+ is the debut album by Ed Sheeran, released on the Asylum label.", "artist"),
    ("release", "en", "It features the single “Lego House” among 12 tracks.", "track"),
    ("release", "ja", "アルバムには全12曲が収録されている。", "track_count"),
    ("release", "fr", "L'album contient « Drunk » et « Grade 8 ».", "track"),
    ("quake", "en", "The earthquake struck on January 17, 1994 at a depth of about 18 km.", "time"),
    ("quake", "ja", "震源の深さは18キロで、10128件の有感報告があった。", "depth"),
    ("quake", "zh", "地震发生于１９９４年１月１７日。", "time"),
    ("quake", "es", "Se recibieron 10.128 reportes de personas que lo sintieron.", "felt"),
    ("disaster", "en", "About 24,354 people were affected by the floods.", "affected"),
    ("disaster", "fr", "24\u202f354 personnes ont été touchées.", "affected"),
    ("disaster", "es", "Unas 24.354 personas resultaron afectadas.", "affected"),
    ("disaster", "zh", "GLIDE编号为FL-2015-000106-BFA。", "glide"),
]

UNKNOWN = [
    ("match", "en", "Liverpool vs Swansea is a football fixture between two English clubs, played in 2014."),
    ("match", "en", "Liverpool usually play their home games at Anfield in the Premier League."),
    ("match", "en", "The match kicked off at 20:00 in December 2014."),
    ("match", "ja", "リバプール対スウォンジーはイングランドのサッカーの試合です。"),
    ("film", "en", "Fight Club is a 1999 American drama film about a fight club."),
    ("film", "en", "The film runs about two hours; in 1999, 139 cinemas showed it."),
    ("film", "zh", "《搏击俱乐部》是一部1999年的美国电影。"),
    ("film", "fr", "Fight Club est un film sorti en octobre 1999."),
    ("release", "en", "“+” is an album. The songs are about being drunk and love."),
    ("release", "en", "It was released in 2011 on an asylum for independent music."),
    ("quake", "en", "The M 6.7 earthquake 1km NNW of Reseda, CA struck California in 1994."),
    ("quake", "ja", "マグニチュード6.7の地震がカリフォルニアで発生した。"),
    ("quake", "es", "Un terremoto de magnitud 6,7 sacudió California en enero de 1994."),
    ("disaster", "en", "Floods hit Burkina Faso in August 2015, affecting many people."),
    ("disaster", "fr", "Des inondations ont touché le Burkina Faso en août 2015."),
    ("match", "en", ""),
    ("film", "en", "I don't have information about that."),
]


def _judge(kind: str, lang: str, response: str) -> KnownVerdict:
    facts = ALL[kind]
    return asyncio.run(
        ENGINE.judge(
            entity_name=ENTITY_NAMES[kind],
            document=render_document(facts, "en"),
            facts=facts,
            response=response,
            lang=lang,
        )
    )


@pytest.mark.parametrize(("kind", "lang", "response", "fact"), KNOWN)
def test_known(kind: str, lang: str, response: str, fact: str) -> None:
    verdict = _judge(kind, lang, response)
    assert verdict.known, verdict.reason
    assert any(m.startswith(fact) for m in verdict.matched_facts), verdict.matched_facts
    assert fact in verdict.reason


@pytest.mark.parametrize(("kind", "lang", "response"), UNKNOWN)
def test_unknown(kind: str, lang: str, response: str) -> None:
    verdict = _judge(kind, lang, response)
    assert not verdict.known, verdict.matched_facts
    assert verdict.matched_facts == [] and verdict.reason


def test_wrong_values_do_not_match() -> None:
    assert not _judge("match", "en", "Liverpool won 3-1 in front of 40,000 fans.").known
    assert not _judge("film", "en", "Directed by David Lynch, it runs 120 minutes.").known
    assert not _judge("quake", "en", "It struck on 18 January 1994 at a depth of 25 km.").known


def test_opposing_team_counts_when_the_name_names_one_team() -> None:
    facts = ALL["match"]
    doc = render_document(facts, "en")
    verdict = asyncio.run(
        ENGINE.judge(entity_name="Liverpool", document=doc, facts=facts, response="They played Swansea.", lang="en")
    )
    assert verdict.known and verdict.matched_facts == ["away_team: Swansea"]
