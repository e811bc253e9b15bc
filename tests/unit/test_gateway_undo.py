"""A device event whose spool write fails leaves its table exactly as the spool still has it: the
same state and the same remembered fingerprints (the resend window), so the device's resend is
judged as new, not as a duplicate of an event that was never stored."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from loadtest.bench_memory import request

from jackpot.domain.cards import Game
from jackpot.domain.table import REMEMBERED_OUTCOMES, Limits, Table
from jackpot.gateway.service import Gateway
from jackpot.gateway.settings import GatewaySettings, TableSettings
from jackpot.gateway.spool import Spool, SpoolWrite
from jackpot.v1 import device_pb2

TABLE = "T-CAR"
SETTINGS = GatewaySettings(
    name="undo",
    tables=(
        TableSettings(table_id=TABLE, game=Game.CARIBBEAN, pot_group_id="g", credential="c" * 24),
    ),
)


class FailingSpool(Spool):
    """A real spool whose next commits fail while ``failing`` (a full or broken disk)."""

    failing = False

    def commit_many(self, changes: list[SpoolWrite]) -> None:
        if self.failing:
            raise sqlite3.OperationalError("disk I/O error")
        super().commit_many(changes)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[Gateway, FailingSpool]]:
    spool = FailingSpool(tmp_path / "spool.sqlite")
    made = Gateway(SETTINGS, spool)
    made.tables[TABLE] = Table(TABLE, Game.CARIBBEAN, Limits(1000, 5000, 1000))
    yield made, spool
    spool.close()


def credits(sequence: int) -> bytes:
    return request(sequence, TABLE, "", credits_added=device_pb2.CreditsAdded(seat=1, credits=1))


def test_a_failed_write_restores_the_table_and_its_resend_window_exactly(
    gateway: tuple[Gateway, FailingSpool],
) -> None:
    service, spool = gateway
    for sequence in range(1, REMEMBERED_OUTCOMES + 1):  # the window full: the next one evicts
        (reply, *_) = service.handle_event(TABLE, credits(sequence))
        assert reply.reply.accepted
    before = service.tables[TABLE].to_state()
    spool.failing = True
    with pytest.raises(sqlite3.OperationalError):
        service.handle_event(TABLE, credits(REMEMBERED_OUTCOMES + 1))
    assert service.tables[TABLE].to_state() == before  # the oldest fingerprint is back too
    spool.failing = False
    (again, *_) = service.handle_event(TABLE, credits(REMEMBERED_OUTCOMES + 1))
    assert again.reply.accepted
    assert not again.reply.duplicate  # stored now, for the first time
    (oldest, *_) = service.handle_event(TABLE, credits(2))  # still inside the window
    assert oldest.reply.duplicate
