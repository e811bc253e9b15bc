"""What every sign shows, per pot group: pure state, fed by pot updates, awards, payouts and the
clock.

Rules: the amount is the pot service's sign value, the main pot floored to whole pesos, and never
more than the main pot holds (M3); a winner banner stays up for a configured time after a hit
(D2), and a prize awaiting a supervisor's approval is shown pending next to the amount until it is
approved, paid or voided (D2, the jackpot lock); a group not heard from for longer than the stale
limit is shown closed, never a stale amount as if live (D5), and comes back by itself with the
next update.

Levels (rules L4, M3, D2; docs/rules.md L and V): a group with several levels shows every level's
label, amount (its pot floored, never more than that pot holds) and last increase; its winner
banner names the level that paid the prize, and gathers the envy bonuses (V1, V2) the hit earned
the other seats (they are paid, and reach the display, before a percentage prize, V3). A one-level
group's sign is what it was before levels existed.

Studio tables (rules O2-O5, issue 39): while a studio table's round is locked and its shared hand
awaited, the group's sign carries that round's bets and what the top prize would pay each of
them now, as the pot computed it; a figure whose parts together would be more than the paying
pot holds is not shown (M3, the same check as the amount's). A group without a studio table's
sign is what it was before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from jackpot.display.pending import PendingLock, PendingPrize, PendingRound, prize_json
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.v1 import common_pb2

TRACES_KEPT = 512  # per group: the lock traces a slow sign may still be owed (then dropped)
# An update that changes only when the group was last heard from (most results, forfeits and
# heartbeats) is pushed to the signs at most this often: pushed each time, they took the signs'
# rate limit from the updates that change the amount, and made those wait (issue 26: about 25 ms
# of every lock's way to the sign at 10 rounds/s).
HEARD_REFRESH_SECONDS = 1.0


EnvyHit = tuple[str, str, int]  # the hit an envy bonus is paid for: (table, round, seat)
# O4: a run of one studio round's prizes of one hand, counted at once: (how many, their total)
StudioCount = tuple[int, int]
ENVY_PREFIX = "ENVY_"


@dataclass(frozen=True, slots=True)
class EnvyPrize:
    """An envy bonus paid to another seat for the banner's hit (V1, V2)."""

    award_id: str
    table_id: str
    seat: int
    prize: str
    amount: int

    def to_json(self) -> dict[str, Any]:
        return prize_json(self)


@dataclass(frozen=True, slots=True)
class Winner:
    table_id: str
    seat: int
    prize: str
    amount: int
    cards: tuple[str, ...]
    award_id: str
    level_label: str = ""  # L4: the label of the level that paid it ("" in a one-level group)
    envy: tuple[EnvyPrize, ...] = ()  # V1: the bonuses the hit earned, as paid so far
    round_id: str = ""  # the hit's round, to gather its envy bonuses (not shown)
    # O3, O4: a studio round's prize, won by many bets at once: how many so far, and their total
    # (0 for a land table's prize, whose banner is its one seat's)
    studio_winners: int = 0
    studio_total: int = 0

    @property
    def hit(self) -> EnvyHit:
        return (self.table_id, self.round_id, self.seat)

    def counted(self, shown: Winner | None, winners: int, total: int) -> Winner:
        """This prize of a studio round, and the ``winners - 1`` like it that follow it (their
        ``total`` with its own), counted into ``shown``, the banner of the same round and prize
        (or, when the banner is another's, a new banner of its own, this prize's seat first)."""
        if shown is None or not shown.studio_winners or shown.prize != self.prize:
            return replace(self, studio_winners=winners, studio_total=total)
        if (shown.table_id, shown.round_id) != (self.table_id, self.round_id):
            return replace(self, studio_winners=winners, studio_total=total)
        return replace(
            shown,
            studio_winners=shown.studio_winners + winners,
            studio_total=shown.studio_total + total,
        )

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "table_id": self.table_id,
            "seat": self.seat,
            "prize": self.prize,
            "amount": self.amount,
            "cards": list(self.cards),
            "award_id": self.award_id,
        }
        if self.level_label:  # L4: only a group with levels names them
            shown["level_label"] = self.level_label
        if self.envy:
            shown["envy"] = [e.to_json() for e in self.envy]
        if self.studio_winners:
            shown["round_id"] = self.round_id
            shown["studio_winners"] = self.studio_winners
            shown["studio_total"] = self.studio_total
        return shown


