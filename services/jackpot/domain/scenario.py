"""Golden-round scenario files (``tests/golden/README.md``) run through the real engine.

A scenario is one round of one table. Without ``config`` it is taken at resolution time: ``pot``
holds the balances after the round's bets were collected (by a commission-free group whose main
pot takes every contribution), so the round is adopted as locked, its forfeits applied, and its
results resolved. With ``config`` (the contribution part of a pot group's configuration: rules
C2, C3, C5, E1, X2), ``pot`` holds the balances before the lock and the round's bets are collected
by that configuration first. ``pending_config`` is a newer version proposed before the round; it
takes effect only if the round resets the main pot (C7). ``config.levels`` gives the group
several levels (L1); ``round.other_tables`` are other tables linked to the group, each with a
round already locked (its bets already in ``pot``) or none, as linked envy bonuses need them (V2).
``round.studio_seats`` makes the round's table a studio table whose bets all hold
``round.shared_hand`` (O1, O2); ``round.then`` are rounds of other tables of the group resolved
after it, each on the pots the one before left (S9).
The outcome has the shape of the file's ``expect``; an award names its ``level`` in a group with
levels and its ``table`` when it is paid at another table than the round's. A refused command
raises :class:`RoundRefused`, which also names every balance that command changed (none, by the
rules).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from jackpot.domain.config import MAIN, PotGroupConfig, load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import Event, MysteryAwarded, PrizeAwarded
from jackpot.domain.money import MoneyError, format_amount, parse_amount
from jackpot.domain.mystery import secure_trigger

SCENARIO_TABLE = "T01"
SCENARIO_ROUND = "R1"
UNLIMITED: dict[str, int] = {"min_bet": 1, "max_bet": 10**12, "credit_value": 1}
# What a file's `config` / `pending_config` may state; base and paytable have their own fields.
CONFIG_FIELDS = frozenset(
    {
        "version",
        "commission_percent",
        "pots",
        "reserve_order",
        "mystery",
        "levels",
        "min_bet",
        "max_bet",
        "credit_value",
    }
)
T = TypeVar("T")


class RoundRefused(DomainError):
    """The engine refused a command of the round. ``changed`` maps every balance the refused
    command changed to its (before, after) exact amounts: empty, since a refusal changes nothing."""

    def __init__(self, error: DomainError, changed: Mapping[str, tuple[str, str]]) -> None:
        super().__init__(error.reason, error.detail)
        self.changed = dict(changed)


def _malformed(detail: str) -> DomainError:
    return DomainError(Reason.MALFORMED, f"scenario: {detail}")


def _money(group: PotGroup) -> dict[str, int]:
    """Every balance a refused command must leave as it found it: each pot, and the house
    advance, collected, commission and awarded totals (the terms of rule M2)."""
    money = {f"pot {name}": balance for name, balance in group.balances.items()}
    money["house_advance"] = group.house_advance
    money["collected"] = group.collected
    money["commission"] = group.commission
    money["awarded"] = group.awarded
    return money


def _run(group: PotGroup, command: Callable[[], T]) -> T:
    """Run one engine command; a refusal becomes RoundRefused naming what it changed."""
    before = _money(group)
    try:
        return command()
    except DomainError as error:
        after = _money(group)
        changed = {
            name: (format_amount(before.get(name, 0)), format_amount(after.get(name, 0)))
            for name in sorted(before.keys() | after.keys())
            if before.get(name, 0) != after.get(name, 0)
        }
        raise RoundRefused(error, changed) from None


def _config_data(
    scenario: Mapping[str, Any], reserves: list[str], base_pesos: int
) -> dict[str, Any]:
    """The group's configuration data: the file's `config` (or a commission-free group whose
    main pot takes everything), with the base from `pot.base` and the file's paytable."""
    paytable = scenario.get("paytable", "scj-poker")
    raw = scenario.get("config")
    if raw is None:
        pots = [{"name": MAIN, "percent": 100}] + [{"name": n, "percent": 0} for n in reserves]
        return {"pots": pots, "base": base_pesos, "paytable": paytable, **UNLIMITED}
    if not isinstance(raw, Mapping):
        raise _malformed(f"config must be an object, got {raw!r}")
    unknown = set(raw) - CONFIG_FIELDS
    if unknown:
        raise _malformed(
            f"config fields {sorted(unknown)} are not allowed (the base is pot.base, the "
            "paytable is 'paytable')"
        )
    raw_pots = raw.get("pots", [{"name": MAIN}])
    if isinstance(raw_pots, list):  # anything else is load_config's to refuse
        named = {p.get("name") for p in raw_pots if isinstance(p, Mapping)}
        if named != {MAIN, *reserves}:
            raise _malformed("config.pots must name exactly 'main' and the pots of pot.reserves")
    data: dict[str, Any] = {**UNLIMITED, **raw, "base": base_pesos, "paytable": paytable}
    if "reserve_order" not in raw and "levels" not in raw:  # S7, S8: as pot.reserves lists
        mystery = raw.get("mystery")
        mystery_pot = mystery.get("pot") if isinstance(mystery, Mapping) else None
        data["reserve_order"] = [name for name in reserves if name != mystery_pot]
    return data


