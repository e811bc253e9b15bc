"""A table's progressive status is told when it changes, and only then (rules D5, E1); a round
opened before its pot group is heard takes the group's limits once it is.

The gateway's watchdog refreshes every table four times a second. Until 2026-12-03 an open
table compared its reason (None) with the stored one ("") and so "changed" at every refresh:
each open table logged ``progressive_opened`` and pushed a ProgressiveStatus to its controller
four times a second (8,199 warnings in a two-minute load test of 40 tables).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from jackpot.domain.cards import Game
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.table_messages import AddCredits, OpenRound, PlaceBet
from jackpot.gateway.service import Gateway, Session
from jackpot.gateway.settings import GatewaySettings, TableSettings
from jackpot.gateway.spool import Spool
from jackpot.v1 import pot_pb2
from tests.clocks import FakeClock

pytestmark = pytest.mark.unit

TABLE = "T-CAR"
GROUP = "g"
SETTINGS = GatewaySettings(
    name="status",
    heartbeat_timeout_seconds=3,
    tables=(
        TableSettings(table_id=TABLE, game=Game.CARIBBEAN, pot_group_id=GROUP, credential="c" * 24),
    ),
)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[Gateway, Session, FakeClock]]:
    spool = Spool(tmp_path / "spool.sqlite")
    clock = FakeClock(1000.0)
    made = Gateway(SETTINGS, spool, clock=clock)
    session = made.sessions[TABLE] = Session(TABLE)
    yield made, session, clock
    spool.close()


def heartbeat(gateway: Gateway) -> None:
    gateway.apply_pot_update(
        pot_pb2.PotUpdate(
            pot_group_id=GROUP, min_bet=1000, max_bet=5000, credit_value=1000, sign_value=500_000
        )
    )


def statuses(session: Session) -> list[tuple[bool, str]]:
    """The ProgressiveStatus messages queued for the controller since the last call."""
    told = []
    while not session.outbox.empty():
        message = session.outbox.get_nowait()
        if message is not None and message.HasField("progressive_status"):
            told.append((message.progressive_status.open, message.progressive_status.reason))
    return told


def test_an_open_table_is_told_once_not_at_every_watchdog_refresh(
    gateway: tuple[Gateway, Session, FakeClock],
) -> None:
    service, session, _ = gateway
    with capture_logs() as opening:
        heartbeat(service)
    assert statuses(session) == [(True, "")]
    assert [e["event"] for e in opening if e["event"].startswith("progressive")] == [
        "progressive_opened"
    ]
    with capture_logs() as refreshing:
        for _ in range(8):  # two seconds of the watchdog
            service._refresh_all()
    assert statuses(session) == []
    assert [e for e in refreshing if e["event"].startswith("progressive")] == []
    assert service.tables[TABLE].progressive_open


def test_a_silent_pot_closes_the_table_once_and_its_return_reopens_it_once(
    gateway: tuple[Gateway, Session, FakeClock],
) -> None:
    service, session, clock = gateway
    heartbeat(service)
    statuses(session)
    clock.now += 3.5  # past heartbeat_timeout_seconds without an update
    for _ in range(4):
        service._refresh_all()
    assert statuses(session) == [(False, f"pot group {GROUP} silent for over 3 s")]
    assert not service.tables[TABLE].progressive_open
    heartbeat(service)  # the same limits: the watchdog's next refresh reopens the table
    for _ in range(4):
        service._refresh_all()
    assert statuses(session) == [(True, "")]
    assert service.tables[TABLE].progressive_open


def test_E1_D5_a_round_opened_before_the_group_is_heard_takes_its_limits(
    gateway: tuple[Gateway, Session, FakeClock],
) -> None:
    """A gateway just started: the dealer opens a round while the table is closed and its limits
    unknown, and a bet is refused as closed (D5). Once the pot group is heard the round takes the
    group's limits (E1: none of its bets was judged by others), and a bet within them is
    accepted, not refused as outside 0-0 until the round ends."""
    service, _, _ = gateway
    table = service.tables[TABLE]
    table.apply(OpenRound("R1"))
    table.apply(AddCredits(1, 10))
    with pytest.raises(DomainError) as closed:
        table.apply(PlaceBet(1, 2))
    assert closed.value.reason is Reason.PROGRESSIVE_CLOSED
    heartbeat(service)
    assert table.progressive_open
    assert (table.limits.min_bet, table.limits.max_bet) == (1000, 5000)
    table.apply(PlaceBet(1, 2))  # 2,000 pesos: within the group's limits
    assert table.seats[1].bet_credits == 2
