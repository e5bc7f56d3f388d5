"""Per-language value formatting: digits never change across languages; conventions per language."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clkt.documents.formatting import LANGUAGES, formatter


def test_conventions() -> None:
    en, ja, zh, fr, es = (formatter(x) for x in ("en", "ja", "zh", "fr", "es"))
    assert en.integer(44621) == "44,621" and ja.integer(44621) == "44,621"
    assert fr.integer(44621) == "44\u202f621" and es.integer(44621) == "44.621" and es.integer(2014) == "2014"
    assert en.magnitude(6.7) == "6.7" and fr.magnitude(6.7) == "6,7" and es.km(18.202) == "18,2 km"
    assert en.date(date(2014, 12, 29)) == "29 December 2014"
    assert ja.date(date(2014, 12, 29)) == zh.date(date(2014, 12, 29)) == "2014年12月29日"
    assert fr.date(date(2015, 1, 1)) == "1er janvier 2015"
    assert es.date(date(2014, 12, 29)) == "29 de diciembre de 2014"
    assert en.minutes(139) == "139 minutes" and ja.minutes(139) == "139分" and zh.minutes(139) == "139分钟"
    assert en.usd(63_000_000) == "US$63,000,000" and zh.usd(5) == "5美元"
    assert en.score(4, 1) == "4–1"
    dt = datetime(1994, 1, 17, 12, 30, 55, tzinfo=UTC)
    assert en.datetime_utc(dt) == "17 January 1994, 12:30 UTC"
    assert ja.label("alert", "Orange") == "オレンジ" and fr.label("genre", "Science Fiction") == "science-fiction"
    assert en.label("genre", "Kaiju") == "Kaiju"  # unknown values stay as sent


@pytest.mark.parametrize("lang", LANGUAGES)
@given(n=st.integers(-10**12, 10**12), x=st.floats(-1000, 1000, allow_nan=False))
def test_digits_agree_across_languages(lang: str, n: int, x: float) -> None:
    fmt, en = formatter(lang), formatter("en")
    digits = lambda s: re.sub(r"\D", "", s)  # noqa: E731
    assert digits(fmt.integer(n)) == digits(en.integer(n))
    assert digits(fmt.usd(abs(n))) == digits(en.usd(abs(n)))
    assert digits(fmt.magnitude(x)) == digits(en.magnitude(x))


def test_coordinates_and_intensity() -> None:
    en, ja, zh, fr, es = (formatter(x) for x in ("en", "ja", "zh", "fr", "es"))
    assert en.latitude(34.213) == "34.213° N" and en.longitude(-118.537) == "118.537° W"
    assert ja.latitude(34.213) == "北緯34.213度" and ja.longitude(-118.537) == "西経118.537度"
    assert zh.latitude(-13.841) == "南纬13.841度" and zh.longitude(142.373) == "东经142.373度"
    assert fr.latitude(34.213) == "34,213° N" and fr.longitude(-118.537) == "118,537° O"
    assert es.latitude(-13.841) == "13,841° S" and es.longitude(-67.553) == "67,553° O"
    assert en.latitude(0.0) == en.latitude(-0.0) == "0.000° N" and en.latitude(-0.0004) == "0.000° S"
    assert en.intensity(8.794) == "8.8" and fr.intensity(8.794) == "8,8" and es.intensity(3.673) == "3,7"


@pytest.mark.parametrize("lang", LANGUAGES)
@given(x=st.floats(-180, 180, allow_nan=False))
def test_coordinate_digits_agree_across_languages(lang: str, x: float) -> None:
    fmt, en = formatter(lang), formatter("en")
    digits = lambda s: re.sub(r"\D", "", s)  # noqa: E731
    assert digits(fmt.latitude(x)) == digits(en.latitude(x)) == digits(en.coordinate(abs(x)))
    assert digits(fmt.longitude(x)) == digits(en.longitude(x))
