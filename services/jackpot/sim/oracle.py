"""The round oracle: every prize of a round predicted from the cards dealt, by the rules alone.

An independent model of docs/rules.md, written apart from ``jackpot.domain`` (it shares no code
with the engine, its paytables or its hand evaluator, like the property tests' reference model):
from a round's bets, forfeits and dealt hands and the pot balances before it, :func:`resolve`
gives every award to the peso, in the order they are paid, with the pots (or the house) that
fund each one, and the refill after it.

- P, P2, P3, P4: the hands and the two paytables of the rules page
  (:mod:`jackpot.sim.oracle_cards`); a configuration's paytable is read from its own data, and
  one named like a built-in must carry the rules' prizes. P1: a prize is the amount paid.
- E2, E3, E4, X1: a forfeited seat wins nothing from the progressive (a mystery prize it won at
  the lock stands); the dealer's hand plays no part.
- S1, S2: fixed prizes first, in the paytable's order by multiple, each on the winner's own bet;
  then percentage prizes, smallest first, each on what the main pot holds at that moment.
- O1, O2 (studio tables): every bet of a studio round holds the one shared hand, so each is a
  winner of what it shows; the rest is as at a land table.
- S3, S5: equal parts of whole pesos, the whole remainder to the winner nearest seat 1; paid from
  the lowest seat. S4: each part of a capped prize at most the cap times that seat's bet. S6: a
  percentage is rounded down to whole pesos. S7: what the main pot cannot pay comes from the
  reserves in their order, then the house. S8, C7: a reset (a 100 % prize, or a prize that leaves
  the main pot below its base) activates the newest pending configuration, and the main pot is
  filled back up to the base from the reserves, then the house. S9: each round sees the pots as
  the round before left them (the ledger's order).
- C1, C2, C3, C5, X2 (:func:`collect`): the lock collects each bet, from seat 1: the commission,
  then each pot's share down its overflow chain; the seat whose bet takes the mystery pot to the
  hidden trigger wins it.
- L1-L4 (the operator's levels, beside the SCJ rules): each prize is paid from its level's pot,
  then that level's reserves, then the house; a percentage is of its level's pot; each level that
  paid and is below its base is filled back from its own reserves, then the house; only the main
  level's reset activates a pending configuration. The ledger names each award's level.
- V1-V3 (envy bonuses): for each winner of a prize with an envy bonus, every other seat with a
  locked bet it did not forfeit is paid the bonus from the named level, after the multiples of the
  bet and before the percentages; a linked bonus also at every other table's locked round (the
  oracle follows the ledger's locks and forfeits to know them).

Balances are exact :class:`~fractions.Fraction` s of a peso and prizes whole pesos (M1).
:mod:`jackpot.sim.ledger_oracle` holds this model against a whole ledger.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from jackpot.sim.oracle_cards import (
    GAMES,
    HANDS,
    RANKS,
    SUITS,
    Paytable,
    percent,
    read_paytable,
)

MAIN = "main"
RoundKey = tuple[str, str, str]  # (pot group, table, round)
Funding = tuple[tuple[str, Fraction], ...]  # (account the money leaves, exact pesos), in order


# ------------------------------------------------------------------------------- configuration


@dataclass(frozen=True, slots=True)
class Level:
    """L1: a level's name, its pot, its base and its reserves in their order (S7, S8, L3)."""

    name: str
    pot: str
    base: Fraction
    reserves: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Config:
    """The parts of a pot group's configuration the rules need, read from its own data."""

    version: int
    commission: Fraction  # C2
    shares: tuple[tuple[str, Fraction], ...]  # C3: each pot's share, in configuration order
    overflow: Mapping[str, tuple[Fraction, str]]  # C5: pot -> (its ceiling, where excess goes)
    reserves: tuple[str, ...]  # S7, S8: the order the reserves pay shortfalls and refills
    base: Fraction  # C4, S8
    paytable: Paytable  # P, P4
    limits: tuple[int, int, int]  # E1: minimum bet, maximum bet, credit value
    mystery: tuple[str, int, int] | None  # X2: its pot, the lowest and the highest trigger
    levels: tuple[Level, ...] = ()  # L1: the main level first; () for a group without levels
    named: bool = False  # L4: the configuration states levels, so the ledger names them

    def level(self, name: str | None) -> Level:
        """The level of that name (None: the main level); a group without levels has one."""
        levels = self.levels or (Level(MAIN, MAIN, self.base, self.reserves),)
        return next(level for level in levels if name is None or level.name == name)

    def written(self, level: Level) -> str:
        """L4: how the ledger names a level: not at all in a group without levels."""
        return level.name if self.named else ""


