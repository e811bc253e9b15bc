"""The pot group engine: contributions, round resolution, reseeding, configuration versions.

A :class:`PotGroup` is one main pot plus its reserves, shared by linked tables. Each command
validates its whole input first and raises :class:`DomainError` before touching anything, so a
refused input never changes a balance. A command that succeeds mutates the group and returns the
events it caused; rule M2 is checked exactly after every command (:meth:`check_conservation`).
How a group is written down and rebuilt from its ledger is :mod:`jackpot.domain.group_persistence`;
how a locked round's cards and winners are read, :mod:`jackpot.domain.round_reading`.

Order of resolution within one round (rules S1-S8), all amounts exact:

1. fixed prizes, smaller multiples first, then by seat; each is the winner's bet times the
   multiple, taken from the main pot; a shortfall comes from the reserves in configured order,
   then the house (S7);
2. percentage prizes, smaller percentages first, each computed on what the main pot holds then,
   floored to whole pesos (S6), split equally with the whole remainder to the lowest seat (S3),
   each share capped at its multiple of the bet, the excess staying in the pot (S4);
3. if the round was a reset (a prize of 100 % of the main pot was paid, or a prize left the main
   pot below its base), a pending configuration takes effect now (C7), and then the main pot is
   topped up to the (new) base from the reserves, then the house (S8).

Levels and envy (docs/rules.md, L and V: operator options beside the SCJ rules): a group may pay
from several levels, each a pot with its own base and reserves. Each prize is paid from its level
(L2): a fixed prize or a shortfall from that level's pot, then its reserves, then the house (S7);
a percentage on what that level's pot holds (S2, S6). Envy bonuses (V1-V3) are fixed prizes paid
after the multiples of the bet and before any percentage. After the prizes, every level that paid
one and is below its base is topped up from its own reserves, then the house (L3); only the main
level's reset activates a pending configuration (C7). A group with one level resolves exactly as
it did before levels existed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jackpot.domain import group_persistence
from jackpot.domain.cards import (
    GAME_RULES,
    Game,
    check_seat,
    parse_game,
)
from jackpot.domain.config import MAIN, LevelSpec, PotGroupConfig
from jackpot.domain.errors import ConservationError, DomainError, Reason
from jackpot.domain.events import (
    BetsCollected,
    ConfigActivated,
    ConfigProposed,
    EnvyHit,
    Event,
    MysteryAwarded,
    MysteryCommitted,
    PotGroupOpened,
    PotReseeded,
    PrizeAwarded,
    RoundSettled,
    SeatForfeited,
    TableLinked,
    TableUnlinked,
    Transfer,
)
from jackpot.domain.group_state import (
    SETTLED_ROUNDS_REMEMBERED,
    LinkedTable,
    LockedRound,
    MysteryState,
)
from jackpot.domain.money import (
    MINOR_PER_PESO,
    PPM,
    floor_pesos,
    percent_of_floored,
    pesos,
    split_equally,
)
from jackpot.domain.mystery import TriggerSource, commitment, secure_trigger
from jackpot.domain.round_reading import (
    Payee,
    ResolvingRound,
    envy_payees,
    seat_payee,
    validated_round,
)
from jackpot.domain.round_reading import winners as round_winners

FORFEIT_REASONS = ("FOLD", "CARD_EXCHANGE")


@dataclass(frozen=True, slots=True)
class Award:
    """One resolved prize, for callers that do not need the whole event."""

    seat: int
    prize: str
    amount_pesos: int


@dataclass(slots=True)
class RoundAwards:
    """What one round's resolution has paid so far; each prize step adds to it."""

    events: list[Event] = field(default_factory=list)  # PrizeAwarded, in the order paid
    award_ids: list[str] = field(default_factory=list)
    jackpot_hit: bool = False  # a prize of 100 % of the main pot was paid: a reset (C7, S8)
    levels_paid: set[str] = field(default_factory=set)  # L3: the levels that paid a prize


@dataclass(frozen=True, slots=True)
class LevelFigures:
    """One level as meters, signs, reports and metrics show it (L1, L4); money in minor units
    but ``sign_value``, whole pesos floored (M3)."""

    name: str
    label: str
    pot: str
    balance: int
    sign_value: int
    base: int
    reserves: int  # what its reserves hold together (S7, L3)
    share_ppm: int  # its pot's part of what the commission leaves (C3)
    ceiling: int | None  # its pot's ceiling (C5)


