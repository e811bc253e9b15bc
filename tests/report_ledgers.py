"""Multi-day ledgers made by the real pot's book, for `jackpot report`'s tests (R1, issue 23).

:func:`casino` plays four simulated days on two ledger partitions, one pot's book each, its
clock stepping two minutes per table event and a tick every 20 minutes (heartbeats, and the
hourly checkpoints, besides one per ``checkpoint_entries`` entries and one at each
configuration activation):

- partition 0: group ``north`` from the first day (a second configuration version proposed on
  day 1, active from the next reset), and group ``late`` opened three hours into day 2;
- partition 1: group ``south``, whose pot service is down (no event, no heartbeat) from eight
  hours before day 2 to an hour into it.

The payout service's lifecycle entries are merged in by time: each award approved four minutes
after it and paid two minutes later, and every fourth one paid 26 hours later (so awards made
before a day are paid in it). ``checkpoints=False`` gives a ledger from before checkpoints: no
heartbeat, no configuration change, no checkpoint entry.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from loadtest.rounds import (
    CONFIG,
    CREDIT_VALUE,
    FLUSH,
    MAX_BET,
    MIN_BET,
    interleaved_rounds,
    simulated_tables,
)

from jackpot.domain.canonical import canonical_json
from jackpot.domain.cards import Game
from jackpot.platform.codec import game_to_proto, timestamp_ns
from jackpot.platform.kafka import KafkaConnection, read_records
from jackpot.pot import commands
from jackpot.pot.ledger_audit import AWARD_TYPES
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.tools.report_model import LedgerRecord
from jackpot.v1 import pot_pb2, table_events_pb2

MINUTE_NS = 60 * 10**9
HOUR_NS = 60 * MINUTE_NS
DAY_NS = 24 * HOUR_NS
DAY0 = 1_780_000_000 * 10**9 // DAY_NS * DAY_NS  # a midnight (UTC)
DAYS = 4
STEP_NS = 2 * MINUTE_NS
HEARTBEAT_NS = 20 * MINUTE_NS
NORTH, LATE, SOUTH = "north", "late", "south"
SOUTH_DOWN = (DAY0 + 2 * DAY_NS - 8 * HOUR_NS, DAY0 + 2 * DAY_NS + HOUR_NS)
LATE_OPENS = DAY0 + 2 * DAY_NS + 3 * HOUR_NS
GAMES = [Game.CARIBBEAN, Game.GO_POKER, Game.DRAW]
ROUNDS_PER_DAY = 105  # per table: about 2.2 table events per round, 3 tables, two minutes apart


def day(n: int) -> int:
    return DAY0 + n * DAY_NS


def recorded(entry: pot_pb2.LedgerEntry) -> int:
    return entry.recorded_at.seconds * 10**9 + entry.recorded_at.nanos


@dataclass
class Partition:
    """One pot's book playing its groups' events at their times, with its ledger."""

    number: int
    checkpoints: bool
    now: int = DAY0
    ledger: list[pot_pb2.LedgerEntry] = field(default_factory=list)
    offset: int = 0
    book: PotBook = field(init=False)

    def __post_init__(self) -> None:
        self.book = PotBook(
            self.number,
            clock_ns=lambda: self.now,
            checkpoint_entries=400 if self.checkpoints else 10**9,
        )

    def play(self, at: int, event: table_events_pb2.TableEvent, group_id: str) -> None:
        self.now = at
        record = InputRecord(
            event.SerializeToString(), "t", self.number, self.offset, group_id.encode()
        )
        out = self.book.apply_batch([record])
        self.book.commit(out)
        assert not out.dead_letters, out.dead_letters
        self.offset += 1
        self.ledger += out.ledger

    def heartbeat(self, at: int) -> None:
        if not self.checkpoints or not self.book.groups:
            return
        self.now = at
        book = self.book  # a tick, as the pot service's: heartbeats and checkpoints due
        out = book.checkpoint(book.checkpoints_due(), book.heartbeat(book.groups))
        book.commit(out)
        self.ledger += out.ledger


def group_events(
    group_id: str, rounds: int, rng: random.Random, prefix: str, change: bool
) -> list[table_events_pb2.TableEvent]:
    tables = simulated_tables(group_id, GAMES, rng, prefix)
    for table in tables:
        table.royal_rate = 0.08
    played = interleaved_rounds(tables, rounds, rng)
    half = len(played) // 4 if change else len(played)
    v2 = {**CONFIG, "version": 2, "base": 600_000}
    return [
        commands.create_group(group_id, CONFIG, requested_by="ana@casino", reason="opening"),
        *(t.link_command() for t in tables),
        *played[:half],
        *([commands.propose_config(group_id, v2, "bea@casino", "approved 7")] if change else []),
        *played[half:],
    ]


def schedule(
    events: list[table_events_pb2.TableEvent], start: int, down: tuple[int, int] | None = None
) -> Iterator[tuple[int, table_events_pb2.TableEvent]]:
    """Each event two minutes after the last, skipping a time the pot is down."""
    at = start
    for event in events:
        if down is not None and down[0] <= at < down[1]:
            at = down[1]
        yield at, event
        at += STEP_NS


def play(partition: Partition, timed: list[tuple[int, str, table_events_pb2.TableEvent]]) -> None:
    """Events in time order, a heartbeat every 20 minutes while the pot is up."""
    beat = DAY0 + HEARTBEAT_NS
    for at, group_id, event in sorted(timed, key=lambda t: t[0]):
        while beat <= at:
            if partition.number != 1 or not SOUTH_DOWN[0] <= beat < SOUTH_DOWN[1]:
                partition.heartbeat(beat)
            beat += HEARTBEAT_NS
        partition.play(at, event, group_id)


def with_payouts(ledger: list[pot_pb2.LedgerEntry], end: int) -> list[pot_pb2.LedgerEntry]:
    """The payout service's entries of each award, merged in by time (before ``end``)."""
    steps: list[tuple[int, pot_pb2.LedgerEntry]] = []
    awards = [e for e in ledger if e.type in AWARD_TYPES]
    for n, award in enumerate(awards):
        award_id = json.loads(award.detail_json)["award_id"]
        paid = 26 * HOUR_NS if n % 4 == 3 else 6 * MINUTE_NS
        for k, (kind, by, after) in enumerate(
            [
                (pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_APPROVED, "floor@casino", 4 * MINUTE_NS),
                (pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID, "cashier@casino", paid),
            ]
        ):
            at = recorded(award) + after
            if at < end:
                steps.append((at, payout_entry(award, award_id, kind, by, at, k)))
    merged = [(recorded(e), 0, n, e) for n, e in enumerate(ledger)]
    merged += [(at, 1, n, e) for n, (at, e) in enumerate(steps)]
    return [e for *_, e in sorted(merged, key=lambda m: m[:3])]


