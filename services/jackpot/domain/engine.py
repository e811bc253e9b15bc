"""The pot group engine: the commands that change a pot group (links, locks, forfeits, results,
configuration versions, the mystery prize) and the queries that read it.

A :class:`PotGroup` is one main pot plus its reserves, shared by linked tables. Each command
validates its whole input first and raises :class:`DomainError` before touching anything, so a
refused input never changes a balance. A command that succeeds mutates the group and returns the
events it caused; rule M2 is checked exactly after every command (:meth:`check_conservation`).
How a group is written down and rebuilt from its ledger is :mod:`jackpot.domain.group_persistence`;
how a locked round's cards and winners are read, :mod:`jackpot.domain.round_reading`; the
state's shape, :mod:`jackpot.domain.group_state`.

How money moves is beside it: the commission and the pots' shares of each lock in
:mod:`jackpot.domain.contributions` (C1-C5), the prizes, reseeds and a configuration's activation
of a resolved round in :mod:`jackpot.domain.round_resolution` (S1-S9, L, V), in the order the
rules give.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from jackpot.domain import contributions, group_persistence, round_resolution
from jackpot.domain.cards import (
    GAME_RULES,
    Game,
    parse_game,
)
from jackpot.domain.config import MAIN, PotGroupConfig
from jackpot.domain.errors import ConservationError, DomainError, Reason
from jackpot.domain.events import (
    BetsCollected,
    ConfigActivated,
    ConfigProposed,
    Event,
    MysteryCommitted,
    PotGroupOpened,
    SeatForfeited,
    TableLinked,
    TableUnlinked,
    Transfer,
)
from jackpot.domain.group_state import REMEMBERED_AWARDS, LinkedTable, LockedRound, MysteryState
from jackpot.domain.level_figures import transfer_levels
from jackpot.domain.money import MINOR_PER_PESO, PPM, floor_pesos
from jackpot.domain.mystery import TriggerSource, commitment, pay_mystery, secure_trigger
from jackpot.domain.round_reading import validated_round
from jackpot.domain.round_reading import winners as round_winners
from jackpot.domain.studio import check_no_envy, check_studio_link

FORFEIT_REASONS = ("FOLD", "CARD_EXCHANGE")


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
        self.allocation = contributions.allocation(config)

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
                transfer_levels(config, transfers),
            )
        ]
        events.extend(group.draw_mystery())
        group.check_conservation()
        return group, events

    def snapshot(self, *, public: bool = False, apart: Collection[str] = ()) -> bytes:
        """The whole state as canonical JSON bytes; :meth:`from_snapshot` restores it exactly
        (``public``: without the hidden mystery trigger, X2; ``apart``: tables whose locked
        round is written apart). See :mod:`.group_persistence`."""
        return group_persistence.snapshot(self, public=public, apart=apart)

    @classmethod
    def from_snapshot(
        cls,
        data: bytes,
        trigger_source: TriggerSource = secure_trigger,
        apart: Mapping[str, bytes] | None = None,
    ) -> PotGroup:
        return group_persistence.from_snapshot(cls, data, trigger_source, apart)

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
        studio_seats: int = 0,
    ) -> list[Event]:
        """Link a table; its bet limits and credit value must equal the group's (E1), a studio
        table's too (O6). A studio table (``studio_seats`` > 0) has that many seats and one shared
        hand (O1, O8)."""
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
        check_studio_link(table_id, game, studio_seats, self.config.paytable)
        existing = self.tables.get(table_id)
        if existing is not None:
            _check_relink(existing, game, studio_seats, locked=table_id in self.locked)
        self.tables[table_id] = LinkedTable(table_id, game, site, studio_seats)
        return [TableLinked(self.group_id, table_id, game.value, site, studio_seats)]

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
            table.check_seat(seat)
            if bet <= 0:
                raise DomainError(
                    Reason.BET_OUT_OF_LIMITS, f"seat {seat} bet {bet} is not positive"
                )
        self.locked[table_id] = LockedRound(round_id, dict(sorted(bets.items())))

    # ---------------------------------------------------------------------- contributions (C)

    def lock_round(
        self,
        table_id: str,
        round_id: str,
        bets: Mapping[int, int],
        players: Mapping[int, str] | None = None,
    ) -> list[Event]:
        """The dealer locked the round: collect its valid bets and allocate them (C1-C5); a
        studio round names each seat's ``players`` (O1: whose wallet a prize goes to)."""
        table = self._table(table_id)
        self._check_can_lock(table_id, round_id)
        total = contributions.checked_total(self.config, table, bets)
        named = _players(table, bets, players or {})
        ordered = tuple(sorted(bets.items()))
        self.locked[table_id] = LockedRound(round_id, dict(ordered), players=dict(named))
        if total == 0:
            return [BetsCollected(self.group_id, table_id, round_id, (), 0, 0, (), (), ())]

        commission = total * self.config.commission_ppm * PPM
        # a commission of 0 % (C2) moves nothing: no transfer of nothing on the ledger (L1)
        transfers: list[Transfer] = [("bets", "commission", commission)] if commission else []
        overflow: list[tuple[str, str, int]] = []
        increments, mystery_winner = contributions.contribute(self, total, ordered, overflow)
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
                transfer_levels(self.config, transfers),
                named,
            )
        ]
        if mystery_winner is not None:
            events.extend(pay_mystery(self, table_id, round_id, mystery_winner))
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

    # ------------------------------------------------------------------------ forfeits (E2, E3)

    def forfeit(self, table_id: str, round_id: str, seat: int, reason: str) -> list[Event]:
        """A seat folded or exchanged cards: it keeps no right to a prize; its bet stays (C6; a
        studio table's player folds the same way, O5)."""
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
        table.check_seat(seat)
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
        shared_hand: Sequence[str] = (),
    ) -> list[Event]:
        """Resolve a locked round's winners and settle it. Refused whole on any device error.

        The steps, in the order of the rules: validate the hands (nothing changes if refused),
        find the winners, then pay and settle them as :mod:`.round_resolution` says (S1-S9).
        """
        table = self._table(table_id)
        locked = self._locked(table_id, round_id)
        resolving = validated_round(table, locked, hands, community, shared_hand)
        return round_resolution.resolve(
            self, resolving, round_winners(self.config.paytable, resolving)
        )

    def remember_award(self, award: dict[str, Any]) -> None:
        """Keep ``award`` among the last ``REMEMBERED_AWARDS`` (what GetPotGroup shows)."""
        self.last_awards.append(award)
        del self.last_awards[:-REMEMBERED_AWARDS]

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
        check_no_envy(  # O8: no envy bonus beside a studio table
            config.paytable, (t for t, linked in self.tables.items() if linked.studio_seats)
        )
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

    def activate_pending(self) -> list[Event]:
        """At a reset (C7): the newest pending configuration takes effect, and a new hidden
        trigger is drawn if its mystery range changed (X2)."""
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
        self.allocation = contributions.allocation(config)
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