def read_config(data: Mapping[str, Any]) -> Config:
    """A configuration as the ledger states it (``PotGroupOpened``, ``ConfigProposed``,
    ``ConfigActivated``: the pot's ``to_config`` shape) or as a golden round gives it."""
    pots = list(data["pots"])
    mystery = data.get("mystery")
    spec = None if not mystery else (str(mystery["pot"]), int(mystery["min"]), int(mystery["max"]))
    mystery_pot = None if spec is None else spec[0]
    others = [_level(level) for level in data.get("levels", [])[1:]]
    claimed = {pot for level in others for pot in (level.pot, *level.reserves)}
    listed = [str(p["name"]) for p in pots if p["name"] not in (MAIN, mystery_pot, *claimed)]
    main_level = (data.get("levels") or [{}])[0]
    reserves = tuple(data.get("reserve_order", main_level.get("reserve_order", listed)))
    base = Fraction(str(data.get("base", main_level.get("base", 0))))
    main = Level(str(main_level.get("name", MAIN)), MAIN, base, reserves)
    return Config(
        version=int(data.get("version", 1)),
        commission=percent(data.get("commission_percent", 0)),
        shares=tuple((str(p["name"]), percent(p.get("percent", 0))) for p in pots),
        overflow={
            str(p["name"]): (Fraction(str(p["ceiling"])), str(p["overflow_to"]))
            for p in pots
            if p.get("ceiling") is not None and p.get("overflow_to")
        },
        reserves=reserves,
        base=base,
        paytable=read_paytable(data.get("paytable", "scj-poker")),
        limits=(
            int(data.get("min_bet", 1)),
            int(data.get("max_bet", 10**12)),
            int(data.get("credit_value", 1)),
        ),
        mystery=spec,
        levels=(main, *others) if "levels" in data else (),
        named="levels" in data,
    )


def _level(data: Mapping[str, Any]) -> Level:
    return Level(
        str(data["name"]),
        str(data["pot"]),
        Fraction(str(data.get("base", 0))),
        tuple(str(pot) for pot in data.get("reserve_order", ())),
    )


# ------------------------------------------------------------------- rounds and refusals


@dataclass(frozen=True, slots=True)
class Dealt:
    """One round as the floor played it: the game, the bets the gateway acknowledged at the lock
    (whole pesos by seat), the seats that forfeited (E2, E3), the cards dealt to each seat and the
    community cards. ``results_accepted``: whether the gateway accepted the results (None when
    its answer was lost: they may or may not have been applied). A studio table's round (O1,
    O2) has ``studio_seats`` and the one ``shared_hand`` every bet holds, and no own hands."""

    game: str
    bets: Mapping[int, int]
    hands: Mapping[int, Sequence[str]]
    community: Sequence[str] = ()
    forfeited: frozenset[int] = frozenset()
    results_accepted: bool | None = True
    studio_seats: int = 0
    shared_hand: Sequence[str] = ()

    def held(self) -> Mapping[int, Sequence[str]]:
        """The hand each seat is judged on: its own, or at a studio the shared one (O2)."""
        if self.studio_seats:
            return {seat: self.shared_hand for seat in self.bets}
        return self.hands


