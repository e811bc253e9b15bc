"""The dealer terminal's screen state (rule D3): nothing is payable while a link is down, prizes
keep the service's payment order (S5), a prize awaiting approval says who must approve it, and a
bad setting stops the terminal with one line (exit 2). What the screen displays is Spanish
(issue 29): every state, prize and sentence has its Spanish beside the log's English; the
browser tests judge the page itself (tests/integration/page_language.py)."""

from __future__ import annotations

import subprocess
import sys

from jackpot.display.web import PRIZE_NAMES as SIGN_PRIZE_NAMES
from jackpot.domain.hands import CATEGORIES
from jackpot.pot.records import MYSTERY_PRIZE
from jackpot.terminal.screen import (
    PAYOUT_STATE_TEXT,
    PAYOUT_STATES,
    PRIZE_NAMES,
    ROUND_STATE_TEXT,
    ROUND_STATES,
    STATE_WORDS,
    UNTRANSLATED,
    WHO_APPROVES,
    Answer,
    Screen,
    in_spanish,
    payout_json,
    prize_text,
    studio_json,
    wallet_round_json,
)
from jackpot.v1 import device_pb2, payout_pb2


def test_D3_nothing_is_payable_while_either_link_is_down() -> None:
    screen = Screen("CAR-1", "ana")
    assert "payout service" in screen.payable("a1")
    screen.link(screen.payout, True, "connected")
    assert "gateway" in screen.payable("a1")
    screen.link(screen.gateway, True, "watching the table")
    assert screen.payable("a1") == ""
    assert screen.payable("") == "no award named"
    screen.link(screen.gateway, False, "UNAVAILABLE: connection refused")
    assert "UNAVAILABLE: connection refused" in screen.payable("a1")


def test_D3_S5_prizes_in_the_services_order_and_the_locked_one_names_its_approver() -> None:
    screen = Screen("CAR-1", "ana")
    screen.open_payouts(
        [
            payout_pb2.Payout(
                award_id="b", seat=2, amount=90_000, state=payout_pb2.PAYOUT_STATE_ORDERED
            ),
            payout_pb2.Payout(
                award_id="a",
                seat=4,
                amount=2_000_000,
                state=payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL,
            ),
        ]
    )
    shown = screen.to_json()["payouts"]
    assert [(p["award_id"], p["payable"]) for p in shown] == [("b", True), ("a", False)]
    assert shown[1]["approver"] == WHO_APPROVES
    assert "supervisor" in WHO_APPROVES
    assert shown[0]["approver"] == ""


def test_D3_the_screen_sends_the_page_its_states_prizes_and_sentences_in_spanish() -> None:
    screen = Screen("CAR-1", "ana")
    assert screen.to_json()["links"]["gateway"]["text"] == "conectando"
    screen.link(screen.gateway, False, "UNAVAILABLE: failed to connect to all addresses")
    screen.link(screen.payout, True, "connected")
    screen.table_view(
        device_pb2.TableView(
            table_id="CAR-1",
            round_state=device_pb2.ROUND_STATE_LOCKED,
            closed_reason="pot group scl-main silent for over 1.5 s",
        )
    )
    screen.open_payouts(
        [
            payout_pb2.Payout(
                award_id="a",
                prize="ROYAL_FLUSH",
                state=payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL,
            )
        ]
    )
    screen.answer(Answer("a", False, "refused: NOT_AUTHENTICATED: this code was already used"))
    shown = screen.to_json()
    gateway = shown["links"]["gateway"]
    assert (gateway["detail"], gateway["text"]) == (
        "UNAVAILABLE: failed to connect to all addresses",
        "servicio no disponible",
    )
    assert shown["links"]["payout"]["text"] == "conectado"
    table = shown["table"]
    assert (table["round_state"], table["round_state_text"]) == ("locked", "apuestas cerradas")
    assert table["closed_text"] == "el pozo scl-main lleva más de 1,5 s sin noticias"
    [payout] = shown["payouts"]
    assert (payout["prize_text"], payout["state_text"]) == (
        "ESCALERA REAL",
        "BLOQUEADO: espera aprobación",
    )
    [answer] = shown["answers"]
    assert answer["message"].startswith("refused")  # the log's words stay for the log
    assert answer["text"] == "Rechazado: este código ya fue usado"


