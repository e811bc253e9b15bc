"""The publisher's acknowledgements: the spool deletes only through the first record the broker
has not acknowledged; records acknowledged after it are not sent again (issue 36 item 7)."""

from __future__ import annotations

import pytest

from jackpot.gateway.publisher import Acknowledgements
from jackpot.gateway.spool import OutboxRecord

pytestmark = pytest.mark.unit


def outbox(*ids: int) -> list[OutboxRecord]:
    return [OutboxRecord(i, "t", b"k", b"v%d" % i, 0) for i in ids]


def test_a_record_not_acknowledged_holds_back_the_deletion_of_those_after_it() -> None:
    acks = Acknowledgements()
    pending = outbox(1, 2, 3, 4)
    assert not acks.add(pending, outbox(2, 4))  # 1 refused: nothing may be deleted
    assert acks.through == 0
    assert [r.id for r in acks.unsent(pending)] == [1, 3]  # 2 and 4 are not sent again
    assert acks.add(pending, outbox(1))
    assert acks.through == 2  # 3 still waits
    pending = outbox(3, 4, 5)
    assert [r.id for r in acks.unsent(pending)] == [3, 5]
    assert acks.add(pending, outbox(3, 5))
    assert acks.through == 5
    assert acks.unsent(outbox(6)) == outbox(6)


def test_a_round_wholly_acknowledged_moves_the_deletion_to_its_end() -> None:
    acks = Acknowledgements()
    assert acks.add(outbox(7, 8, 9), outbox(7, 8, 9))
    assert acks.through == 9
    assert not acks.add(outbox(10), [])
    assert acks.through == 9