class Refused(ValueError):
    """A round the rules refuse; ``reason`` as the engine names it (``DUPLICATE_CARD``, ...)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def _check_cards(cards: Sequence[str], where: str) -> None:
    for card in cards:
        if not (isinstance(card, str) and len(card) == 2 and card[0] in RANKS and card[1] in SUITS):
            raise Refused("INVALID_CARD", f"{card!r} at {where}")


def check_results(dealt: Dealt) -> None:
    """P3: seats with a bet, the game's number of cards, one deck for the poker games."""
    if dealt.studio_seats or dealt.shared_hand:
        check_studio_results(dealt)
        return
    game = GAMES[dealt.game]
    seen: Counter[str] = Counter(dealt.community)
    for seat in sorted(dealt.hands):
        cards = dealt.hands[seat]
        if not 1 <= seat <= game.seats:
            raise Refused("SEAT_OUT_OF_RANGE", f"seat {seat} of {dealt.game}")
        if seat not in dealt.bets:
            raise Refused("NO_BET", f"a result for seat {seat}, which has no bet")
        _check_cards(cards, f"seat {seat}")
        if not game.own[0] <= len(cards) <= game.own[1]:
            raise Refused("WRONG_CARD_COUNT", f"seat {seat} has {len(cards)} cards")
        seen.update(cards)
    _check_cards(dealt.community, "community")
    if len(dealt.community) != game.community:
        raise Refused("WRONG_CARD_COUNT", f"{len(dealt.community)} community cards")
    twice = sorted(card for card, n in seen.items() if n > 1)
    if game.one_deck and twice:
        raise Refused("DUPLICATE_CARD", f"{twice} dealt twice from one deck")


def check_studio_results(dealt: Dealt) -> None:
    """T1, O2: a studio round of Caribbean Stud: its bets on seats 1 to its seats, one shared
    hand of five cards of one deck and nothing else dealt."""
    if not dealt.studio_seats or dealt.hands:
        where = "a land table's round" if not dealt.studio_seats else "a studio round"
        raise Refused("MALFORMED", f"{where} with a shared hand and own hands")
    if dealt.game != "caribbean":
        raise Refused("INVALID_CONFIG", f"a studio table of {dealt.game}")
    for seat in sorted(dealt.bets):
        if not 1 <= seat <= dealt.studio_seats:
            raise Refused("SEAT_OUT_OF_RANGE", f"seat {seat} of {dealt.studio_seats}")
    _check_cards(dealt.shared_hand, "the shared hand")
    if len(dealt.shared_hand) != 5 or dealt.community:
        raise Refused("WRONG_CARD_COUNT", f"a shared hand of {len(dealt.shared_hand)} cards")
    twice = sorted(card for card, n in Counter(dealt.shared_hand).items() if n > 1)
    if twice:
        raise Refused("DUPLICATE_CARD", f"{twice} twice in the shared hand")


def check_bets(config: Config, bets: Mapping[int, int]) -> None:
    """E1: every bet within the pot's limits, in whole credits (M1: whole pesos)."""
    low, high, credit = config.limits
    for seat, bet in sorted(bets.items()):
        if type(bet) is not int or not low <= bet <= high or bet % credit:
            raise Refused(
                "BET_OUT_OF_LIMITS", f"seat {seat} bet {bet!r} ({low}-{high} by {credit})"
            )


# --------------------------------------------------------------- contributions (C, X2)


def credit(config: Config, balances: dict[str, Fraction], pot: str, amount: Fraction) -> None:
    """C5: a pot takes what fits under its ceiling; the excess goes on down its overflow chain."""
    while pot in config.overflow:
        ceiling, onward = config.overflow[pot]
        room = max(ceiling - balances.get(pot, Fraction(0)), Fraction(0))
        if amount <= room:
            break
        balances[pot] = balances.get(pot, Fraction(0)) + room
        pot, amount = onward, amount - room
    balances[pot] = balances.get(pot, Fraction(0)) + amount


def collect(
    config: Config,
    balances: dict[str, Fraction],
    bets: Mapping[int, int],
    trigger: int | None = None,
) -> int | None:
    """C1-C3, C5: collect a lock's bets into ``balances``, one at a time from seat 1, each less
    the commission and shared by the pots' percentages. X2: with the mystery prize's revealed
    ``trigger``, the seat whose bet takes the mystery pot to it or past it wins it; its pot pays
    the trigger. Returns that seat (None: no mystery prize at this lock)."""
    winner = None
    for seat in sorted(bets):
        net = bets[seat] * (1 - config.commission)
        for pot, share in config.shares:
            if share:
                credit(config, balances, pot, net * share)
        mystery = config.mystery
        if winner is None and trigger is not None and mystery is not None:
            winner = seat if balances.get(mystery[0], Fraction(0)) >= trigger else None
    if winner is not None and trigger is not None and config.mystery is not None:
        balances[config.mystery[0]] -= trigger
    return winner


# --------------------------------------------------------------------- resolution (S)