def test_every_state_and_prize_has_its_spanish_and_the_signs_name_prizes_alike() -> None:
    """Every category of every game and the mystery prize, as the terminal and the signs (two
    services, neither importing the other) name them; every round and payout state."""
    prizes = {category for categories in CATEGORIES.values() for category in categories}
    assert prizes | {MYSTERY_PRIZE} == set(PRIZE_NAMES)
    assert SIGN_PRIZE_NAMES == PRIZE_NAMES
    assert {*ROUND_STATES.values(), "unknown"} == set(ROUND_STATE_TEXT)
    assert {*PAYOUT_STATES.values(), "unknown"} == set(PAYOUT_STATE_TEXT)
    assert set(PAYOUT_STATES.values()) == set(STATE_WORDS)


def test_a_sentence_the_screen_does_not_know_is_shown_as_a_pointer_to_the_log() -> None:
    """Never in English: the log has the words (links.py logs every answer and lost link)."""
    assert in_spanish("the moon fell on the table") == UNTRANSLATED
    assert in_spanish("refused: SEAT_CLOSED: a new sentence") == f"Rechazado: {UNTRANSLATED}"
    assert in_spanish("refused: INVALID_STATE: a new sentence") == (
        "Rechazado: el estado del premio no lo permite"
    )
    assert in_spanish("") == ""


def test_a_refusal_names_the_payouts_state_in_spanish() -> None:
    """The payout service names the state as the domain does (PAID, AWAITING_APPROVAL)."""
    refused = "refused: INVALID_STATE: payout g/CAR-1/R1/5/FLUSH is {}: it cannot be paid"
    assert in_spanish(refused.format("PAID")) == (
        "Rechazado: el premio está pagado: no se puede pagar"
    )
    assert in_spanish(refused.format("AWAITING_APPROVAL")) == (
        "Rechazado: el premio está esperando aprobación: no se puede pagar"
    )
    assert in_spanish(refused.format("LOST")) == (
        "Rechazado: el premio está en otro estado: no se puede pagar"
    )


def test_a_terminal_without_a_table_stops_with_one_line_naming_the_setting() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jackpot.cli", "terminal"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("jackpot terminal: bad setting: JACKPOT_TERMINAL_TABLE")


def test_V1_an_envy_bonus_is_named_envidia_and_the_hand_that_earned_it() -> None:
    """V1: ENVY_<hand> is shown as "ENVIDIA: <the hand>", flagged as envy; a prize the screen
    does not know stays PREMIO, an envy bonus of an unknown hand too."""
    assert prize_text("ENVY_ROYAL_FLUSH") == "ENVIDIA: ESCALERA REAL"
    assert prize_text("ENVY_FOUR_ACES_SAME_SUIT") == "ENVIDIA: CUATRO ASES DEL MISMO PALO"
    assert prize_text("ROYAL_FLUSH") == "ESCALERA REAL"
    assert prize_text("ENVY_NOTHING") == prize_text("NOTHING") == "PREMIO"
    envy = payout_json(payout_pb2.Payout(award_id="a", seat=2, prize="ENVY_STRAIGHT_FLUSH"))
    assert (envy["prize_text"], envy["envy"]) == ("ENVIDIA: ESCALERA DE COLOR", True)
    assert payout_json(payout_pb2.Payout(award_id="b", prize="FLUSH"))["envy"] is False


def test_O9_a_studio_rounds_winners_and_bets_are_said_in_spanish_by_count() -> None:
    many = payout_pb2.WalletRound(
        round_id="R1",
        prize="ROYAL_FLUSH",
        winners=10_000,
        total=2_005_000,
        paid=9_997,
        paid_total=2_004_000,
        awaiting_approval=2,
        voided=1,
    )
    assert wallet_round_json(many)["text"] == (
        "ESCALERA REAL · 10.000 ganadores · $2.005.000 · pagados a billeteras 9.997 "
        "($2.004.000) · 2 esperan aprobación · 1 anulado"
    )
    one = payout_pb2.WalletRound(round_id="R2", prize="FULL_HOUSE", winners=1, total=100_000)
    assert wallet_round_json(one)["text"] == (
        "FULL · 1 ganador · $100.000 · pagados a billeteras 0 ($0)"
    )
    view = device_pb2.StudioRoundView(seats=10_000, bets=2, bet_total=2_000, folded=2)
    assert studio_json(view)["text"] == "2 apuestas · $2.000 apostados · 2 retiradas"