def payout_entry(
    award: pot_pb2.LedgerEntry,
    award_id: str,
    kind: pot_pb2.LedgerEntryType,
    by: str,
    at: int,
    step: int,
) -> pot_pb2.LedgerEntry:
    return pot_pb2.LedgerEntry(
        entry_id=f"payout:{award_id}:{step}",
        pot_group_id=award.pot_group_id,
        type=kind,
        table_id=award.table_id,
        round_id=award.round_id,
        seat=award.seat,
        prize=award.prize,
        amount=award.amount,
        changed_by=by,
        source_event_id=award_id,
        occurred_at=timestamp_ns(at),
        recorded_at=timestamp_ns(at),
    )


def casino(checkpoints: bool = True, days: int = DAYS) -> dict[int, list[pot_pb2.LedgerEntry]]:
    """Four days (or ``days``) of ledger on two partitions (see the module's docstring)."""
    rng = random.Random(23)
    rounds = ROUNDS_PER_DAY * days
    north = group_events(NORTH, rounds, rng, "N", change=checkpoints)
    late = group_events(LATE, rounds - 2 * ROUNDS_PER_DAY, rng, "L", change=False)
    south = group_events(SOUTH, rounds, rng, "S", change=False)
    zero, one = Partition(0, checkpoints), Partition(1, checkpoints)
    play(
        zero,
        [(at, NORTH, e) for at, e in schedule(north, DAY0)]
        + [(at, LATE, e) for at, e in schedule(late, LATE_OPENS + MINUTE_NS)],
    )
    play(one, [(at, SOUTH, e) for at, e in schedule(south, DAY0 + MINUTE_NS, SOUTH_DOWN)])
    end = day(days)
    return {p.number: with_payouts(p.ledger, end) for p in (zero, one)}