@dataclass(frozen=True, slots=True)
class Award:
    seat: int
    prize: str
    amount: int  # whole pesos (M1)
    funded: Funding  # S7: the accounts that pay it, in order
    why: str  # the arithmetic, for a report
    level: str = ""  # L4: the level that pays it, as the ledger names it
    table: str = ""  # V2: the other table it is paid at ("": the round's own)
    hit: int | None = None  # V1: the winning seat whose hand earned an envy bonus


# V2: another table's locked round, as the ledger shows it: its bets, its forfeited seats.
OtherRounds = Mapping[str, tuple[Mapping[int, int], frozenset[int]]]


@dataclass(frozen=True, slots=True)
class Outcome:
    awards: tuple[Award, ...]  # in the order they are paid (S1, S2, S5)
    refills: Mapping[str, Funding]  # S8, L3: by level as the ledger names it, what refilled it
    config: Config  # in force after the round (C7)
    house: Fraction  # what the house advanced in the round (S7, S8)

    @property
    def refill(self) -> Funding:
        """S8: what topped the main pot up to its base (in a group without levels)."""
        return self.refills.get("", ())


def take(
    config: Config, balances: dict[str, Fraction], amount: Fraction, level: Level | None = None
) -> Funding:
    """S7: a prize from its level's pot (the main pot), then that level's reserves in their
    order, then the house (L2)."""
    spec = level or config.level(None)
    return _draw(balances, (spec.pot, *spec.reserves), amount)


def _draw(balances: dict[str, Fraction], pots: Iterable[str], amount: Fraction) -> Funding:
    """``amount`` drawn from ``pots`` in order, as far as each holds, and the rest from the
    house: where each part came from."""
    funded: list[tuple[str, Fraction]] = []
    for pot in pots:
        part = min(balances.get(pot, Fraction(0)), amount)
        if part > 0:
            balances[pot] -= part
            amount -= part
            funded.append((f"pot:{pot}", part))
    if amount > 0:
        funded.append(("house", amount))
    return tuple(funded)


def winners(table: Paytable, dealt: Dealt) -> dict[str, list[int]]:
    """Per hand the paytable pays, the seats holding it, lowest first (P3: the own cards and the
    community cards; E2, E3: not a forfeited seat; E4: the dealer's hand plays no part)."""
    evaluate = HANDS[GAMES[dealt.game].evaluator]
    found: dict[str, list[int]] = {}
    held = dealt.held()
    for seat in sorted(held):
        if seat in dealt.forfeited:
            continue
        hand = evaluate([*held[seat], *dealt.community])
        if hand is not None and hand in table.hands:
            found.setdefault(hand, []).append(seat)
    return found


def fixed_prizes(
    config: Config, balances: dict[str, Fraction], dealt: Dealt, won: Mapping[str, list[int]]
) -> list[Award]:
    """S1: each fixed prize on the winner's own bet, smallest prize first, from seat 1 (S5)."""
    awards = []
    for prize in config.paytable.fixed:
        level = config.level(prize.level)
        for seat in won.get(prize.hand, ()):
            amount = prize.multiple * dealt.bets[seat]
            funded = take(config, balances, Fraction(amount), level)
            why = f"{prize.multiple} x bet {dealt.bets[seat]}"
            awards.append(Award(seat, prize.hand, amount, funded, why, config.written(level)))
    return awards


def envy_prizes(
    config: Config,
    balances: dict[str, Fraction],
    dealt: Dealt,
    won: Mapping[str, list[int]],
    others: OtherRounds,
) -> list[Award]:
    """V1-V3: per prize with an envy bonus (paytable order), per winner from the lowest seat,
    the bonus to every other seat with a bet it did not forfeit, from seat 1; when linked, then
    to those of every other table's locked round, by table."""
    awards = []
    for prize in (*config.paytable.fixed, *config.paytable.percent):
        if prize.envy is None:
            continue
        amount, named, linked = prize.envy
        level = config.level(named or prize.level)
        for winner in won.get(prize.hand, ()):
            seats = [("", s) for s in sorted(dealt.bets) if s not in (winner, *dealt.forfeited)]
            if linked:
                seats += [
                    (table, seat)
                    for table, (bets, forfeited) in sorted(others.items())
                    for seat in sorted(bets)
                    if seat not in forfeited
                ]
            for table, seat in seats:
                funded = take(config, balances, Fraction(amount), level)
                why = f"envy of seat {winner}'s {prize.hand}"
                written = config.written(level)
                awards.append(
                    Award(seat, f"ENVY_{prize.hand}", amount, funded, why, written, table, winner)
                )
    return awards