@dataclass(frozen=True, slots=True)
class SignLevel:
    """One level of a sign (L4): its label, its amount (M3) and its last increase (D2)."""

    name: str
    label: str
    amount: int
    increment: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "amount": self.amount,
            "increment": self.increment,
        }


@dataclass(frozen=True, slots=True)
class LevelReading:
    """One level as a pot update gives it, with what its pot holds (minor units; None unknown)."""

    name: str
    label: str
    sign_value: int
    increment: int
    pot_minor: int | None = None


@dataclass(frozen=True, slots=True)
class StudioRound:
    """A studio round between its lock and its hand: its bets and each bet's part of the top
    prize if the hand hit it now (O3, O4, S3, S4), whole pesos, as the pot sent them."""

    table_id: str
    round_id: str
    bets: int
    bet_total: int
    prize: str
    level: str  # L2: the level that pays it; "" in a one-level group
    multiple: int  # a fixed prize: each bet times this (O3); 0 for a percentage
    share: int  # a percentage prize: each bet's equal part (O4, S3)
    lowest_seat: int
    odd_pesos: int  # S3: added to the lowest seat's part
    cap_multiple: int = 0  # S4: each part at most this times its bet; 0 for none

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class StudioReading:
    """A studio round as a pot update gives it, with what its paying pot holds (minor units;
    None unknown) for the sign's M3 check."""

    round: StudioRound
    pot_minor: int | None = None

    def shown(self) -> bool:
        """M3: a percentage prize's parts together are never more than the pot holds."""
        parts = self.round.share * self.round.bets + self.round.odd_pesos
        return self.round.multiple > 0 or (
            self.pot_minor is not None and parts <= self.pot_minor // MINOR_PER_PESO
        )


@dataclass(frozen=True, slots=True)
class SignReading:
    """A pot update as the sign reads it: the amounts are the pot's (whole pesos), the main pot's
    balance in minor units (None unknown) for the sign's own M3 check of what it is told."""

    pot_group_id: str
    sign_value: int
    increment: int
    min_bet: int
    max_bet: int
    main_minor: int | None = None
    traces: Sequence[common_pb2.LockTrace] = ()
    levels: Sequence[LevelReading] = ()
    studio: Sequence[StudioReading] = ()


@dataclass(frozen=True, slots=True)
class Sign:
    pot_group_id: str
    amount: int = 0
    increment: int = 0
    min_bet: int = 0
    max_bet: int = 0
    live: bool = False
    closed_reason: str = "waiting for the pot service"
    winner: Winner | None = None
    winner_until: float = 0.0
    pending: tuple[PendingPrize, ...] = ()  # D2: the land tables' prizes awaiting approval
    pending_rounds: tuple[PendingRound, ...] = ()  # D2, O9: the studio tables', counted
    levels: tuple[SignLevel, ...] = ()  # L4: every level, the main first; none for one level
    studio: tuple[StudioRound, ...] = ()  # O2-O5: studio rounds awaiting their hands
    updated_at: float = 0.0  # wall-clock seconds of the last update (for display)
    heard_at: float = field(default=0.0, compare=False)  # monotonic seconds
    # The latest locks reflected in the amount, numbered from 1 per group (latency budget only)
    traces: tuple[common_pb2.LockTrace, ...] = field(default=(), compare=False)
    traces_through: int = field(default=0, compare=False)  # the number of the last trace

    def traces_after(self, number: int) -> tuple[common_pb2.LockTrace, ...]:
        """The traces numbered after ``number`` that are still kept."""
        return self.traces[max(0, len(self.traces) - (self.traces_through - number)) :]

    def to_json(self) -> dict[str, Any]:
        return {
            "pot_group_id": self.pot_group_id,
            "amount": self.amount,
            "increment": self.increment,
            "min_bet": self.min_bet,
            "max_bet": self.max_bet,
            "live": self.live,
            "closed_reason": self.closed_reason,
            "winner": None if self.winner is None else self.winner.to_json(),
            "pending": [p.to_json() for p in self.pending],
            **(
                {"pending_rounds": [r.to_json() for r in self.pending_rounds]}
                if self.pending_rounds
                else {}
            ),
            "updated_at": self.updated_at,
            **({"levels": [level.to_json() for level in self.levels]} if self.levels else {}),
            **({"studio": [round.to_json() for round in self.studio]} if self.studio else {}),
        }

    def level_label(self, name: str) -> str:
        """The label of the level named ``name`` ("" when the sign has no such level)."""
        return next((level.label for level in self.levels if level.name == name), "")