def _check_relink(existing: LinkedTable, game: Game, studio_seats: int, *, locked: bool) -> None:
    """A table linked again keeps its game and kind (land or studio, O1); a studio table's
    seats do not shrink under a locked round's bets."""
    if (existing.game, bool(existing.studio_seats)) != (game, bool(studio_seats)):
        kind = "a studio table" if existing.studio_seats else "a land table"
        raise DomainError(
            Reason.INVALID_STATE,
            f"table {existing.table_id} is already linked as {kind} of {existing.game.value}",
        )
    if locked and studio_seats < existing.seats:
        raise DomainError(
            Reason.INVALID_STATE,
            f"studio table {existing.table_id} has a round locked; its seats cannot shrink now",
        )


def _players(
    table: LinkedTable, bets: Mapping[int, int], players: Mapping[int, str]
) -> tuple[tuple[int, str], ...]:
    """O1: the player of each bet of a studio round that names one (the gateway requires it of
    the platform; the rules do not need it), by seat; a land table's round names none."""
    if players and not table.studio_seats:
        raise DomainError(Reason.MALFORMED, f"land table {table.table_id} names no players")
    return tuple((seat, players[seat]) for seat in sorted(bets) if players.get(seat))


def _opening_bases(config: PotGroupConfig) -> dict[str, int]:
    """C4, L1: each level's pot opens at its base (a one-level group: the main pot alone)."""
    return {MAIN: config.base, **{level.pot: level.base for level in config.other_levels}}
