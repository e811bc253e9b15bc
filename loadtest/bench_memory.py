"""Resident memory of a gateway fed 20,000 hostile device inputs (a bound of ``make bench``).

One gateway over a real SQLite spool (never started: no Kafka, no network) gets endless hostile
traffic on two tables' sessions: a fifth of it accepted events (credits in and out, which grow the
remembered fingerprints to their cap and the outbox on disk), the rest random and oversized bytes,
bets on impossible seats, replayed sequence numbers and bit-flipped events. After a warm-up of
2,000 inputs the process's resident memory must grow by less than 8 MB over the next 18,000.

Resident memory depends on everything the process did before, so it is measured in a process of
its own: ``python -m loadtest.bench_memory`` prints one JSON object, and ``loadtest.bench`` prints
the figure beside its bound and fails when it is exceeded. (The deterministic half of the bound,
what tracemalloc sees still allocated, stays in the unit tier: tests/unit/test_fuzz_gateway.py.)

Linux only (``/proc/self/statm``); elsewhere the figure is missing and the bench says so.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog

from jackpot.domain.cards import CARD_CODES, GAME_RULES, Game
from jackpot.domain.table import REMEMBERED_OUTCOMES, Limits
from jackpot.gateway.service import Gateway
from jackpot.gateway.settings import GatewaySettings, TableSettings
from jackpot.gateway.spool import Spool
from jackpot.v1 import device_pb2

WARM_UP, MEASURED = 2_000, 18_000
BOUND_MB = 8.0
MB = 1024 * 1024
CREDENTIAL = "bench-device-secret-0123456789"
SETTINGS = GatewaySettings(
    name="bench-memory",
    tables=(
        TableSettings(table_id="T-DRW", game=Game.DRAW, pot_group_id="g", credential=CREDENTIAL),
        TableSettings(
            table_id="T-GOP", game=Game.GO_POKER, pot_group_id="g", credential=CREDENTIAL
        ),
    ),
)
LIMITS = Limits(1000, 5000, 1000)
UINT32_MAX = 2**32 - 1
DECK = sorted(CARD_CODES)


def request(sequence: int, table_id: str, round_id: str, **payload: Any) -> bytes:
    event = device_pb2.DeviceEvent(sequence=sequence, table_id=table_id, round_id=round_id)
    ((name, message),) = payload.items()
    getattr(event, name).CopyFrom(message)
    return device_pb2.ConnectRequest(event=event).SerializeToString()


def valid_round(table_id: str, game: Game) -> list[bytes]:
    """One round a fresh table accepts step by step, then a cash-out between rounds (the
    material the bit flips here and the gateway's fuzz tests start from)."""
    rules = GAME_RULES[game]
    own = rules.own_cards[0]
    hand = device_pb2.HandCards(seat=1, cards=DECK[:own])
    community = DECK[own : own + rules.community_cards]
    steps: list[dict[str, Any]] = [
        {"round_opened": device_pb2.RoundOpened()},
        {"credits_added": device_pb2.CreditsAdded(seat=1, credits=10)},
        {"bet_placed": device_pb2.BetPlaced(seat=1, credits=2)},
        {"credits_added": device_pb2.CreditsAdded(seat=2, credits=3)},
        {"dealer_lock": device_pb2.DealerLock()},
        {"hand_results": device_pb2.HandResults(hands=[hand], community_cards=community)},
        {"credits_cashed_out": device_pb2.CreditsCashedOut(seat=1, credits=8)},  # between rounds
    ]
    return [
        request(i, table_id, "R1" if i < len(steps) else "", **step)
        for i, step in enumerate(steps, start=1)
    ]


def flip(raw: bytes, position: int) -> bytes:
    data = bytearray(raw)
    data[(position // 8) % len(data)] ^= 1 << (position % 8)
    return bytes(data)


def hostile_inputs(rng: random.Random, gateway: Gateway) -> Iterator[tuple[str, bytes]]:
    """Endless hostile traffic on both sessions, a fifth of it accepted events (credits)."""
    rounds = {t.table_id: valid_round(t.table_id, t.game) for t in SETTINGS.tables}
    while True:
        table_id = rng.choice(sorted(rounds))
        table = gateway.tables[table_id]
        roll = rng.random()
        if roll < 0.2:  # accepted: credits in and out, growing the remembered fingerprints
            credits = rng.randint(1, 50)
            if table.seats[1].credits < 100:
                payload: dict[str, Any] = {
                    "credits_added": device_pb2.CreditsAdded(seat=1, credits=credits)
                }
            else:
                payload = {
                    "credits_cashed_out": device_pb2.CreditsCashedOut(seat=1, credits=credits)
                }
            raw = request(table.last_sequence + 1, table_id, "", **payload)
        elif roll < 0.5:
            raw = rng.randbytes(rng.randint(0, 2000))
        elif roll < 0.55:
            raw = rng.randbytes(rng.randint(65_537, 100_000))  # beyond max_event_bytes
        elif roll < 0.75:
            raw = request(
                table.last_sequence + 1,
                table_id,
                "x" * rng.randint(0, 3000),
                bet_placed=device_pb2.BetPlaced(
                    seat=rng.choice([0, 9, 1000, UINT32_MAX]), credits=UINT32_MAX
                ),
            )
        elif roll < 0.9:  # a replayed sequence number, other content
            raw = request(
                rng.randint(1, max(table.last_sequence, 1)),
                table_id,
                "",
                lamp_fault=device_pb2.LampFault(seat=rng.randint(0, 1000)),
            )
        else:
            raw = flip(rng.choice(rounds[table_id]), rng.randint(0, 2000))
        yield table_id, raw


def resident_bytes() -> int | None:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def measure() -> dict[str, Any]:
    """Feed the gateway in this process; the growth of resident memory after the warm-up."""
    structlog.configure(processors=[_drop])  # 20,000 refusals would flood the output
    with tempfile.TemporaryDirectory() as folder:
        spool = Spool(Path(folder) / "spool.sqlite")
        spool._db.execute("PRAGMA synchronous=OFF")  # durability is not under test here
        try:
            gateway = Gateway(SETTINGS, spool)
            for table in gateway.tables.values():
                table.limits, table.progressive_open = LIMITS, True
            inputs = hostile_inputs(random.Random(9), gateway)
            accepted = 0

            def feed(count: int) -> None:
                nonlocal accepted
                for _ in range(count):
                    table_id, raw = next(inputs)
                    replies = [r.reply for r in gateway.handle_event(table_id, raw)[:1]]
                    accepted += sum(1 for reply in replies if reply.accepted)

            feed(WARM_UP)
            before = resident_bytes()
            feed(MEASURED)
            after = resident_bytes()
            remembered = [len(t.to_state()["seen"]) for t in gateway.tables.values()]
            depth = spool.depth()
        finally:
            spool.close()
    return {
        "inputs": WARM_UP + MEASURED,
        "measured_inputs": MEASURED,
        "accepted": accepted,
        "remembered": remembered,
        "spool_depth": depth,
        "resident_growth_mb": None if before is None or after is None else (after - before) / MB,
        "bound_mb": BOUND_MB,
    }


def problems(result: dict[str, Any]) -> list[str]:
    """Why the figure fails its bound, or does not show what it should (empty: it passes)."""
    found = []
    growth = result["resident_growth_mb"]
    if growth is None:
        found.append("resident memory is not measurable here (no /proc/self/statm)")
    elif growth >= result["bound_mb"]:
        found.append(f"resident memory grew {growth:.1f} MB (bound {result['bound_mb']:g} MB)")
    # The traffic must have done what it is for, or a small figure proves nothing.
    if result["remembered"] != [REMEMBERED_OUTCOMES] * len(SETTINGS.tables):
        found.append(f"remembered fingerprints {result['remembered']}: the cap was not reached")
    if result["spool_depth"] <= result["inputs"] // 2:  # the outbox is on disk, not in memory
        found.append(f"only {result['spool_depth']} records spooled for {result['inputs']} inputs")
    return found


def measure_in_own_process() -> dict[str, Any]:
    """Run :func:`measure` in a fresh interpreter (resident memory is the whole process's)."""
    done = subprocess.run(
        [sys.executable, "-m", "loadtest.bench_memory"], capture_output=True, text=True, timeout=600
    )
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"loadtest.bench_memory printed nothing:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _drop(*_: object) -> Any:
    raise structlog.DropEvent


def main() -> int:
    result = measure()
    print(json.dumps(result))
    return 1 if problems(result) else 0


if __name__ == "__main__":
    raise SystemExit(main())