Listener = Callable[[str], None]


class Board:
    """Every known group's sign; listeners hear which group changed."""

    def __init__(self, stale_after: float, winner_seconds: float) -> None:
        self.stale_after = stale_after
        self.winner_seconds = winner_seconds
        self.signs: dict[str, Sign] = {}
        self._listeners: list[Listener] = []
        self._announced_at: dict[str, float] = {}  # group -> updated_at last told to listeners
        self._held: set[str] | None = None  # groups changed while announcements are held
        self._lock = PendingLock()  # D2: what awaits a supervisor, by group

    @contextlib.contextmanager
    def announced_once(self) -> Iterator[None]:
        """Changes made inside are told to the listeners once, at the end: a bundle of a studio
        round's thousands of prizes (O4) is one banner change for the signs, not one per prize
        (each told change is a push to every sign watching the group)."""
        if self._held is not None:  # already held by an outer block: it tells
            yield
            return
        held: set[str] = set()
        self._held = held
        try:
            yield
        finally:
            self._held = None
            for group in held:
                self._announced_at[group] = self.signs[group].updated_at
                for listener in list(self._listeners):
                    listener(group)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    def _set(self, sign: Sign) -> None:
        group = sign.pot_group_id
        old = self.signs.get(group)
        self.signs[group] = sign  # keeps the traces and the time heard even when not told
        if old == sign:
            return
        only_heard = old is not None and replace(old, updated_at=sign.updated_at) == sign
        announced = self._announced_at.get(group, 0.0)
        if only_heard and sign.updated_at - announced < HEARD_REFRESH_SECONDS:
            return  # the next push carries it, within HEARD_REFRESH_SECONDS
        if self._held is not None:
            self._held.add(group)
            return
        self._announced_at[group] = sign.updated_at
        for listener in list(self._listeners):
            listener(sign.pot_group_id)

    def pot_update(self, reading: SignReading, now: float, wall: float) -> None:
        """A pot update onto its group's sign (``now`` monotonic, ``wall`` the wall clock)."""
        amount = reading.sign_value
        if reading.main_minor is not None:  # M3: never more than the pot holds
            amount = min(amount, reading.main_minor // MINOR_PER_PESO)
        old = self.signs.get(reading.pot_group_id, Sign(reading.pot_group_id))
        traces = reading.traces
        self._set(
            replace(
                old,
                amount=amount,
                increment=reading.increment if reading.increment else old.increment,
                levels=_levels(old.levels, reading.levels),
                studio=_studio(reading.studio),
                min_bet=reading.min_bet,
                max_bet=reading.max_bet,
                live=True,
                closed_reason="",
                updated_at=wall,
                heard_at=now,
                traces=(*old.traces, *traces)[-TRACES_KEPT:],
                traces_through=old.traces_through + len(traces),
            )
        )

    def award(
        self,
        pot_group_id: str,
        winner: Winner,
        now: float,
        level: str = "",
        envy_of: EnvyHit | None = None,
        studio: StudioCount | None = None,
    ) -> None:
        """A prize onto the banner (D2), named by its level's label (L4). An envy bonus (V1,
        ``envy_of`` its hit) joins its hit's banner; one that comes before its hit (V3: a
        percentage prize is paid after the bonuses) puts the hit up first, without an amount,
        and the hit's own award then fills it in. A studio round's prize (O3, O4) is counted
        into its round's banner: how many bets won it and their total (``studio``: this
        prize's count and total with those of the same round and hand that follow it)."""
        old = self.signs.get(pot_group_id, Sign(pot_group_id))
        label = old.level_label(level) if level else ""
        shown = old.winner
        if studio is not None:
            shown = replace(winner, level_label=label).counted(shown, *studio)
        elif envy_of is not None:
            bonus = EnvyPrize(
                winner.award_id, winner.table_id, winner.seat, winner.prize, winner.amount
            )
            if shown is None or shown.hit != envy_of:
                table_id, round_id, seat = envy_of
                hand = winner.prize.removeprefix(ENVY_PREFIX)
                shown = Winner(table_id, seat, hand, 0, winner.cards, "", label, (), round_id)
            shown = replace(shown, envy=(*shown.envy, bonus))
        else:
            kept = shown.envy if shown is not None and shown.hit == winner.hit else ()
            shown = replace(winner, level_label=label, envy=kept)
        self._set(replace(old, winner=shown, winner_until=now + self.winner_seconds))

    def payout(self, pot_group_id: str, prize: PendingPrize, awaiting_approval: bool) -> None:
        """A payout's latest state: pending while it awaits approval, gone from the sign once
        it is approved, paid or voided (the jackpot lock, rule D2)."""
        for group in self._lock.payout(pot_group_id, prize, awaiting_approval):
            self._show_pending(group)

    def settled(self, award_id: str) -> None:
        """A payout's tombstone (paid or voided, its group not named): off every sign."""
        for group in self._lock.settled(award_id):
            self._show_pending(group)

    def replace_pending(self, pending: Mapping[str, Sequence[PendingPrize]]) -> None:
        """Every group's pending prizes at once, as a restore read them: a prize not in
        ``pending`` is no longer pending anywhere."""
        for group in sorted(self._lock.replace(pending)):
            self._show_pending(group)

    def _show_pending(self, group: str) -> None:
        listed, counted = self._lock.listed(group), self._lock.counted(group)
        if group in self.signs or listed or counted:
            old = self.signs.get(group, Sign(group))
            self._set(replace(old, pending=listed, pending_rounds=counted))

    def tick(self, now: float) -> None:
        """Close stale signs (D5) and take down expired winner banners (D2)."""
        for sign in list(self.signs.values()):
            updated = sign
            if sign.live and now - sign.heard_at > self.stale_after:
                updated = replace(
                    updated,
                    live=False,
                    closed_reason=f"no update from the pot for over {self.stale_after:g} s",
                )
            if sign.winner is not None and now >= sign.winner_until:
                updated = replace(updated, winner=None, winner_until=0.0)
            if updated is not sign:
                self._set(updated)

    def view(self, groups: Iterable[str] | None = None) -> list[Sign]:
        wanted = sorted(self.signs) if groups is None else list(groups)
        return [self.signs.get(g, Sign(g)) for g in wanted]

    def stale_count(self) -> int:
        return sum(1 for s in self.signs.values() if not s.live)


def _levels(old: Sequence[SignLevel], readings: Sequence[LevelReading]) -> tuple[SignLevel, ...]:
    """Each level's amount, never more than its pot holds (M3), and its last increase (D2: an
    update that did not raise it keeps the one before)."""
    before = {level.name: level for level in old}
    shown = []
    for reading in readings:
        amount = reading.sign_value
        if reading.pot_minor is not None:
            amount = min(amount, reading.pot_minor // MINOR_PER_PESO)
        previous = before.get(reading.name)
        increment = reading.increment
        if not increment and previous is not None:
            increment = previous.increment
        shown.append(SignLevel(reading.name, reading.label, amount, increment))
    return tuple(shown)


def _studio(readings: Sequence[StudioReading]) -> tuple[StudioRound, ...]:
    """The studio rounds a sign shows: those whose figure passes its M3 check (the feed logs
    the others)."""
    return tuple(reading.round for reading in readings if reading.shown())
