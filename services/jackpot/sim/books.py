"""The fault suite's judges: the ledger against the simulator's books, and payouts per award.

After a floor has played through its faults, ``judge`` audits the ledger (``jackpot audit``),
compares what it collected with the pesos the devices were told were accepted (nothing lost,
nothing duplicated) and asks the payout service how often each award was paid (never twice).
``finish_floor`` first lets the floor's dealers and supervisor pay every prize still open after
the tables stopped, so that a floor's books can require every award paid exactly once.

The comparison is per bet, never of sums: per pot group, table, round and seat, the pesos the
gateway acknowledged at an accepted lock against the seat's bet in the ledger's ``BetsCollected``
entries for that round (a round collected twice counts twice). A lost bet and a duplicated one
of the same size therefore show as one lost and one duplicated, in whichever group each was, and
do not cancel out. Awards are compared per award id: every award in the ledger has exactly one
payout, every payout an award, none is paid twice and (``require_paid``) each is paid or voided.
Every award is also what the rules give for the cards the floor dealt: the round oracle
(``jackpot.sim.oracle``) follows the ledger and predicts each round's awards to the peso from the
floor's record of each round (``FloorStats.dealt``) and the pot balances before it; one award of
the wrong amount, to the wrong seat or from the wrong pot fails the books (``with_oracle``).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from jackpot.clients.payout import PayoutTargets, all_payouts, call_owner
from jackpot.platform.bundles import ledger_entries
from jackpot.platform.kafka import KafkaConnection, group_offsets, read_records
from jackpot.platform.tls import TlsSettings
from jackpot.sim.floor import Floor
from jackpot.sim.floor_stats import FloorStats, RoundKey
from jackpot.sim.ledger_oracle import LedgerOracle
from jackpot.sim.oracle import Dealt
from jackpot.v1 import payout_pb2, pot_pb2

EXAMPLES = 20  # mismatches listed by name in the report, per kind
AWARD_TYPES = (
    pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED,
    pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED,
)
PAYOUTS_SETTLE_SECONDS = 15  # how long the payout service may take to order the last awards
PAYMENTS_SETTLE_SECONDS = 30  # how long the dealers may take to pay the prizes left open
APPLIED_SETTLE_SECONDS = 30  # how long the pot may take to apply the last table events
SETTLED = (payout_pb2.PAYOUT_STATE_PAID, payout_pb2.PAYOUT_STATE_VOIDED)


class FloorServices(Protocol):
    """What the books need to know of the floor's services (``jackpot.tools.demo_floor.Demo`` is
    one): the broker, the run's topics and consumer groups, the payout addresses and a
    certificate."""

    bootstrap: str
    prefix: str  # the run's topics are ``<prefix>.<name>``, the pot's group ``<prefix>-pot``

    def topic(self, name: str) -> str: ...

    def payout_targets(self) -> str: ...

    def tls(self, name: str) -> TlsSettings: ...


@dataclass
class LedgerBooks:
    """What the ledger says was collected (per round, each entry's bets by seat) and awarded."""

    collections: dict[RoundKey, list[dict[int, int]]] = field(default_factory=dict)
    awards: Counter[str] = field(default_factory=Counter)  # award id -> entries awarding it
    award_groups: dict[str, str] = field(default_factory=dict)  # award id -> pot group
    oracle: LedgerOracle | None = None  # each award against the rules, when the floor is known


def entry_bets(entry: pot_pb2.LedgerEntry) -> dict[int, int]:
    """A BetsCollected entry's bets by seat, whole pesos (its total as seat 0 if the detail has
    no per-seat bets)."""
    try:
        pairs = json.loads(entry.detail_json).get("bets")
        bets: Counter[int] = Counter()
        for seat, pesos in pairs:
            bets[int(seat)] += int(pesos)
    except (TypeError, ValueError, AttributeError):
        return {0: entry.amount}
    return dict(bets)


def add_entries(books: LedgerBooks, record: bytes) -> None:
    """The entries of one ledger record (a bundle's, :mod:`jackpot.platform.bundles`)."""
    for entry, _ in ledger_entries(record):
        add_entry(books, entry)


def add_entry(books: LedgerBooks, entry: pot_pb2.LedgerEntry) -> None:
    if books.oracle is not None:
        books.oracle.add(entry)
    if entry.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED:
        key = (entry.pot_group_id, entry.table_id, entry.round_id)
        books.collections.setdefault(key, []).append(entry_bets(entry))
    elif entry.type in AWARD_TYPES:
        award_id = str(json.loads(entry.detail_json or "{}").get("award_id", ""))
        books.awards[award_id] += 1
        books.award_groups[award_id] = entry.pot_group_id


async def read_ledger(
    bootstrap: str, topic: str, dealt: Mapping[RoundKey, Dealt] | None = None
) -> LedgerBooks:
    """Every committed entry of the ledger topic, from its beginning to its current end; with
    the floor's ``dealt`` rounds, each award judged by the round oracle too."""
    books = LedgerBooks(oracle=None if dealt is None else LedgerOracle(dealt))
    await read_topic(
        bootstrap,
        topic,
        lambda value, _partition, _offset: add_entries(books, value),
    )
    return books


async def read_topic(
    bootstrap: str, topic: str, on_record: Callable[[bytes, int, int], None]
) -> None:
    """Every committed record of ``topic`` (read_committed, tombstones left out), from its
    beginning to its current end: ``on_record(value, partition, offset)`` for each."""
    async for record in read_records(KafkaConnection({"bootstrap_servers": bootstrap}), topic):
        if record.value is not None:
            on_record(record.value, record.partition, record.offset)


def _group(groups: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    return groups.setdefault(
        name,
        {
            "accepted": 0,
            "collected": 0,
            "lost": 0,
            "duplicated": 0,
            "rounds_accepted": 0,
            "rounds_collected": 0,
            "rounds_lost": 0,
            "rounds_duplicated": 0,
            "rounds_collected_twice": 0,
        },
    )


def compare_bets(
    accepted: Mapping[RoundKey, Mapping[int, int]],
    collections: Mapping[RoundKey, Sequence[Mapping[int, int]]],
) -> dict[str, Any]:
    """Bet by bet, per pot group: what the devices were told was accepted at each lock against
    what the ledger collected for that round and seat.

    A seat's shortfall is lost, its excess duplicated (a round collected twice duplicates all of
    its bets; a round collected that no device was told was accepted duplicates what it
    collected). Sums never offset each other across seats, rounds or groups.
    """
    groups: dict[str, dict[str, Any]] = {}
    examples: dict[str, list[str]] = {"lost": [], "duplicated": []}
    for key in sorted({*accepted, *collections}):
        group_id, table_id, round_id = key
        group = _group(groups, group_id)
        wanted = accepted.get(key, {})
        entries = collections.get(key, ())
        got: Counter[int] = Counter()
        for bets in entries:
            got.update(bets)
        if sum(wanted.values()):
            group["rounds_accepted"] += 1
        if sum(got.values()):
            group["rounds_collected"] += 1
        if sum(1 for bets in entries if sum(bets.values())) > 1:
            group["rounds_collected_twice"] += 1
        group["accepted"] += sum(wanted.values())
        group["collected"] += sum(got.values())
        lost = duplicated = 0
        for seat in sorted({*wanted, *got}):
            lost += max(0, wanted.get(seat, 0) - got.get(seat, 0))
            duplicated += max(0, got.get(seat, 0) - wanted.get(seat, 0))
        group["lost"] += lost
        group["duplicated"] += duplicated
        where = f"{group_id} {table_id}/{round_id}"
        group["rounds_lost"] += 1 if lost else 0
        group["rounds_duplicated"] += 1 if duplicated else 0
        if lost or duplicated:
            detail = (
                f"{where}: accepted {dict(sorted(wanted.items()))}, collected "
                f"{[dict(sorted(b.items())) for b in entries]}"
            )
            for kind, amount in (("lost", lost), ("duplicated", duplicated)):
                if amount and len(examples[kind]) < EXAMPLES:
                    examples[kind].append(detail)
    return {
        "by_group": groups,
        "lost": sum(g["lost"] for g in groups.values()),
        "duplicated": sum(g["duplicated"] for g in groups.values()),
        "lost_examples": examples["lost"],
        "duplicated_examples": examples["duplicated"],
    }


def compare_awards(
    awards: Mapping[str, int], paid: Mapping[str, int], unpaid: Sequence[str] = ()
) -> dict[str, Any]:
    """Award by award: ``awards`` how often the ledger awarded each id, ``paid`` how many PAID
    transitions the payout service has for each id it knows (its payouts), ``unpaid`` the ids
    whose payout is neither paid nor voided when every award had to be settled."""
    twice_awarded = sorted(a for a, n in awards.items() if n > 1)
    without_payout = sorted(a for a in awards if a not in paid)
    without_award = sorted(a for a in paid if a not in awards)
    paid_twice = sorted(a for a, n in paid.items() if n > 1)
    never_paid = sorted(unpaid)
    return {
        "awarded": len(awards),
        "payouts": len(paid),
        "awarded_twice": twice_awarded[:EXAMPLES],
        "awards_without_payout": without_payout[:EXAMPLES],
        "payouts_without_award": without_award[:EXAMPLES],
        "paid_twice": paid_twice[:EXAMPLES],
        "unpaid": len(never_paid),
        "unpaid_examples": never_paid[:EXAMPLES],
        "ok": not (twice_awarded or without_payout or without_award or paid_twice or never_paid),
    }


async def list_payouts(demo: FloorServices) -> list[payout_pb2.Payout]:
    """Every payout the owning payout instance knows."""
    return await call_owner(
        PayoutTargets(demo.payout_targets()),
        demo.tls("supervisor"),
        lambda stub: all_payouts(stub, call_seconds=5),
    )


def paid_per_award(payouts: Sequence[payout_pb2.Payout]) -> dict[str, int]:
    """How many PAID transitions each award's payout has (more than one is a double payout)."""
    return {
        p.award_id: sum(1 for t in p.history if t.state == payout_pb2.PAYOUT_STATE_PAID)
        for p in payouts
    }


async def finish_floor(
    demo: FloorServices, floor: Floor, playing: asyncio.Task[FloorStats]
) -> FloorStats:
    """Stop the tables and let them finish their round, wait until the pot applied every table
    event (so the ledger holds every award), let the dealers and the supervisor pay what is still
    open (until every award of the ledger has a settled payout, or ``PAYMENTS_SETTLE_SECONDS``),
    then stop."""
    floor.stop_tables()
    await floor.tables_finished()
    await events_applied(demo)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PAYMENTS_SETTLE_SECONDS
    while loop.time() < deadline:
        ledger = await read_ledger(demo.bootstrap, demo.topic("ledger"))
        settled = {p.award_id for p in await list_payouts(demo) if p.state in SETTLED}
        if set(ledger.awards) <= settled:
            break
        await asyncio.sleep(1)
    floor.stop()
    return await playing


async def events_applied(demo: FloorServices) -> bool:
    """Waits (up to ``APPLIED_SETTLE_SECONDS``) until the pot has committed every table event:
    its lag on the table-events topic is 0 at two polls with the same end offsets, so the
    gateways' spools had nothing left to publish either. False if that never happened."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + APPLIED_SETTLE_SECONDS
    before: dict[int, int] | None = None
    while loop.time() < deadline:
        offsets = await group_offsets(
            KafkaConnection({"bootstrap_servers": demo.bootstrap}),
            f"{demo.prefix}-pot",
            demo.topic("table-events"),
        )
        ends = {partition: end for partition, (_, end) in offsets.items()}
        if ends == before and all(done == end for done, end in offsets.values()):
            return True
        before = ends
        await asyncio.sleep(0.5)
    return False


async def judge(
    demo: FloorServices,
    stats: FloorStats,
    totals: Mapping[str, Any],
    require_paid: bool = False,
) -> dict[str, Any]:
    """The books of one floor: rounds, pesos accepted and collected, lost and duplicated bet by
    bet per pot group, awards and payouts per award id (with ``require_paid``: each paid or
    voided, after :func:`finish_floor`), every award against the round oracle, the audit and the
    access log's chain. ``totals``: the demo's report of the floor
    (``jackpot.tools.demo_report.report``, which waits until the ledger caught up with the
    devices' collections and audits it)."""
    books = totals
    # the oracle needs every result applied too (a round settled after the last collection)
    await events_applied(demo)
    ledger = await read_ledger(demo.bootstrap, demo.topic("ledger"), stats.dealt)
    assert ledger.oracle is not None
    payouts = await list_payouts(demo)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PAYOUTS_SETTLE_SECONDS
    while any(a not in paid_per_award(payouts) for a in ledger.awards) and loop.time() < deadline:
        await asyncio.sleep(1)  # the payout service orders an award a moment after the pot
        payouts = await list_payouts(demo)
    unpaid = [p.award_id for p in payouts if p.state not in SETTLED] if require_paid else []
    verdict = books_verdict(
        books,
        compare_bets(stats.bets_by_round, ledger.collections),
        compare_awards(ledger.awards, paid_per_award(payouts), unpaid),
        stats.rejects.get("GATEWAY_UNREACHABLE", 0),
    )
    return with_oracle(verdict, ledger.oracle.report())


def with_oracle(verdict: Mapping[str, Any], oracle: Mapping[str, Any]) -> dict[str, Any]:
    """The books with the round oracle's report (``awards_oracle``): they pass only if it ran
    over the floor's rounds and every award of the ledger is what the rules give (S1-S9, P, E2,
    E3, X2), besides everything :func:`books_verdict` requires."""
    return {
        **verdict,
        "awards_oracle": dict(oracle),
        "books_ok": bool(verdict["books_ok"] and oracle["ok"]),
    }


def books_verdict(
    books: Mapping[str, Any],
    bets: Mapping[str, Any],
    awards: Mapping[str, Any],
    rounds_voided_by_resync: int = 0,
) -> dict[str, Any]:
    """The floor's books passed only if the audit and its chain hold, no bet was lost or
    duplicated in any pot group (``compare_bets``) and every award has one payout, paid at most
    once (``compare_awards``)."""
    verdict: dict[str, Any] = {
        "rounds": books["rounds"],
        "rounds_voided_by_resync": rounds_voided_by_resync,
        "bets_accepted": books["bets_accepted"],
        "collected": books["collected"],
        # bet by bet (per group, table, round and seat): a loss and a duplicate never cancel out
        "lost": bets["lost"],
        "duplicated": bets["duplicated"],
        "books_by_group": bets["by_group"],
        "lost_examples": bets["lost_examples"],
        "duplicated_examples": bets["duplicated_examples"],
        # the totals alone, as `jackpot demo` compares them (for reference, not the judge)
        "lost_in_total": books["lost"],
        "duplicated_in_total": books["duplicated"],
        "audit_ok": books["audit_ok"],
        "audit_problems": books["audit_problems"],
        "awards": books["awards"],
        "payouts": awards["payouts"],
        "duplicate_payouts": len(awards["paid_twice"]),
        "unpaid_awards": awards["unpaid"],
        "awards_check": awards,
        # The hash-chained access log (faults, approvals, payments) must hold through the faults.
        "audit_chain": books["audit_chain"],
    }
    verdict["books_ok"] = bool(
        verdict["audit_ok"]
        and books["audit_chain"]["ok"]
        and verdict["lost"] == 0
        and verdict["duplicated"] == 0
        and books["lost"] == 0
        and books["duplicated"] == 0
        and awards["ok"]
    )
    return verdict
