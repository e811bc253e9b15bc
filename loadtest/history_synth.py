"""The history of a casino floor, synthesized with the pot's own engine (`make bench-history`).

A T-table floor laid out as the demo lays it out (``jackpot.tools.demo_tables.floor_tables``: poker
tables of three games and one table in five blackjack, at sites A and B), with one pot group per
table-events partition (``jackpot.topics``: 6): the demo's ``scl-blackjack`` configuration for the
blackjack tables, the demo's ``scl-poker`` configuration (mystery prize included) for the poker
tables, spread over the other groups. Each group is opened and its tables linked by the same
admin commands the pot's admin API publishes (``jackpot.pot.commands``), ten minutes before the
history begins; then every table plays one round a minute for D days, in the past.

Nothing is invented: a round is what the floor simulator plays through a gateway
(``jackpot.sim.floor``): up to five seats, each betting on the progressive with probability 0.7,
1 to 5 credits of 1,000 pesos; a Draw player exchanging cards (0.25) or a Caribbean player
folding (0.15) forfeits; real shuffled cards (one deck a round, a six-deck shoe for blackjack),
so prizes come at their true frequency. The gateway's ``TableEvent`` for each fact (its event id,
sequence, time) goes through a real :class:`~jackpot.pot.pot_book.PotBook` whose clock
(``clock_ns``) is the synthetic time, so the ledger entries, awards, pot updates, state snapshots
and (with today's code) checkpoints are the book's own output. Events are applied per group
in windows of 60 synthetic seconds (at most ``MAX_BATCH`` records a batch, the pot's
``max_batch_records``), each window followed by the book's heartbeat, as the service beats
when its input pauses.

Every award becomes the payout service's payout (``jackpot.domain.payout``: ordered, approved by
a supervisor when at or above the approval threshold, paid by the table's dealer a few minutes
later) with its ledger entries (``jackpot.payout.codec``); prizes whose payment would come after
the history's end stay open. The access log holds what the services note
(``jackpot.platform.authz``): the admin commands, each payment and approval, dealer terminals
connecting at each shift, the progressive closing and reopening around each day's rollout of the
pot, and each service instance's ``software_verified`` first entry, chained per writer by
:class:`~jackpot.domain.access_chain.ChainHead`.

Not synthesized: what only the services' Kafka edges keep beside these records, which older
code never wrote (the payout's open-payouts topic and its marks, the audit writers' chain
heads): a service's first start on the history builds them, as on the first start after an
upgrade, and ``loadtest.history_measure`` times the second start.

Pure: :meth:`GroupHistory.chunks` yields :class:`Chunk` s of records (kind, partition, key,
value, time) and :func:`audit_records` chains the facts; ``loadtest.history_kafka`` writes them.
"""

from __future__ import annotations

import dataclasses
import heapq
import inspect
import itertools
import math
import random
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from jackpot.domain.cards import GAME_RULES, RANKS, SUITS, Game
from jackpot.domain.payout import Payout, PayoutState, approve, pay
from jackpot.payout.codec import ledger_entry, payout_for_award, to_proto
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.access_log import to_record
from jackpot.platform.codec import game_to_proto
from jackpot.pot import commands
from jackpot.pot.group_runtime import Outputs
from jackpot.pot.ledger_audit import AWARD_TYPES
from jackpot.pot.partitions import key_partition
from jackpot.pot.settings import PotSettings
from jackpot.tools.demo_tables import (
    BLACKJACK_CONFIG,
    BLACKJACK_GROUP,
    LIMITS,
    POKER_CONFIG,
    POKER_GROUP,
    DemoTable,
    floor_tables,
)
from jackpot.topics import TABLE_EVENTS
from jackpot.v1 import pot_pb2, table_events_pb2

# ``make bench-history --before DIR`` synthesizes with older code on PYTHONPATH, which had these
# where issue 38 had not moved them yet.
try:
    from jackpot.domain.access_chain import ChainHead
    from jackpot.gateway.event_records import EVENT_ID_NAMESPACE
    from jackpot.pot.pot_book import InputRecord, PotBook
    from jackpot.pot.state_records import sequence_mark_key, state_key
