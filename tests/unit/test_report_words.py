"""The report document's words, amounts and dates (R1, M1): as a Chilean floor writes them, exact,
in the casino's time zone; English on request."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from jackpot.domain.money import MINOR_PER_PESO
from jackpot.tools.report_model import iso, not_read
from jackpot.tools.report_words import HANDS, WORDS, Style

SPANISH, ENGLISH = Style("es"), Style("en")


def ns(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()) * 10**9


def test_M1_amounts_as_the_floor_writes_them_and_a_fraction_is_never_rounded() -> None:
    assert SPANISH.pesos(1_275_000) == "$1.275.000"
    assert ENGLISH.pesos(1_275_000) == "$1,275,000"
    assert SPANISH.pesos(0) == "$0"
    assert SPANISH.money(3 * MINOR_PER_PESO // 2) == "$1,5"
    assert ENGLISH.money(3 * MINOR_PER_PESO // 2) == "$1.5"
    assert SPANISH.money(1_000_000 * MINOR_PER_PESO + 1) == "$1.000.000,000000000001"
    assert SPANISH.money(-5 * MINOR_PER_PESO) == "-$5"
    assert SPANISH.number(1234567) == "1.234.567"


def test_percentages_in_each_language() -> None:
    assert SPANISH.percent(125_000) == "12,5 %"
    assert ENGLISH.percent(125_000) == "12.5%"
    assert SPANISH.percent(700_000) == "70 %"


def test_instants_are_in_the_casinos_zone_and_the_zone_line_names_a_clock_change() -> None:
    summer = ns("2026-12-02T12:00:00")  # Chile's summer time: UTC-3
    assert SPANISH.when(summer) == "02-12-2026 09:00:00"
    assert ENGLISH.when(summer) == "2026-12-02 09:00:00"
    assert SPANISH.when(summer, seconds=False) == "02-12-2026 09:00"
    assert SPANISH.when_text(iso(summer)) == "02-12-2026 09:00:00"
    assert SPANISH.zone_line(summer, summer + 3600 * 10**9) == "America/Santiago (UTC−03:00)"
    april = ns("2026-04-04T12:00:00"), ns("2026-04-06T12:00:00")  # the clocks go back on the 5th
    assert SPANISH.zone_line(*april) == "America/Santiago (UTC−03:00, UTC−04:00)"
    madrid = Style("es", ZoneInfo("Europe/Madrid"))
    assert madrid.when(summer) == "02-12-2026 13:00:00"


def test_a_field_the_report_did_not_read_is_said_in_the_documents_language() -> None:
    text = not_read(ns("2026-12-02T12:00:00"))
    assert SPANISH.when_text(text) == "no leído (antes de 02-12-2026 09:00:00)"
    assert ENGLISH.when_text(text) == "not read (before 2026-12-02 09:00:00)"
    assert SPANISH.when_text("") == ""


def test_every_phrase_and_hand_has_both_languages_and_others_are_refused() -> None:
    for key, (spanish, english) in {**WORDS, **HANDS}.items():
        assert spanish.strip(), key
        assert english.strip(), key
    assert SPANISH.hand("ROYAL_FLUSH") == "Escalera real"
    assert SPANISH.hand("A_HAND_OF_A_NEW_PAYTABLE") == "A_HAND_OF_A_NEW_PAYTABLE"
    assert SPANISH.words("not_reconcile", why="x") == "ESTOS LIBROS NO CUADRAN: x"
    with pytest.raises(ValueError, match="language 'fr'"):
        Style("fr")
