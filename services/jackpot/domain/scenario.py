"""Golden-round scenario files (``shared/scenarios/README.md``) run through the real engine.

A scenario is one round of one table at resolution time: ``pot`` holds the balances after the
round's bets were collected, so the round is adopted as locked, its forfeits applied, and its
results resolved. The outcome has the shape of the file's ``expect``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jackpot.domain.config import MAIN, load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import PrizeAwarded
from jackpot.domain.money import MoneyError, format_amount, parse_amount

SCENARIO_TABLE = "T01"


def _malformed(detail: str) -> DomainError:
    return DomainError(Reason.MALFORMED, f"scenario: {detail}")


def resolve_scenario(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """Resolve one scenario; raises DomainError (naming the seat or card) for a refused round."""
    try:
        pot = scenario["pot"]
        reserves = pot.get("reserves", [])
        main = parse_amount(pot["main"])
        reserve_balances = {r["name"]: parse_amount(r["balance"]) for r in reserves}
        base = parse_amount(pot.get("base", 0))
        round_ = scenario["round"]
        results = round_["results"]
        game = scenario["game"]
    except (KeyError, TypeError, AttributeError) as error:
        raise _malformed(f"missing or malformed field {error}") from None
    except MoneyError as error:
        raise _malformed(str(error)) from None
    if base % parse_amount(1):
        raise _malformed("base must be whole pesos")
    if MAIN in reserve_balances:
        raise _malformed("a reserve cannot be named 'main'")
    config = load_config(
        {
            "pots": [{"name": MAIN, "percent": 100}]
            + [{"name": name, "percent": 0} for name in reserve_balances],
            "base": base // parse_amount(1),
            "paytable": scenario.get("paytable", "scj-poker"),
            "min_bet": 1,
            "max_bet": 10**12,
            "credit_value": 1,
        }
    )
    group, _ = PotGroup.open("scenario", config, {MAIN: main, **reserve_balances})
    house_before = group.house_advance
    table = str(round_.get("table", SCENARIO_TABLE))
    group.link_table(table, game, min_bet=1, max_bet=10**12, credit_value=1)

    bets: dict[int, int] = {}
    hands: dict[int, list[str]] = {}
    forfeited: list[int] = []
    for entry in results:
        seat, bet, cards = entry.get("seat"), entry.get("bet"), entry.get("cards")
        if not isinstance(seat, int) or isinstance(seat, bool):
            raise _malformed(f"seat must be an integer, got {seat!r}")
        if not isinstance(bet, int) or isinstance(bet, bool):
            raise _malformed(f"seat {seat}: bet must be whole pesos, got {bet!r}")
        if not isinstance(cards, list):
            raise _malformed(f"seat {seat}: cards must be a list, got {cards!r}")
        if seat in bets:
            raise DomainError(Reason.INVALID_STATE, f"seat {seat} appears twice in the round")
        bets[seat] = bet
        hands[seat] = cards
        if entry.get("forfeited", False):
            forfeited.append(seat)

    round_id = "R1"
    group.adopt_locked_round(table, round_id, bets)
    for seat in forfeited:
        group.forfeit(table, round_id, seat, "FOLD")
    events = group.resolve_round(table, round_id, hands, round_.get("community", []))
    return {
        "awards": [
            {"seat": e.seat, "prize": e.prize, "amount": e.amount_pesos}
            for e in events
            if isinstance(e, PrizeAwarded)
        ],
        "main": format_amount(group.main),
        "reserves": [format_amount(group.balances[name]) for name in reserve_balances],
        "house_advance": format_amount(group.house_advance - house_before),
    }