except ImportError:  # code from before issue 38
    from jackpot.domain.auditchain import ChainHead  # type: ignore
    from jackpot.pot.processor import (  # type: ignore
        InputRecord,
        sequence_mark_key,
        state_key,
    )
    from jackpot.pot.processor import PotProcessor as PotBook  # type: ignore

    from jackpot.gateway.service import (  # type: ignore
        EVENT_ID_NAMESPACE,
    )

SECOND_NS = 10**9
MINUTE_NS = 60 * SECOND_NS
HOUR_NS = 60 * MINUTE_NS
DAY_NS = 24 * HOUR_NS
SETUP_LEAD_NS = 10 * MINUTE_NS  # the groups are opened this long before the first round
WINDOW_NS = MINUTE_NS  # events applied per group in windows of this much synthetic time
MAX_BATCH = 200  # the pot's max_batch_records
GATEWAY_NS = 2_000_000  # a device event to the gateway's Kafka record
POT_NS = 20_000_000  # a table event to the pot applying it
PAYOUT_NS = 40_000_000  # an award to the payout service ordering its payout
SHIFT_NS = 8 * HOUR_NS  # dealers change (their terminals connect again)
SEATS_IN_PLAY, PARTICIPATION, EXCHANGE_RATE, FOLD_RATE = 5, 0.7, 0.25, 0.15
APPROVAL_THRESHOLD: int = PayoutSettings.model_fields["approval_threshold"].default
DECK = [rank + suit for rank in RANKS for suit in SUITS]
ADMIN, ADMIN_REASON = "operator-1", "floor opening"
HOST = "floor-1"  # the instances' host names (chains are named <service>:<host>-<pid>)


class Record(NamedTuple):
    """One Kafka record to write: the topic's kind (``table-events``, ``ledger`` ...)."""

    kind: str
    partition: int
    key: bytes
    value: bytes | None
    time_ms: int


class Fact(NamedTuple):
    """Something a service notes on the access log; ``writer`` is a service name whose
    instance at ``time_ns`` owns the chain (``payout``, ``pot-api``), or a whole chain id."""

    time_ns: int
    writer: str
    principal: str
    roles: tuple[str, ...]
    action: str
    outcome: str
    target: str
    detail: str


@dataclass(frozen=True, slots=True)
class Plan:
    """Which floor, how long, ending when."""

    tables: int
    days: float
    end_ns: int
    rounds_per_minute: float = 1.0
    seed: int = 20261201
    partitions: int = TABLE_EVENTS.partitions

    @property
    def start_ns(self) -> int:
        return self.end_ns - int(self.days * DAY_NS)

    @property
    def period_ns(self) -> int:
        return int(MINUTE_NS / self.rounds_per_minute)


@dataclass(frozen=True, slots=True)
class GroupPlan:
    group_id: str
    partition: int
    config: Mapping[str, Any]
    tables: tuple[DemoTable, ...]


@dataclass(slots=True)
class Chunk:
    """The records and audit facts of one stretch of a group's history."""

    records: list[Record] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    rounds: int = 0


@dataclass(slots=True)
class GroupCounts:
    """What one group's history holds, counted as it is made."""

    rounds: int = 0
    table_events: int = 0
    ledger_entries: int = 0
    awards: int = 0
    ordered: int = 0  # awards the payout service had ordered a payout for by the end
    paid: int = 0
    open: int = 0
    records: int = 0


def _distinct_names(stem: str, partitions: int, taken: set[int]) -> Iterator[tuple[str, int]]:
    """``stem``, ``stem-2``, ``stem-3`` ... each on a partition not yet taken."""
    for n in range(1, 10_000):
        name = stem if n == 1 else f"{stem}-{n}"
        partition = key_partition(name, partitions)
        if partition not in taken:
            taken.add(partition)
            yield name, partition


def group_plans(tables: int, partitions: int = TABLE_EVENTS.partitions) -> list[GroupPlan]:
    """One blackjack group and a poker group on every other partition; the demo's tables,
    the poker ones dealt out to the poker groups in turn."""
    taken: set[int] = set()
    names = [next(_distinct_names(BLACKJACK_GROUP, partitions, taken))]
    names += itertools.islice(_distinct_names(POKER_GROUP, partitions, taken), partitions - 1)
    floor = floor_tables(tables)
    blackjack = [t for t in floor if t.group == BLACKJACK_GROUP]
    poker = [t for t in floor if t.group == POKER_GROUP]
    plans = []
    for n, (name, partition) in enumerate(names):
        mine = blackjack if n == 0 else poker[n - 1 :: len(names) - 1]
        plans.append(
            GroupPlan(
                name,
                partition,
                BLACKJACK_CONFIG if n == 0 else POKER_CONFIG,
                tuple(dataclasses.replace(t, group=name) for t in mine),
            )
        )
    return sorted(plans, key=lambda g: g.partition)