class PotGroup:
    """One pot group's exact state and the commands that change it."""

    def __init__(
        self,
        group_id: str,
        config: PotGroupConfig,
        trigger_source: TriggerSource = secure_trigger,
    ) -> None:
        self.group_id = group_id
        self.config = config
        self.pending: list[tuple[PotGroupConfig, str, str]] = []  # (config, who, why)
        self.balances: dict[str, int] = {pot.name: 0 for pot in config.pots}
        self.collected = 0
        self.commission = 0
        self.awarded = 0
        self.house_advance = 0
        self.overflow = 0
        self.tables: dict[str, LinkedTable] = {}
        self.locked: dict[str, LockedRound] = {}
        self.settled: dict[str, list[str]] = {}  # table -> its most recent settled round ids
        self.hits: dict[str, int] = {}
        self.wins: dict[str, int] = {}  # prize -> whole pesos awarded
        self.last_awards: list[dict[str, Any]] = []
        self.mystery: MysteryState | None = None
        self._trigger_source = trigger_source
        self._allocation = _allocation(config)

    # ------------------------------------------------------------------ creation and snapshots

    @classmethod
    def open(
        cls,
        group_id: str,
        config: PotGroupConfig,
        balances: Mapping[str, int] | None = None,
        trigger_source: TriggerSource = secure_trigger,
        *,
        changed_by: str = "",
        reason: str = "",
    ) -> tuple[PotGroup, list[Event]]:
        """A new group; the main pot starts at its base (C4) and every other level's pot at that
        level's (L1), or all at the given opening balances.

        Opening money is advanced by the house, so rule M2 holds from the first event. The event
        carries the first configuration and who asked, so the ledger alone states it (C7, D4).
        """
        group = cls(group_id, config, trigger_source)
        opening = dict(balances) if balances is not None else _opening_bases(config)
        unknown = set(opening) - set(group.balances)
        if unknown:
            raise DomainError(
                Reason.INVALID_CONFIG, f"opening balances name unknown pots {unknown}"
            )
        transfers: list[Transfer] = []
        for pot, amount in opening.items():
            if amount < 0:
                raise DomainError(Reason.INVALID_CONFIG, f"opening balance of {pot} is negative")
            if amount:
                group.balances[pot] += amount
                group.house_advance += amount
                transfers.append(("house", f"pot:{pot}", amount))
        events: list[Event] = [
            PotGroupOpened(
                group_id,
                config.version,
                tuple(transfers),
                config.to_config(),
                changed_by,
                reason,
                group._transfer_levels(transfers),
            )
        ]
        events.extend(group.draw_mystery())
        group.check_conservation()
        return group, events

    def snapshot(self, *, public: bool = False) -> bytes:
        """The whole state as canonical JSON bytes; :meth:`from_snapshot` restores it exactly
        (``public``: without the hidden mystery trigger, X2). See :mod:`.group_persistence`."""
        return group_persistence.snapshot(self, public=public)

    @classmethod
    def from_snapshot(cls, data: bytes, trigger_source: TriggerSource = secure_trigger) -> PotGroup:
        return group_persistence.from_snapshot(cls, data, trigger_source)

    @classmethod
    def from_ledger(
        cls,
        group_id: str,
        entries: Sequence[Mapping[str, Any]],
        trigger_source: TriggerSource = secure_trigger,
        start: bytes | None = None,
    ) -> tuple[PotGroup, list[Event]]:
        """The group rebuilt from its ledger alone (R14, D4), when its stored state is lost;
        from ``start`` (a checkpoint's public snapshot) when given. See
        :func:`.group_persistence.from_ledger`."""
        return group_persistence.from_ledger(cls, group_id, entries, trigger_source, start)

    # ------------------------------------------------------------------------------ queries

    @property
    def main(self) -> int:
        return self.balances[MAIN]

    @property
    def sign_value(self) -> int:
        """What a sign shows: the main pot floored to whole pesos, never more than it holds (M3)."""
        return floor_pesos(self.balances[MAIN])

    def level_figures(self) -> tuple[LevelFigures, ...]:
        """Every level's figures, the main level first (L1, L4, M3); one for a one-level group."""
        shares = {pot.name: pot for pot in self.config.pots}
        return tuple(
            LevelFigures(
                name=level.name,
                label=level.label,
                pot=level.pot,
                balance=self.balances[level.pot],
                sign_value=floor_pesos(self.balances[level.pot]),
                base=level.base,
                reserves=sum(self.balances[pot] for pot in level.reserve_order),
                share_ppm=shares[level.pot].share_ppm,
                ceiling=shares[level.pot].ceiling,
            )
            for level in self.config.levels
        )

    def level_sign_values(self) -> dict[str, int]:
        """Level name -> what its sign shows: its pot floored to whole pesos (M3, L4)."""
        return {level.name: floor_pesos(self.balances[level.pot]) for level in self.config.levels}

    def level_increments(self, collected: BetsCollected) -> dict[str, int]:
        """Level name -> minor units one lock credited to the level's pot, overflow included
        (C5, L4); a pot of no level (a reserve, the mystery pot) is not counted."""
        pots = {level.pot: level.name for level in self.config.levels}
        increments = dict.fromkeys(pots.values(), 0)
        for pot, amount in collected.increments:
            if pot in pots:
                increments[pots[pot]] += amount
        return increments

    def _transfer_levels(self, transfers: Sequence[Transfer]) -> tuple[str, ...]:
        """L4: the level of each transfer's pot (``""`` for none); empty in a one-level group,
        whose events are written as they were before levels existed."""
        if not self.config.has_levels:
            return ()
        levels = []
        for source, target, _ in transfers:
            pot = target if target.startswith("pot:") else source
            levels.append(
                self.config.level_of_pot(pot.removeprefix("pot:")) if pot.startswith("pot:") else ""
            )
        return tuple(levels)

    def check_conservation(self) -> None:
        """Rule M2, exact: collected + house advances == commission + pots + awarded."""
        balances = self.balances.values()
        left = self.collected + self.house_advance
        right = self.commission + sum(balances) + self.awarded
        if left != right:
            raise ConservationError(
                f"M2 broken in {self.group_id}: collected {self.collected} + house "
                f"{self.house_advance} != commission {self.commission} + pots "
                f"{sum(self.balances.values())} + awarded {self.awarded} (minor units)"
            )
        if min(balances) < 0:
            negative = {pot: b for pot, b in self.balances.items() if b < 0}
            raise ConservationError(f"pots went negative in {self.group_id}: {negative}")

    # ----------------------------------------------------------------------- table links (E1)

    def link_table(
        self,
        table_id: str,
        game: str | Game,
        site: str = "",
        *,
        min_bet: int,
        max_bet: int,
        credit_value: int,
    ) -> list[Event]:
        """Link a table; its bet limits and credit value must equal the group's (E1)."""
        game = game if isinstance(game, Game) else parse_game(game)
        limits = (min_bet, max_bet, credit_value)
        group_limits = (self.config.min_bet, self.config.max_bet, self.config.credit_value)
        if limits != group_limits:
            raise DomainError(
                Reason.INVALID_CONFIG,
                f"table {table_id} has bet limits {min_bet}-{max_bet} and credit value "
                f"{credit_value}; pot group {self.group_id} has {group_limits[0]}-"
                f"{group_limits[1]} and {group_limits[2]}: linked tables must match (rule E1)",
            )
        if game not in self.config.paytable.games:
            raise DomainError(
                Reason.UNKNOWN_GAME,
                f"paytable {self.config.paytable.name} does not pay {game.value} hands",
            )
        existing = self.tables.get(table_id)
        if existing is not None and existing.game != game:
            raise DomainError(
                Reason.INVALID_STATE, f"table {table_id} is already linked as {existing.game.value}"
            )
        self.tables[table_id] = LinkedTable(table_id, game, site)
        return [TableLinked(self.group_id, table_id, game.value, site)]

    def unlink_table(self, table_id: str) -> list[Event]:
        self._table(table_id)
        if table_id in self.locked:
            raise DomainError(
                Reason.INVALID_STATE,
                f"table {table_id} has round {self.locked[table_id].round_id} locked; "
                "settle it before unlinking",
            )
        del self.tables[table_id]
        return [TableUnlinked(self.group_id, table_id)]

    def adopt_locked_round(self, table_id: str, round_id: str, bets: Mapping[int, int]) -> None:
        """Take over a round that was locked and collected before this state was built.

        Its bets are already in the balances, so nothing is collected: used when a pot's state is
        imported as it stands at resolution time (scenario files, migration from another system).
        """
        table = self._table(table_id)
        if table_id in self.locked:
            raise DomainError(Reason.INVALID_STATE, f"table {table_id} already has a locked round")
        for seat, bet in bets.items():
            check_seat(table.game, seat)
            if bet <= 0:
                raise DomainError(
                    Reason.BET_OUT_OF_LIMITS, f"seat {seat} bet {bet} is not positive"
                )
        self.locked[table_id] = LockedRound(round_id, dict(sorted(bets.items())))

    # ---------------------------------------------------------------------- contributions (C)

    def lock_round(self, table_id: str, round_id: str, bets: Mapping[int, int]) -> list[Event]:
        """The dealer locked the round: collect its valid bets and allocate them (C1-C5)."""
        table = self._table(table_id)
        self._check_can_lock(table_id, round_id)
        total = self._checked_total(table, bets)
        ordered = tuple(sorted(bets.items()))
        self.locked[table_id] = LockedRound(round_id, dict(ordered))
        if total == 0:
            return [BetsCollected(self.group_id, table_id, round_id, (), 0, 0, (), (), ())]

        commission = total * self.config.commission_ppm * PPM
        transfers: list[Transfer] = [("bets", "commission", commission)]
        overflow: list[tuple[str, str, int]] = []
        increments, mystery_winner = self._contribute(total, ordered, overflow)
        transfers += [("bets", f"pot:{pot}", amount) for pot, amount in increments]
        self.collected += total * MINOR_PER_PESO
        self.commission += commission
        events: list[Event] = [
            BetsCollected(
                self.group_id,
                table_id,
                round_id,
                ordered,
                total,
                commission,
                tuple(increments),
                tuple(overflow),
                tuple(transfers),
                self._transfer_levels(transfers),
            )
        ]
        if mystery_winner is not None:
            events.extend(self._pay_mystery(table_id, round_id, mystery_winner))
        self.check_conservation()
        return events

    def _check_can_lock(self, table_id: str, round_id: str) -> None:
        """One locked round per table at a time, and a settled round never locks again."""
        if table_id in self.locked:
            raise DomainError(
                Reason.INVALID_STATE,
                f"table {table_id} still has round {self.locked[table_id].round_id} locked; "
                f"round {round_id} cannot lock before it is settled",
            )
        if round_id in self.settled.get(table_id, ()):
            raise DomainError(
                Reason.INVALID_STATE,
                f"round {round_id} of table {table_id} is already settled: its bets were collected",
            )

    def _checked_total(self, table: LinkedTable, bets: Mapping[int, int]) -> int:
        """The whole pesos bet; each bet whole credits within the limits (E1, M1)."""
        config = self.config
        seats = GAME_RULES[table.game].seats
        total = 0
        for seat, bet in bets.items():
            if not 1 <= seat <= seats:
                check_seat(table.game, seat)
            if type(bet) is not int:  # M1: whole pesos only, never a float
                raise DomainError(Reason.MALFORMED, f"seat {seat} bet {bet!r} is not whole pesos")
            if not config.min_bet <= bet <= config.max_bet or bet % config.credit_value:
                raise DomainError(
                    Reason.BET_OUT_OF_LIMITS,
                    f"seat {seat} bet {bet} is outside {config.min_bet}-{config.max_bet} or not "
                    f"whole credits of {config.credit_value} (rule E1)",
                )
            total += bet
        return total

    def _contribute(
        self,
        total: int,
        ordered: tuple[tuple[int, int], ...],
        overflow: list[tuple[str, str, int]],
    ) -> tuple[list[tuple[str, int]], int | None]:
        """Credit the pots (C3, C5): the increments, and the seat whose bet took the mystery pot
        across its hidden trigger (X2), if one did."""
        mystery = self.config.mystery
        if mystery is None:
            return self._allocate(total, overflow), None
        # X2: allocate bet by bet (seat 1 first) to find the bet whose contribution, overflow
        # included, takes the mystery pot across its hidden trigger.
        credited: dict[str, int] = {}
        trigger = self._mystery_trigger()
        mystery_winner = None
        for seat, bet in ordered:
            for pot, amount in self._allocate(bet, overflow):
                credited[pot] = credited.get(pot, 0) + amount
            if mystery_winner is None and self.balances[mystery.pot] >= trigger:
                mystery_winner = seat
        return list(credited.items()), mystery_winner

    def _allocate(
        self, pesos_collected: int, overflow: list[tuple[str, str, int]]
    ) -> list[tuple[str, int]]:
        """Credit each pot its exact share of ``pesos_collected`` after commission (C3, C5)."""
        increments: list[tuple[str, int]] = []
        balances = self.balances
        for pot, multiplier, ceiling, overflow_to in self._allocation:
            amount = pesos_collected * multiplier
            if ceiling is None or balances[pot] + amount <= ceiling:
                balances[pot] += amount
                increments.append((pot, amount))
            else:
                increments.extend(self._credit(pot, amount, ceiling, overflow_to, overflow))
        return increments

    def _credit(
        self,
        pot: str,
        amount: int,
        ceiling: int | None,
        overflow_to: str | None,
        overflow: list[tuple[str, str, int]],
    ) -> list[tuple[str, int]]:
        """Credit a pot; above its ceiling the excess goes down the overflow chain (C5)."""
        credited: list[tuple[str, int]] = []
        while True:
            balance = self.balances[pot]
            if ceiling is None or overflow_to is None or balance + amount <= ceiling:
                self.balances[pot] = balance + amount
                credited.append((pot, amount))
                return credited
            kept = max(ceiling - balance, 0)
            if kept:
                self.balances[pot] = balance + kept
                credited.append((pot, kept))
            excess = amount - kept
            overflow.append((pot, overflow_to, excess))
            self.overflow += excess
            spec = next(p for p in self.config.pots if p.name == overflow_to)
            pot, amount, ceiling, overflow_to = overflow_to, excess, spec.ceiling, spec.overflow_to

    # ------------------------------------------------------------------------ forfeits (E2, E3)

    def forfeit(self, table_id: str, round_id: str, seat: int, reason: str) -> list[Event]:
        """A seat folded or exchanged cards: it keeps no right to a prize; its bet stays (C6)."""
        table = self._table(table_id)
        locked = self._locked(table_id, round_id)
        rules = GAME_RULES[table.game]
        if reason not in FORFEIT_REASONS:
            raise DomainError(Reason.MALFORMED, f"unknown forfeit reason {reason!r}")
        if (reason == "FOLD" and not rules.can_fold) or (
            reason == "CARD_EXCHANGE" and not rules.can_exchange
        ):
            raise DomainError(
                Reason.INVALID_STATE, f"{table.game.value} has no {reason.lower()} (rules E2, E3)"
            )
        check_seat(table.game, seat)
        if seat not in locked.bets:
            raise DomainError(Reason.NO_BET, f"seat {seat} has no progressive bet in {round_id}")
        locked.forfeited[seat] = reason
        return [SeatForfeited(self.group_id, table_id, round_id, seat, reason)]

    # -------------------------------------------------------------------- resolution (S1-S9)

    def resolve_round(
        self,
        table_id: str,
        round_id: str,
        hands: Mapping[int, Sequence[str]],
        community: Sequence[str] = (),
    ) -> list[Event]:
        """Resolve a locked round's winners and settle it. Refused whole on any device error.

        The steps, in the order of the rules: validate the hands (nothing changes if refused),
        find the winners, pay the fixed prizes (S1), then the percentage prizes (S2-S4, S6), then
        settle (C7, S8). Each prize step adds to one :class:`RoundAwards`.
        """
        table = self._table(table_id)
        resolving = validated_round(table, self._locked(table_id, round_id), hands, community)
        winners = round_winners(self.config.paytable, resolving)
        awards = RoundAwards()
        self._pay_fixed_prizes(resolving, winners, awards)
        self._pay_envy(resolving, winners, awards)
        self._pay_percentage_prizes(resolving, winners, awards)
        return self._settle(resolving, awards)

    def _pay_fixed_prizes(
        self, resolving: ResolvingRound, winners: Mapping[str, list[int]], awards: RoundAwards
    ) -> None:
        """S1: fixed prizes, smaller multiples first, then by seat: the bet times the multiple."""
        paytable = self.config.paytable
        bets = resolving.locked.bets
        for prize_name in paytable.fixed_order:
            seats = winners.get(prize_name)
            if not seats:
                continue
            prize = paytable.prizes[prize_name]
            level = self.config.level(prize.level)  # L2
            for seat in seats:
                amount = prize.multiple * bets[seat]
                self._pay(awards, seat_payee(resolving, seat), prize_name, amount, level)

    def _pay_envy(
        self, resolving: ResolvingRound, winners: Mapping[str, list[int]], awards: RoundAwards
    ) -> None:
        """V1-V3: for each winner of a prize with an envy bonus (in the paytable's order, then
        from the lowest winning seat), every other eligible seat is paid the bonus, from seat 1
        of the winner's table, then (V2, when linked) of each other table in the order of its id.
        """
        paytable = self.config.paytable
        for prize_name in paytable.fixed_order + paytable.percent_order:
            prize = paytable.prizes[prize_name]
            envy = prize.envy
            if envy is None:
                continue
            level = self.config.level(envy.level or prize.level)
            for winner in winners.get(prize_name, ()):
                hit: EnvyHit = (resolving.table_id, resolving.round_id, winner)
                cards = seat_payee(resolving, winner).cards
                for paid in envy_payees(resolving, winner, cards, self.locked, linked=envy.linked):
                    prize_paid = f"ENVY_{prize_name}"
                    self._pay(awards, paid, prize_paid, envy.amount_pesos, level, hit)

    def _pay_percentage_prizes(
        self, resolving: ResolvingRound, winners: Mapping[str, list[int]], awards: RoundAwards
    ) -> None:
        """S2: percentage prizes, smaller first, each on what the main pot holds then."""
        paytable = self.config.paytable
        bets = resolving.locked.bets
        for prize_name in paytable.percent_order:
            seats = winners.get(prize_name)
            if not seats:
                continue
            prize = paytable.prizes[prize_name]
            level = self.config.level(prize.level)  # L2: a percentage of its own level
            pool = percent_of_floored(self.balances[level.pot], prize.percent_ppm)  # S6
            shares = split_equally(pool, seats)  # S3
            for seat in seats:
                amount = shares[seat]
                if prize.cap_multiple is not None:  # S4: the excess stays in the level's pot
                    amount = min(amount, prize.cap_multiple * bets[seat])
                self._pay(awards, seat_payee(resolving, seat), prize_name, amount, level)
            if level.pot == MAIN:
                awards.jackpot_hit = awards.jackpot_hit or prize.percent_ppm == PPM

    def _pay(
        self,
        awards: RoundAwards,
        payee: Payee,
        prize: str,
        amount_pesos: int,
        level: LevelSpec,
        envy_of: EnvyHit | None = None,
    ) -> None:
        """Pay one prize from its level (taken as S7 says), count it in the group's totals and in
        ``awards``; an envy bonus (V1) names the hit it is paid for."""
        award_id = f"{self.group_id}/{payee.table_id}/{payee.round_id}/{payee.seat}/{prize}"
        if envy_of is not None:
            award_id += f"/{envy_of[0]}/{envy_of[1]}/{envy_of[2]}"
        transfers = self._take(pesos(amount_pesos), level)
        self.awarded += pesos(amount_pesos)
        self.hits[prize] = self.hits.get(prize, 0) + 1
        self.wins[prize] = self.wins.get(prize, 0) + amount_pesos
        named = self.config.has_levels  # L4: a one-level group's events are as they were
        award = PrizeAwarded(
            award_id,
            self.group_id,
            payee.table_id,
            payee.round_id,
            payee.seat,
            prize,
            payee.bet_pesos,
            amount_pesos,
            payee.cards,
            transfers,
            level.name if named else "",
            (level.name,) * len(transfers) if named else (),
            envy_of,
        )
        self.remember_award(award.to_dict())
        awards.events.append(award)
        awards.award_ids.append(award_id)
        awards.levels_paid.add(level.name)

    def _settle(self, resolving: ResolvingRound, awards: RoundAwards) -> list[Event]:
        """Unlock the round; after a reset, the pending configuration (C7), then the base (S8)."""
        table_id, round_id = resolving.table_id, resolving.round_id
        del self.locked[table_id]
        recent = self.settled.setdefault(table_id, [])
        recent.append(round_id)
        del recent[:-SETTLED_ROUNDS_REMEMBERED]
        events = awards.events
        main_paid = self.config.main_level_name in awards.levels_paid
        below_base = main_paid and self.balances[MAIN] < self.config.base
        if awards.jackpot_hit or below_base:  # a reset of the main pot
            events.extend(self._activate_pending())
            if self.balances[MAIN] < self.config.base:  # S8
                events.append(self._reseed(table_id, round_id, self.config.levels[0]))
        for level in self.config.other_levels:  # L3: each level that paid, back to its base
            if level.name in awards.levels_paid and self.balances[level.pot] < level.base:
                events.append(self._reseed(table_id, round_id, level))
        events.append(
            RoundSettled(
                self.group_id, table_id, round_id, tuple(awards.award_ids), self.balances[MAIN]
            )
        )
        self.check_conservation()
        return events

    def _take(self, amount: int, level: LevelSpec) -> tuple[Transfer, ...]:
        """Take a prize from its level's pot, then that level's reserves in order, then the
        house (S7, per level: L2)."""
        transfers: list[Transfer] = []
        for pot in (level.pot, *level.reserve_order):
            if amount == 0:
                break
            taken = min(self.balances[pot], amount)
            if taken:
                self.balances[pot] -= taken
                amount -= taken
                transfers.append((f"pot:{pot}", "awards", taken))
        if amount:
            self.house_advance += amount
            transfers.append(("house", "awards", amount))
        return tuple(transfers)

    def _reseed(self, table_id: str, round_id: str, level: LevelSpec) -> PotReseeded:
        """Top a level's pot up to its base from its reserves in order, then the house (S8; L3
        for a level other than the main one)."""
        missing = level.base - self.balances[level.pot]
        transfers: list[Transfer] = []
        for pot in level.reserve_order:
            if missing == 0:
                break
            taken = min(self.balances[pot], missing)
            if taken:
                self.balances[pot] -= taken
                missing -= taken
                transfers.append((f"pot:{pot}", f"pot:{level.pot}", taken))
        if missing:
            self.house_advance += missing
            transfers.append(("house", f"pot:{level.pot}", missing))
        self.balances[level.pot] = level.base
        named = self.config.has_levels
        return PotReseeded(
            self.group_id,
            table_id,
            round_id,
            level.base,
            tuple(transfers),
            level.name if named else "",
            (level.name,) * len(transfers) if named else (),
        )

    def remember_award(self, award: dict[str, Any]) -> None:
        """Keep ``award`` among the last 25 (what GetPotGroup shows)."""
        self.last_awards.append(award)
        del self.last_awards[:-25]

    # -------------------------------------------------------------- configuration versions (C7)

    def propose_config(self, config: PotGroupConfig, changed_by: str, reason: str) -> list[Event]:
        """Queue a new configuration version; it takes effect at the next reset, never mid-cycle."""
        latest = self.pending[-1][0] if self.pending else self.config
        if config.version <= latest.version:
            raise DomainError(
                Reason.INVALID_CONFIG,
                f"configuration version {config.version} is not newer than {latest.version}",
            )
        if self.tables and not config.same_limits(self.config):
            raise DomainError(
                Reason.INVALID_CONFIG,
                "a new configuration cannot change bet limits or credit value while tables are "
                "linked (rule E1); unlink them first",
            )
        missing = {t.game for t in self.tables.values()} - config.paytable.games
        if missing:
            names = ", ".join(sorted(g.value for g in missing))
            raise DomainError(Reason.INVALID_CONFIG, f"paytable does not pay linked games {names}")
        if {p.name for p in self.config.pots} - {p.name for p in config.pots}:
            raise DomainError(Reason.INVALID_CONFIG, "a new configuration cannot remove a pot")
        if not changed_by or not reason:
            raise DomainError(
                Reason.INVALID_CONFIG, "a configuration change needs who and why (C7)"
            )
        self.pending.append((config, changed_by, reason))
        return [
            ConfigProposed(self.group_id, config.version, config.to_config(), changed_by, reason)
        ]

    def _activate_pending(self) -> list[Event]:
        if not self.pending:
            return []
        config = self.pending[-1][0]  # the newest version wins; older pending ones never applied
        self.pending.clear()
        previous_mystery = self.config.mystery
        self.adopt_config(config)
        events: list[Event] = [ConfigActivated(self.group_id, config.version, config.to_config())]
        if config.mystery != previous_mystery:  # a new range needs a new hidden trigger (X2)
            events.extend(self.draw_mystery())
        return events

    def adopt_config(self, config: PotGroupConfig) -> None:
        """Make ``config`` the one in force (its new pots start empty); the caller has checked
        it may (C7: at a reset, or as the ledger recorded it)."""
        self.config = config
        self._allocation = _allocation(config)
        for pot in config.pots:
            self.balances.setdefault(pot.name, 0)

    # ---------------------------------------------------------------- mystery prize (X1, X2)

    def draw_mystery(self) -> list[Event]:
        """A new hidden trigger (X2) and the commitment to record for it (none without one)."""
        spec = self.config.mystery
        if spec is None:
            self.mystery = None
            return []
        value, salt = self._trigger_source(spec.min_pesos, spec.max_pesos)
        self.mystery = MysteryState(value, salt, commitment(value, salt))
        return [MysteryCommitted(self.group_id, spec.pot, self.mystery.commitment)]

    def _mystery_trigger(self) -> int:
        state = self.mystery
        assert state is not None
        return pesos(state.trigger_pesos)

    def _pay_mystery(self, table_id: str, round_id: str, winner: int) -> list[Event]:
        """Pay the mystery prize (the trigger value) to the seat whose bet crossed it (X2)."""
        spec = self.config.mystery
        state = self.mystery
        assert spec is not None
        assert state is not None
        trigger = pesos(state.trigger_pesos)
        self.balances[spec.pot] -= trigger
        self.awarded += trigger
        self.hits["MYSTERY"] = self.hits.get("MYSTERY", 0) + 1
        self.wins["MYSTERY"] = self.wins.get("MYSTERY", 0) + state.trigger_pesos
        award = MysteryAwarded(
            f"{self.group_id}/{table_id}/{round_id}/{winner}/MYSTERY",
            self.group_id,
            table_id,
            round_id,
            winner,
            state.trigger_pesos,
            state.trigger_pesos,
            state.salt.hex(),
            state.commitment,
            ((f"pot:{spec.pot}", "awards", trigger),),
            ("",) if self.config.has_levels else (),  # L4: the mystery pot is of no level
        )
        self.remember_award(award.to_dict())
        return [award, *self.draw_mystery()]

    # --------------------------------------------------------------------------- helpers

    def _table(self, table_id: str) -> LinkedTable:
        table = self.tables.get(table_id)
        if table is None:
            raise DomainError(
                Reason.UNKNOWN_TABLE, f"table {table_id} is not linked to pot group {self.group_id}"
            )
        return table

    def _locked(self, table_id: str, round_id: str) -> LockedRound:
        locked = self.locked.get(table_id)
        if locked is None:
            raise DomainError(
                Reason.ROUND_NOT_LOCKED, f"table {table_id} has no locked round ({round_id})"
            )
        if locked.round_id != round_id:
            raise DomainError(
                Reason.INVALID_STATE,
                f"table {table_id} has round {locked.round_id} locked, not {round_id}",
            )
        return locked


def _opening_bases(config: PotGroupConfig) -> dict[str, int]:
    """C4, L1: each level's pot opens at its base (a one-level group: the main pot alone)."""
    return {MAIN: config.base, **{level.pot: level.base for level in config.other_levels}}


def _allocation(config: PotGroupConfig) -> tuple[tuple[str, int, int | None, str | None], ...]:
    """Per pot: minor units credited per whole peso collected, exact (see jackpot.domain.money)."""
    net = PPM - config.commission_ppm
    return tuple(
        (pot.name, net * pot.share_ppm, pot.ceiling, pot.overflow_to)
        for pot in config.pots
        if pot.share_ppm
    )