def percentage_prizes(
    config: Config, balances: dict[str, Fraction], dealt: Dealt, won: Mapping[str, list[int]]
) -> list[Award]:
    """S2: each percentage prize on what the main pot holds now, rounded down (S6), in equal
    parts with the whole remainder to the seat nearest seat 1 (S3), each part capped (S4)."""
    awards = []
    for prize in config.paytable.percent:
        seats = won.get(prize.hand)
        if not seats:
            continue
        level = config.level(prize.level)  # L2: a percentage of its own level
        held = balances.get(level.pot, Fraction(0))
        pool = math.floor(held * prize.percent)
        part, remainder = divmod(pool, len(seats))
        why = f"{prize.percent * 100}% of the pot {level.pot} {money_text(held)} = {pool}"
        for seat in seats:
            amount = part + (remainder if seat == seats[0] else 0)
            note = f"{why}, seats {seats}"
            if prize.cap is not None and amount > prize.cap * dealt.bets[seat]:
                amount = prize.cap * dealt.bets[seat]
                note += f", capped at {prize.cap} x bet {dealt.bets[seat]}"
            funded = take(config, balances, Fraction(amount), level)
            awards.append(Award(seat, prize.hand, amount, funded, note, config.written(level)))
    return awards


def top_up(config: Config, balances: dict[str, Fraction], level: Level | None = None) -> Funding:
    """S8, L3: a level's pot (the main pot) back up to its base from its reserves in their
    order, then the house."""
    spec = level or config.level(None)
    missing = spec.base - balances.get(spec.pot, Fraction(0))
    if missing <= 0:
        return ()
    funded = _draw(balances, spec.reserves, missing)
    balances[spec.pot] = spec.base
    return funded


def resolve(
    config: Config,
    pending: Sequence[Config],
    balances: dict[str, Fraction],
    dealt: Dealt,
    others: OtherRounds | None = None,
) -> Outcome:
    """One round's prizes, from the balances before it (updated in place); raises
    :class:`Refused` for a result the rules refuse. ``others``: the other tables' locked
    rounds, for a linked envy bonus (V2)."""
    check_results(dealt)
    won = winners(config.paytable, dealt)
    awards = fixed_prizes(config, balances, dealt, won)
    awards += envy_prizes(config, balances, dealt, won, others or {})
    awards += percentage_prizes(config, balances, dealt, won)
    main = config.level(None)
    jackpot = any(
        p.percent == 1 and won.get(p.hand) and config.level(p.level).pot == MAIN
        for p in config.paytable.percent
    )
    paid_levels = {award.level for award in awards}
    after, refills = config, dict[str, Funding]()
    main_paid = config.written(main) in paid_levels
    if jackpot or (main_paid and balances.get(MAIN, Fraction(0)) < config.base):  # a reset
        after = pending[-1] if pending else config  # C7: the newest pending version
        refills[after.written(after.level(None))] = top_up(after, balances)
    for level in after.levels[1:]:  # L3: each other level that paid, back to its base
        if level.name in paid_levels and balances.get(level.pot, Fraction(0)) < level.base:
            refills[level.name] = top_up(after, balances, level)
    refills = {name: funded for name, funded in refills.items() if funded}
    paid = [f for award in awards for f in award.funded]
    paid += [f for funded in refills.values() for f in funded]
    house = sum((amount for source, amount in paid if source == "house"), Fraction(0))
    return Outcome(tuple(awards), refills, after, house)


def money_text(amount: Fraction) -> str:
    """An exact amount of pesos as a decimal (``"1000.75"``), or a fraction if it is not one."""
    whole, rest = divmod(amount, 1)
    if not rest:
        return str(int(whole))
    scaled = rest * 10**12
    if scaled.denominator != 1:
        return str(amount)
    return f"{int(whole)}.{str(int(scaled)).rjust(12, '0').rstrip('0')}"


def mystery_commitment(trigger: int, salt_hex: str) -> str:
    """X2: the published commitment of a hidden trigger: sha256 of its decimal digits and salt."""
    return hashlib.sha256(str(trigger).encode("ascii") + bytes.fromhex(salt_hex)).hexdigest()