# ------------------------------------------------------------------------------ the tables


@dataclass(slots=True)
class Dealer:
    """One table as the gateway publishes it: its rounds' events, numbered and stamped."""

    table: DemoTable
    rng: random.Random
    sequence: int = 0
    rounds: int = 0

    def _event(self, round_id: str, at_ns: int, **payload: Any) -> table_events_pb2.TableEvent:
        self.sequence += 1
        table = self.table
        event = commands.table_event(
            table.group,
            table.table_id,
            round_id,
            self.sequence,
            game_to_proto(table.game),
            event_id=str(uuid.uuid5(EVENT_ID_NAMESPACE, f"{table.table_id}/{self.sequence}")),
            occurred_at_ns=at_ns,
            **payload,
        )
        event.gateway_accepted_unix_nanos = at_ns + GATEWAY_NS // 2
        return event

    def round(self, lock_ns: int, period_ns: int) -> list[tuple[int, table_events_pb2.TableEvent]]:
        """Lock, forfeits and result of the table's next round (times in the round's period)."""
        rng, game = self.rng, self.table.game
        rules = GAME_RULES[game]
        self.rounds += 1
        round_id = f"{self.table.table_id}-{lock_ns // SECOND_NS}-{self.rounds}"
        seats = rng.sample(range(1, rules.seats + 1), min(SEATS_IN_PLAY, rules.seats))
        credits = LIMITS["max_bet"] // LIMITS["credit_value"]
        bets = {
            seat: LIMITS["credit_value"] * rng.randint(1, credits)
            for seat in sorted(seats)
            if rng.random() <= PARTICIPATION
        }
        events = [(lock_ns, self._event(round_id, lock_ns, round_locked=commands.locked(bets)))]
        at = lock_ns + period_ns // 4
        for seat in sorted(bets):
            reason = None
            if rules.can_exchange and rng.random() < EXCHANGE_RATE:
                reason = table_events_pb2.FORFEIT_REASON_CARD_EXCHANGE
            elif rules.can_fold and game is not Game.GO_POKER and rng.random() < FOLD_RATE:
                reason = table_events_pb2.FORFEIT_REASON_FOLD
            if reason is not None:
                forfeit = table_events_pb2.SeatForfeited(seat=seat, reason=reason)
                events.append((at, self._event(round_id, at, seat_forfeited=forfeit)))
                at += SECOND_NS
        hands, community = deal(game, sorted(bets), rng)
        result_ns = lock_ns + period_ns // 2
        result = commands.result(hands, community)
        events.append((result_ns, self._event(round_id, result_ns, round_result=result)))
        return events


def deal(
    game: Game, seats: Sequence[int], rng: random.Random
) -> tuple[dict[int, list[str]], list[str]]:
    """Real shuffled cards for the seats that bet, as the floor simulator deals them."""
    if game is Game.BLACKJACK:
        shoe = DECK * 6
        rng.shuffle(shoe)
        return {seat: [shoe.pop(), shoe.pop()] for seat in seats}, []
    deck = DECK.copy()
    rng.shuffle(deck)
    community = [deck.pop(), deck.pop()] if game is Game.GO_POKER else []
    own = GAME_RULES[game].own_cards[0]
    return {seat: [deck.pop() for _ in range(own)] for seat in seats}, community