def _pending(scenario: Mapping[str, Any], current: Mapping[str, Any]) -> PotGroupConfig | None:
    """`pending_config`: the fields it names replace the current configuration's (C7)."""
    raw = scenario.get("pending_config")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise _malformed(f"pending_config must be an object, got {raw!r}")
    unknown = set(raw) - CONFIG_FIELDS - {"base", "paytable"}
    if unknown:
        raise _malformed(f"pending_config fields {sorted(unknown)} are unknown")
    return load_config({**current, **raw})


def _first_trigger(
    scenario: Mapping[str, Any], config: PotGroupConfig
) -> Callable[[int, int], tuple[int, bytes]]:
    """The mystery prize's hidden trigger for the current cycle is the file's
    `pot.mystery_trigger` (X2); later draws are the engine's own secure ones."""
    given = scenario["pot"].get("mystery_trigger")
    spec = config.mystery
    if spec is None:
        if given is not None:
            raise _malformed("pot.mystery_trigger needs config.mystery")
        return secure_trigger
    if isinstance(given, bool) or not isinstance(given, int):
        raise _malformed(f"config.mystery needs pot.mystery_trigger in whole pesos, got {given!r}")
    if not spec.min_pesos <= given <= spec.max_pesos:
        raise _malformed(
            f"pot.mystery_trigger {given} is outside mystery {spec.min_pesos}-{spec.max_pesos}"
        )
    draws: list[int] = []

    def source(low: int, high: int) -> tuple[int, bytes]:
        draws.append(low)
        if len(draws) == 1:
            return given, secure_trigger(given, given)[1]
        return secure_trigger(low, high)

    return source


@dataclass(frozen=True, slots=True)
class _Fields:
    """A scenario's pot and round fields, read and checked for shape."""

    main: int  # minor units
    reserves: dict[str, int]  # name -> balance in minor units, in the file's order
    base: int  # minor units, whole pesos
    round: Mapping[str, Any]
    results: Any
    game: Any


@dataclass(frozen=True, slots=True)
class _Results:
    """The round's results by seat, as the engine's commands take them."""

    bets: dict[int, int]
    hands: dict[int, list[str]]
    forfeited: list[int]
    shared_hand: list[str]
    community: list[str]


