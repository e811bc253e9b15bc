"""Binary golden ledgers (issue 23): a ledger written by the code of one day stays readable by
every later version.

``python -m tests.golden_ledgers --write`` plays a floor through the real pot processor (three
tables on a group with an overflowing reserve, a mystery pot, a configuration change that waits
for a reset, a table unlinked, a studio round of :data:`STUDIO_BETS` winning bets, checkpoints
every 40 entries) and the payout domain (every award ordered; most paid, large ones approved
first, one voided), then writes, under ``tests/golden/ledgers/``:

- ``<name>.ledger``: every record's value as the ledger topic held it (the studio round's prizes
  in bundles, :mod:`jackpot.platform.bundles`; ledgers before 2026-12-05 have none), each
  prefixed by its length (4 bytes, big-endian), in offset order, one partition;
- ``<name>.figures.json``: what the audit of that day computed of it.

Run it only to add a new golden ledger (a new name): the files are the frozen output of the code
that wrote them, and ``tests/unit/test_golden_ledgers.py`` requires today's code to read, audit
and report every one of them to the same figures.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from loadtest.rounds import interleaved_rounds

from jackpot.domain import payout as payouts
from jackpot.payout.codec import ledger_entry
from jackpot.platform.bundles import bundle_ledger, ledger_entries
from jackpot.pot import commands
from jackpot.pot.ledger_audit import AWARD_TYPES, GroupAudit
from jackpot.v1 import common_pb2, pot_pb2, table_events_pb2
from tests.book_pot import caribbean
from tests.unit.test_restore import GROUP, MYSTERY_CONFIG, Floor, played

FOLDER = Path(__file__).parent / "golden" / "ledgers"
APPROVAL_THRESHOLD = 100_000  # pesos: larger prizes wait for a supervisor
STUDIO, STUDIO_BETS = "S-GOLDEN", 150  # more winners than a bundle's least (BUNDLE_FROM)


def read_ledger(path: Path) -> Iterator[bytes]:
    """The record values of a golden ledger file, in order."""
    data = path.read_bytes()
    at = 0
    while at < len(data):
        (size,) = struct.unpack_from(">I", data, at)
        yield data[at + 4 : at + 4 + size]
        at += 4 + size


def figures(values: list[bytes]) -> dict[str, Any]:
    """What the audit computes of a ledger: per group, its books and its verdict."""
    groups: dict[str, GroupAudit] = {}
    for value in values:
        for entry, raw in ledger_entries(value):
            groups.setdefault(entry.pot_group_id, GroupAudit(entry.pot_group_id)).add(entry, raw)
    return {
        group_id: {
            **audit.figures(),
            "entries": audit.entries,
            "last_sequence": audit.last_sequence,
            "checkpoints": audit.checkpoints,
            "chain": audit.chain.hex() if audit.chain is not None else None,
            "paid": [audit.paid_count, audit.paid_pesos],
            "voided": audit.voided_count,
            "open_awards": dict(sorted(audit.open_awards.items())),
            "problems": audit.problems,
        }
        for group_id, audit in sorted(groups.items())
    }


def payout_entries(award: pot_pb2.LedgerEntry, index: int) -> list[pot_pb2.LedgerEntry]:
    """The payout service's lifecycle entries of one award, as its domain makes them."""
    detail = json.loads(award.detail_json)
    at_ns = award.recorded_at.ToNanoseconds() + 10**9
    payout = payouts.order_payout(
        award_id=detail["award_id"],
        pot_group_id=award.pot_group_id,
        table_id=award.table_id,
        round_id=award.round_id,
        seat=award.seat,
        prize=award.prize,
        amount=award.amount,
        cards=(),
        order=index,
        approval_threshold=APPROVAL_THRESHOLD,
        at_ns=at_ns,
    )
    steps = [payout]
    if payout.state is payouts.PayoutState.AWAITING_APPROVAL:
        steps.append(payouts.approve(steps[-1], "supervisor-ana", at_ns + 10**9))
    if index == 1:
        steps.append(payouts.void(steps[-1], "supervisor-ana", "table closed", at_ns + 2 * 10**9))
    elif index % 7 != 6:  # a few left open
        steps.append(payouts.pay(steps[-1], "dealer-luis", at_ns + 3 * 10**9))
    return [ledger_entry(step) for step in steps]


def studio_round(floor: Floor) -> None:
    """A studio table linked, and a round whose :data:`STUDIO_BETS` bets all win a straight
    flush shared among them (O4): one table event, more prizes than a bundle's least."""
    link = caribbean(STUDIO, site="studio", studio_seats=STUDIO_BETS)
    bets = {seat: 1000 + 1000 * (seat % 3) for seat in range(1, STUDIO_BETS + 1)}
    players = {seat: f"player-{seat:04d}" for seat in bets}
    hand = table_events_pb2.RoundResult(shared_hand=["9S", "8S", "7S", "6S", "5S"])
    rounds = [
        commands.table_event(GROUP, STUDIO, "SR1", n, common_pb2.GAME_CARIBBEAN, **step)
        for n, step in enumerate(
            [{"round_locked": commands.locked(bets, players)}, {"round_result": hand}], 1
        )
    ]
    floor.play([commands.link_table(GROUP, link), *rounds])


def golden_floor() -> list[bytes]:
    """Every ledger record of the golden floor, with the payouts after their awards."""
    floor, tables = played(80, checkpoint_entries=40)
    floor.play([commands.unlink_table(GROUP, tables[2].table_id, "ana", "table moved")])
    studio_round(floor)
    floor.play(list(interleaved_rounds(tables[:2], 10, random.Random(4))))
    floor.play([commands.propose_config(GROUP, {**MYSTERY_CONFIG, "version": 3}, "ana", "v3")])
    values: list[bytes] = []
    awards = 0
    raws = [entry.SerializeToString() for entry in floor.ledger]
    for _, record in bundle_ledger(floor.ledger, raws):  # as the pot writes them
        values.append(record)
        for entry, _ in ledger_entries(record):
            if entry.type in AWARD_TYPES:
                values += [e.SerializeToString() for e in payout_entries(entry, awards)]
                awards += 1
    return values


def write(name: str) -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    values = golden_floor()
    with (FOLDER / f"{name}.ledger").open("wb") as out:
        for value in values:
            out.write(struct.pack(">I", len(value)) + value)
    stored = json.dumps(figures(values), indent=1, sort_keys=True) + "\n"
    (FOLDER / f"{name}.figures.json").write_text(stored)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", metavar="NAME", required=True, help="e.g. 2026-12-01")
    write(parser.parse_args().write)


if __name__ == "__main__":
    main()