def setup_events(plan: Plan, group: GroupPlan) -> list[tuple[int, table_events_pb2.TableEvent]]:
    """The admin commands that open the group and link its tables (as the admin API builds
    them), ten minutes before the first round, a tenth of a second apart."""
    at = plan.start_ns - SETUP_LEAD_NS + group.partition * SECOND_NS
    rng = random.Random(f"{plan.seed}/{group.group_id}/commands")
    event_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    made = [
        commands.create_group(
            group.group_id, dict(group.config), ADMIN, ADMIN_REASON, event_id=event_id
        )
    ]
    for table in group.tables:
        link = table_events_pb2.LinkTable(
            table_id=table.table_id,
            game=game_to_proto(table.game),
            site=f"site-{table.site.lower()}",
            **LIMITS,
        )
        event_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        made.append(
            commands.link_table(group.group_id, link, ADMIN, ADMIN_REASON, event_id=event_id)
        )
    timed = []
    for n, event in enumerate(made):
        event.occurred_at.FromNanoseconds(at + n * SECOND_NS // 10)
        timed.append((at + n * SECOND_NS // 10, event))
    return timed


def timeline(plan: Plan, group: GroupPlan) -> Iterator[tuple[int, table_events_pb2.TableEvent]]:
    """Every table event of the group in time order: the commands, then the tables' rounds
    (each table at its own phase of the minute), the last round settled before the end."""
    yield from setup_events(plan, group)
    period = plan.period_ns
    queue: list[tuple[int, int, int, table_events_pb2.TableEvent | None]] = []
    dealers = []
    for n, table in enumerate(group.tables):
        rng = random.Random(f"{plan.seed}/{table.table_id}")
        dealers.append(Dealer(table, rng))
        queue.append((plan.start_ns + rng.randrange(period), n, 0, None))
    heapq.heapify(queue)
    tiebreak = 1
    while queue:
        at, n, _, event = heapq.heappop(queue)
        if event is not None:
            yield at, event
            continue
        if at + period // 2 > plan.end_ns:
            continue
        lock, *rest = dealers[n].round(at, period)
        for when, later in rest:
            heapq.heappush(queue, (when, n, tiebreak, later))
            tiebreak += 1
        heapq.heappush(queue, (at + period, n, 0, None))
        yield lock


# ------------------------------------------------------------------------------ payouts


def _ordered(award: pot_pb2.Award, order: int, at_ns: int) -> Payout:
    return payout_for_award(award, order, APPROVAL_THRESHOLD, at_ns)


def _payout_fact(at_ns: int, who: tuple[str, tuple[str, ...]], *said: str) -> Fact:
    """An entry of the payout instance's chain: (action, outcome, target, detail)."""
    action, outcome, target, detail = said
    return Fact(at_ns, "payout", who[0], who[1], action, outcome, target, detail)


def payout_steps(
    award: pot_pb2.Award, order: int, awarded_ns: int, rng: random.Random
) -> list[tuple[int, Payout, list[Fact]]]:
    """The payout of one award, step by step: ordered (or awaiting approval, then approved by a
    supervisor), then paid at the table; with what each step puts on the access log."""
    at = awarded_ns + PAYOUT_NS
    current = _ordered(award, order, at)
    steps: list[tuple[int, Payout, list[Fact]]] = [(at, current, [])]
    target, amount, ms5 = award.award_id, award.amount, 5_000_000
    if current.state is PayoutState.AWAITING_APPROVAL:
        at += rng.randint(60, 900) * SECOND_NS
        supervisor = f"supervisor-{rng.randint(1, 3)}"
        current = approve(current, supervisor, at)
        who = (supervisor, ("supervisor",))
        allowed = _payout_fact(at - ms5, who, "approve_payout", "allowed", target, "reason: -")
        applied = _payout_fact(
            at + ms5, who, "approve_payout", "applied", target, f"{amount} pesos"
        )
        steps.append((at, current, [allowed, applied]))
    at += rng.randint(20, 300) * SECOND_NS
    table = award.table_id
    dealer = dealer_on_shift(table, at)
    current = pay(current, dealer, at)
    detail = f"{amount} pesos paid at table {table} by dealer {dealer}"
    terminal = (f"terminal-{table}", ("terminal",))
    paid = _payout_fact(at + ms5, terminal, "confirm_payment", "applied", target, detail)
    steps.append((at, current, [paid]))
    return steps


def dealer_on_shift(table_id: str, at_ns: int) -> str:
    return f"dealer-{table_id.lower()}-{at_ns // SHIFT_NS % 3 + 1}"


def payout_records(partition: int, at_ns: int, payout: Payout) -> list[Record]:
    """What the payout service's domain writes for one step: the payout (compacted, keyed by
    award, on the award's partition) and its ledger entry (keyed by group)."""
    ms = at_ns // 1_000_000
    return [
        Record(
            "payouts", partition, payout.award_id.encode(), to_proto(payout).SerializeToString(), ms
        ),
        Record(
            "ledger",
            partition,
            payout.pot_group_id.encode(),
            ledger_entry(payout).SerializeToString(),
            ms,
        ),
    ]


# ------------------------------------------------------------------------ one group's history


# PotSettings field -> PotBook keyword: what the service passes that shapes the output
SETTINGS = {
    "event_id_window": "event_id_window",
    "checkpoint_interval_entries": "checkpoint_entries",
    "checkpoint_interval_seconds": "checkpoint_seconds",
}


def book_options() -> dict[str, Any]:
    """The pot service's defaults for what shapes the book's output, as the service
    passes them (those the code at hand has)."""
    fields = PotSettings.model_fields
    accepted = inspect.signature(PotBook).parameters
    return {
        keyword: fields[name].default
        for name, keyword in SETTINGS.items()
        if name in fields and keyword in accepted
    }


class SyntheticClock:
    """The book's clock: the time of the record it is applying."""

    def __init__(self, now_ns: int) -> None:
        self.now_ns = now_ns

    def __call__(self) -> int:
        return self.now_ns

    def monotonic(self) -> float:
        return self.now_ns / SECOND_NS


class GroupHistory:
    """Drives one group's book over its timeline; see :meth:`chunks`."""

    def __init__(self, plan: Plan, group: GroupPlan) -> None:
        self.plan, self.group = plan, group
        self.clock = SyntheticClock(plan.start_ns - SETUP_LEAD_NS)
        self.book = PotBook(
            group.partition,
            clock_ns=self.clock,
            monotonic=self.clock.monotonic,
            **book_options(),
        )
        self.counts = GroupCounts()
        self.offset = 0
        self.order = 0
        self.rng = random.Random(f"{plan.seed}/{group.group_id}/payouts")
        self.pending: list[tuple[int, int, Payout, list[Fact]]] = []
        self.latest_state: dict[bytes, tuple[bytes, int]] = {}
        self.chunk = Chunk()
        self.steps = 0  # payout steps scheduled (their order among equal times)

    def apply(self, batch: Sequence[tuple[int, table_events_pb2.TableEvent]]) -> None:
        """One batch through the book, its table events and outputs recorded."""
        p, key = self.group.partition, self.group.group_id.encode()
        inputs = []
        for at, event in batch:
            value = event.SerializeToString()
            ms = (at + GATEWAY_NS) // 1_000_000
            self.chunk.records.append(Record("table-events", p, key, value, ms))
            inputs.append((at, InputRecord(value, "table-events", p, self.offset, key, ms)))
            self.offset += 1
            self.chunk.rounds += event.WhichOneof("payload") == "round_locked"
        outputs = self.book.apply_batch(self._clocked(inputs))
        self._output(outputs)

    def _clocked(self, inputs: Iterable[tuple[int, InputRecord]]) -> Iterator[InputRecord]:
        for at, record in inputs:
            self.clock.now_ns = at + POT_NS
            yield record

    def heartbeat(self, at_ns: int) -> None:
        """The service's tick (``PotPartition.tick``): a heartbeat, and a checkpoint when one is
        due (the group's first, or its last an interval old)."""
        self.clock.now_ns = at_ns
        book = self.book
        beat = book.heartbeat([self.group.group_id])
        due = getattr(book, "checkpoints_due", None)  # None: code from before checkpoints
        self._output(beat if due is None else book.checkpoint(due(), beat))

    def _output(self, outputs: Outputs) -> None:
        if outputs.dead_letters or outputs.rejected:
            refused = outputs.dead_letters[:1] or outputs.rejected
            raise RuntimeError(f"the synthesized floor made an event the pot refuses: {refused}")
        self.book.commit(outputs)
        p, key, records = self.group.partition, self.group.group_id.encode(), self.chunk.records
        awards = iter(outputs.awards)
        for entry in outputs.ledger:
            at = entry.recorded_at.ToNanoseconds()
            self.settle_until(at)
            records.append(Record("ledger", p, key, entry.SerializeToString(), at // 10**6))
            if entry.type in AWARD_TYPES:
                self._award(next(awards), at)
        for update in outputs.pot_updates:
            at = update.produced_at.ToNanoseconds()
            records.append(Record("pot-updates", p, key, update.SerializeToString(), at // 10**6))
        ms = self.clock.now_ns // 1_000_000
        for group_id, state in outputs.snapshots.items():
            self.latest_state[state_key(group_id)] = (state, ms)
        for group_id, mark in outputs.sequence_marks.items():
            self.latest_state[sequence_mark_key(group_id)] = (mark, ms)
        self.counts.ledger_entries += len(outputs.ledger)

    def _award(self, award: pot_pb2.Award, at_ns: int) -> None:
        """An award (with its ledger entry's time) and the steps of its payout, scheduled."""
        value = award.SerializeToString()
        self.chunk.records.append(
            Record(
                "awards", self.group.partition, award.pot_group_id.encode(), value, at_ns // 10**6
            )
        )
        self.order += 1
        self.counts.awards += 1
        for step_ns, payout, facts in payout_steps(award, self.order, at_ns, self.rng):
            self.steps += 1
            heapq.heappush(self.pending, (step_ns, self.steps, payout, facts))

    def settle_until(self, at_ns: int) -> None:
        """The payout steps due by ``at_ns``, in time order among the pot's entries."""
        while self.pending and self.pending[0][0] <= at_ns:
            step_ns, _, payout, facts = heapq.heappop(self.pending)
            self.chunk.records += payout_records(self.group.partition, step_ns, payout)
            self.chunk.facts += facts
            if len(payout.history) == 1:
                self.counts.ordered += 1  # the payout service consumed the award
            if payout.state is PayoutState.PAID:
                self.counts.paid += 1

    def chunks(self, chunk_ns: int = HOUR_NS) -> Iterator[Chunk]:
        """The group's whole history, a chunk per ``chunk_ns`` of synthetic time; the last one
        ends with the group's final state, and ``counts`` are then complete."""
        plan = self.plan
        self.chunk.facts += admin_facts(setup_events(plan, self.group))
        for batch, beat_ns, cut in _windows(plan, self.group, chunk_ns):
            if batch:
                self.apply(batch)
            if beat_ns is not None:
                self.heartbeat(beat_ns)
            if cut:
                yield self.flush()
        self.settle_until(plan.end_ns)
        self.counts.open = self.counts.awards - self.counts.paid
        yield self.flush()

    def flush(self) -> Chunk:
        """The chunk so far, with the latest state of each key (as the log cleaner keeps it)."""
        chunk = self.chunk
        p = self.group.partition
        for key, (value, ms) in sorted(self.latest_state.items()):
            chunk.records.append(Record("pot-state", p, key, value, ms))
        self.latest_state.clear()
        self.counts.rounds += chunk.rounds
        self.counts.records += len(chunk.records)
        self.counts.table_events = self.offset
        self.chunk = Chunk()
        return chunk


def _windows(
    plan: Plan, group: GroupPlan, chunk_ns: int
) -> Iterator[tuple[list[tuple[int, table_events_pb2.TableEvent]], int | None, bool]]:
    """The group's timeline cut into batches: (events, the time of the heartbeat that follows
    them or None, whether a chunk ends after them)."""
    window_end = plan.start_ns - SETUP_LEAD_NS + WINDOW_NS
    next_chunk = plan.start_ns - SETUP_LEAD_NS + chunk_ns
    batch: list[tuple[int, table_events_pb2.TableEvent]] = []
    for at, event in timeline(plan, group):
        beat, cut = at >= window_end, at >= next_chunk
        if beat or cut or len(batch) >= MAX_BATCH:
            yield batch, window_end if beat else None, cut
            batch = []
        if beat:
            window_end += math.ceil((at - window_end + 1) / WINDOW_NS) * WINDOW_NS
        if cut:
            next_chunk += math.ceil((at - next_chunk + 1) / chunk_ns) * chunk_ns
        batch.append((at, event))
    yield batch, min(window_end, plan.end_ns), False


# ------------------------------------------------------------------------------ access log


def admin_facts(commands_made: Sequence[tuple[int, table_events_pb2.TableEvent]]) -> list[Fact]:
    """The pot admin API's entries for the commands that opened a group (allowed, applied)."""
    facts = []
    who = (ADMIN, ("operator",))
    for at, event in commands_made:
        change = event.pot_group_command.WhichOneof("command")
        target = event.pot_group_id
        detail = f"{change}; reason: {ADMIN_REASON}; request -"
        facts.append(
            Fact(at - 2_000_000, "pot-api", *who, "configure_pot", "allowed", target, detail)
        )
        facts.append(
            Fact(
                at + 30_000_000,
                "pot-api",
                *who,
                "configure_pot",
                "applied",
                target,
                f"command {event.event_id}",
            )
        )
    return facts


def instance_starts(plan: Plan) -> list[int]:
    """When the services' instances started: at the floor's opening, then a rollout a day."""
    first = plan.start_ns - SETUP_LEAD_NS - MINUTE_NS
    days = max(0, math.ceil(plan.days) - 1)
    return [first] + [plan.start_ns + n * DAY_NS for n in range(1, days + 1)]


def instance_chain(service: str, starts: Sequence[int], at_ns: int) -> str:
    """The chain of the ``service`` instance running at ``at_ns`` (one per rollout)."""
    index = max(0, sum(1 for s in starts if s <= at_ns) - 1)
    return f"{service}:{HOST}-{1000 + index}"


def floor_facts(plan: Plan, groups: Sequence[GroupPlan], digest: str) -> list[Fact]:
    """What the services note beside payouts: each instance's verified software, the dealer
    terminals connecting at each start and shift, the progressive closing for the pot's
    rollout and reopening."""
    starts = instance_starts(plan)
    facts = []
    tables = [t for g in groups for t in g.tables]
    for n, start in enumerate(starts):
        chains = [
            (start, instance_chain(s, starts, start)) for s in ("pot-api", "payout", "display")
        ]
        chains += [(start + 1, f"gateway:site-{site}-pit-1") for site in ("a", "b")]
        for at, chain in chains:
            facts.append(
                Fact(
                    at,
                    chain,
                    chain,
                    ("service",),
                    "software_verified",
                    "allowed",
                    "jackpot",
                    f"sha256:{digest}",
                )
            )
        if n:
            facts += rollout_facts(start, groups)
    shifts = range(starts[0], plan.end_ns, SHIFT_NS)
    for at in sorted({*starts, *shifts}):
        for table in tables:
            dealer = dealer_on_shift(table.table_id, at + SECOND_NS)
            facts.append(
                Fact(
                    at + 2 * SECOND_NS,
                    "payout",
                    f"terminal-{table.table_id}",
                    ("terminal",),
                    "confirm_payment",
                    "allowed",
                    table.table_id,
                    f"dealer terminal connected, dealer {dealer}",
                )
            )
    return facts


def rollout_facts(at_ns: int, groups: Sequence[GroupPlan]) -> list[Fact]:
    """The gateways close every table while the pot is rolled out, and reopen them."""
    facts = []
    for group in groups:
        for table in group.tables:
            chain = f"gateway:site-{table.site.lower()}-pit-1"
            reason = f"pot group {group.group_id} silent for over 5 s"
            facts.append(
                Fact(
                    at_ns + 5 * SECOND_NS,
                    chain,
                    chain,
                    ("service",),
                    "progressive_closed",
                    "fault",
                    table.table_id,
                    reason,
                )
            )
            facts.append(
                Fact(
                    at_ns + 7 * SECOND_NS,
                    chain,
                    chain,
                    ("service",),
                    "progressive_opened",
                    "recovered",
                    table.table_id,
                    "reopened",
                )
            )
    return facts


def audit_records(facts: Iterable[Fact], starts: Sequence[int]) -> list[Record]:
    """The audit topic: every fact in time order, appended to its writer's chain."""
    heads: dict[str, ChainHead] = {}
    made = []
    for fact in sorted(facts):
        chain = fact.writer
        if ":" not in chain:
            chain = instance_chain(chain, starts, fact.time_ns)
        head = heads.get(chain) or ChainHead(chain)
        heads[chain], entry = head.append(
            time_ns=fact.time_ns,
            principal=fact.principal,
            roles=fact.roles,
            action=fact.action,
            outcome=fact.outcome,
            target=fact.target,
            detail=fact.detail,
        )
        value = to_record(entry).SerializeToString()
        made.append(Record("audit", 0, chain.encode(), value, fact.time_ns // 1_000_000))
    return made