def resolve_scenario(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """Resolve one scenario; raises DomainError (naming the seat or card) for a refused round.

    The steps: read the fields, open the group with its configuration (and a pending one), link
    the table, read the results, play the round (lock or adopt, forfeits, resolve), the outcome.
    """
    fields = _read_fields(scenario)
    data = _config_data(scenario, list(fields.reserves), fields.base // parse_amount(1))
    config = load_config(data)
    pending = _pending(scenario, data)
    trigger_source = _first_trigger(scenario, config)
    balances = {MAIN: fields.main, **fields.reserves}
    group, _ = PotGroup.open("scenario", config, balances, trigger_source=trigger_source)
    house_before = group.house_advance
    table = str(fields.round.get("table", SCENARIO_TABLE))
    _link_table(group, table, fields.game, fields.round, pending)
    _other_tables(group, fields.round.get("other_tables", []), fields.game)
    collect = "config" in scenario
    events = _play_round(group, table, _read_results(fields.round), collect=collect)
    events += _then(group, fields.round.get("then", []), fields.game, collect=collect)
    outcome: dict[str, Any] = {
        "awards": _awards(events, table),
        "main": format_amount(group.main),
        "reserves": [format_amount(group.balances[name]) for name in fields.reserves],
        "house_advance": format_amount(group.house_advance - house_before),
    }
    if pending is not None:
        outcome["config_version"] = group.config.version
    return outcome


def _read_fields(scenario: Mapping[str, Any]) -> _Fields:
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
    return _Fields(main, reserve_balances, base, round_, results, game)


def _link(group: PotGroup, table: str, game: Any, round_: Mapping[str, Any]) -> None:
    """Link a table of the scenario, its limits the configuration's; a studio table with
    ``round.studio_seats`` seats (O1)."""
    studio_seats = round_.get("studio_seats", 0)
    if not _whole(studio_seats):
        raise _malformed(f"studio_seats must be a whole number, got {studio_seats!r}")
    config = group.config
    link = partial(
        group.link_table,
        table,
        game,
        min_bet=config.min_bet,
        max_bet=config.max_bet,
        credit_value=config.credit_value,
        studio_seats=studio_seats,
    )
    _run(group, link)


def _link_table(
    group: PotGroup,
    table: str,
    game: Any,
    round_: Mapping[str, Any],
    pending: PotGroupConfig | None,
) -> None:
    """Link the scenario's table, then propose `pending`."""
    _link(group, table, game, round_)
    if pending is not None:
        _run(group, lambda: group.propose_config(pending, "scenario", "the file's pending_config"))


def _other_tables(group: PotGroup, others: Any, game: Any) -> None:
    """V2: other tables linked to the group, each with its round already locked (its bets are
    in the file's balances, so it is adopted, not collected) and its forfeits, or no round."""
    if not isinstance(others, list):
        raise _malformed(f"round.other_tables must be a list, got {others!r}")
    config = group.config
    for other in others:
        if not isinstance(other, Mapping) or not isinstance(other.get("table"), str):
            raise _malformed(f"each of round.other_tables needs a 'table', got {other!r}")
        table = other["table"]
        link = partial(
            group.link_table,
            table,
            other.get("game", game),
            min_bet=config.min_bet,
            max_bet=config.max_bet,
            credit_value=config.credit_value,
        )
        _run(group, link)
        bets = other.get("bets", [])
        if not bets:
            continue
        if not isinstance(bets, list) or not all(
            isinstance(b, Mapping) and _whole(b.get("seat")) and _whole(b.get("bet")) for b in bets
        ):
            raise _malformed(f"{table}: bets must be a list of {{seat, bet}}, got {bets!r}")
        round_id = str(other.get("round", SCENARIO_ROUND))
        by_seat = {b.get("seat"): b.get("bet") for b in bets}
        _run(group, partial(group.adopt_locked_round, table, round_id, by_seat))
        for seat in other.get("forfeited", []):
            _run(group, partial(group.forfeit, table, round_id, seat, "FOLD"))


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _read_results(round_: Mapping[str, Any]) -> _Results:
    """A round's bets, own hands (none at a studio table: its ``shared_hand``, O2), forfeits
    and community cards."""
    studio = "studio_seats" in round_
    shared_hand = round_.get("shared_hand", [])
    community = round_.get("community", [])
    if not isinstance(shared_hand, list) or not isinstance(community, list):
        raise _malformed("shared_hand and community must be lists of cards")
    bets: dict[int, int] = {}
    hands: dict[int, list[str]] = {}
    forfeited: list[int] = []
    for entry in round_.get("results", []):
        seat, bet, cards = entry.get("seat"), entry.get("bet"), entry.get("cards")
        if not _whole(seat):
            raise _malformed(f"seat must be an integer, got {seat!r}")
        if not _whole(bet):
            raise _malformed(f"seat {seat}: bet must be whole pesos, got {bet!r}")
        if not isinstance(cards, list) and not (studio and cards is None):
            raise _malformed(f"seat {seat}: cards must be a list, got {cards!r}")
        if seat in bets:
            raise DomainError(Reason.INVALID_STATE, f"seat {seat} appears twice in the round")
        bets[seat] = bet
        if cards is not None:
            hands[seat] = cards
        if entry.get("forfeited", False):
            forfeited.append(seat)
    return _Results(bets, hands, forfeited, shared_hand, community)


def _play_round(
    group: PotGroup, table: str, results: _Results, *, collect: bool, round_id: str = SCENARIO_ROUND
) -> list[Event]:
    """Lock (collecting the bets) or adopt the round, apply its forfeits, resolve it."""
    events: list[Event] = []
    if collect:  # C1: the lock collects the bets by the configuration (and may hit X2)
        events += _run(group, lambda: group.lock_round(table, round_id, results.bets))
    else:
        _run(group, lambda: group.adopt_locked_round(table, round_id, results.bets))
    for seat in results.forfeited:
        _run(group, partial(group.forfeit, table, round_id, seat, "FOLD"))
    resolve = partial(
        group.resolve_round,
        table,
        round_id,
        results.hands,
        results.community,
        shared_hand=results.shared_hand,
    )
    events += _run(group, resolve)
    return events


def _then(group: PotGroup, then: Any, game: Any, *, collect: bool) -> list[Event]:
    """``round.then``: rounds of other tables, each linked and played after the one before on
    the pots it left (S9)."""
    if not isinstance(then, list):
        raise _malformed(f"round.then must be a list, got {then!r}")
    events: list[Event] = []
    for number, round_ in enumerate(then, start=2):
        if not isinstance(round_, Mapping) or not isinstance(round_.get("table"), str):
            raise _malformed(f"each of round.then needs a 'table', got {round_!r}")
        table = round_["table"]
        _link(group, table, round_.get("game", game), round_)
        results = _read_results(round_)
        events += _play_round(group, table, results, collect=collect, round_id=f"R{number}")
    return events


def _awards(events: list[Event], table: str) -> list[dict[str, Any]]:
    """The awards in the order paid; with its level in a group with levels (L4) and its table
    when it is not the round's (V2)."""
    awards: list[dict[str, Any]] = []
    for event in events:
        if isinstance(event, MysteryAwarded):
            awards.append({"seat": event.seat, "prize": "MYSTERY", "amount": event.amount_pesos})
        elif isinstance(event, PrizeAwarded):
            award: dict[str, Any] = {
                "seat": event.seat,
                "prize": event.prize,
                "amount": event.amount_pesos,
            }
            if event.level:
                award["level"] = event.level
            if event.table_id != table:
                award["table"] = event.table_id
            awards.append(award)
    return awards