def retold(entry: pot_pb2.LedgerEntry, change: dict[str, object]) -> pot_pb2.LedgerEntry:
    """A copy of a checkpoint entry whose detail has ``change`` applied (path -> new value,
    paths like ``pots.main`` or ``state.balances.main``)."""
    detail = json.loads(entry.detail_json)
    for path, value in change.items():
        *parents, leaf = path.split(".")
        node = detail
        for name in parents:
            node = node[name]
        node[leaf] = value
    copy = pot_pb2.LedgerEntry()
    copy.CopyFrom(entry)
    copy.detail_json = canonical_json(detail)
    return copy


async def read_whole_ledger(kafka_options: Mapping[str, Any], topic: str) -> list[LedgerRecord]:
    """Every record of a test's ledger, in memory, to compare the report with a replay of it
    (the command never holds the ledger: jackpot.tools.report.read_report streams it)."""
    return [
        LedgerRecord(r.partition, r.offset, r.value)
        async for r in read_records(KafkaConnection(kafka_options), topic)
        if r.value is not None
    ]


# ------------------------------------------------------------------ a group with a studio table

STUDIO_GROUP, STUDIO_TABLE = "mixed", "S1"
STUDIO_WINNERS = 1_000  # the bets of the studio round whose shared hand is a flush


def studio_floor(
    land_rounds: int = 60, studio_seats: int = 1_000, flush_round: int = 3
) -> list[pot_pb2.LedgerEntry]:
    """One group's ledger, an entry batch a minute from DAY0, with the payout service's entries
    merged in (:func:`with_payouts`): three land tables, then studio table S1 (``studio_seats``
    seats, O1) linked after a third of their rounds, whose rounds (one every tenth land round)
    each take a bet of every seat with its player; its round number ``flush_round`` (from 0)
    deals a flush to all of them (each winning bet is paid its fixed prize, O3:
    ``studio_seats`` awards of one round), the others a hand that wins nothing."""
    rng = random.Random(39)
    tables = simulated_tables(STUDIO_GROUP, [Game.CARIBBEAN, Game.GO_POKER, Game.DRAW], rng, "L")
    for table in tables:
        table.royal_rate = 0.05
    land = interleaved_rounds(tables, land_rounds, rng)
    link = table_events_pb2.LinkTable(
        table_id=STUDIO_TABLE,
        game=game_to_proto(Game.CARIBBEAN),
        site="studio",
        studio_seats=studio_seats,
        min_bet=MIN_BET,
        max_bet=MAX_BET,
        credit_value=CREDIT_VALUE,
    )
    events = [
        commands.create_group(STUDIO_GROUP, CONFIG, requested_by="ana@casino", reason="opening"),
        *(t.link_command() for t in tables),
    ]
    studio_at, played = len(land) // 3, 0
    for n, event in enumerate(land):
        events.append(event)
        if n == studio_at:
            events.append(commands.link_table(STUDIO_GROUP, link))
        if n > studio_at and n % 10 == 0:
            events += studio_round(played, studio_seats, flush=played == flush_round)
            played += 1
    entries = play_minutes(STUDIO_GROUP, events)
    return with_payouts(entries, recorded(entries[-1]) + DAY_NS)


def studio_round(number: int, seats: int, flush: bool) -> list[table_events_pb2.TableEvent]:
    """A studio round: a bet of the minimum from each seat, and the one shared hand (O2)."""
    round_id = f"S1-{number + 1}"
    bets = [
        table_events_pb2.SeatBet(seat=seat, bet=MIN_BET, player=f"player-{seat}")
        for seat in range(1, seats + 1)
    ]
    hand = list(FLUSH) if flush else ["2C", "7D", "9H", "JS", "KC"]
    game = game_to_proto(Game.CARIBBEAN)
    return [
        commands.table_event(
            STUDIO_GROUP,
            STUDIO_TABLE,
            round_id,
            2 * number + 1,
            game,
            round_locked=table_events_pb2.RoundLocked(bets=bets),
        ),
        commands.table_event(
            STUDIO_GROUP,
            STUDIO_TABLE,
            round_id,
            2 * number + 2,
            game,
            round_result=table_events_pb2.RoundResult(shared_hand=hand),
        ),
    ]


def play_minutes(
    group_id: str, events: list[table_events_pb2.TableEvent]
) -> list[pot_pb2.LedgerEntry]:
    """Events through a real pot's book on partition 0, a minute apart from DAY0, with its
    ticks (:func:`play`: heartbeats and hourly checkpoints)."""
    partition = Partition(0, checkpoints=True)
    play(partition, [(DAY0 + n * MINUTE_NS, group_id, e) for n, e in enumerate(events)])
    return partition.ledger
