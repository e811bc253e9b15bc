"""Brokers gone is not fatal (issue 36 item 4): the pot and the payout turn NOT_SERVING while
their broker is stopped, keep trying, and go on when it returns, with nothing lost or repeated.

Before, a whole-cluster outage made the pot exit: an abort that could not reach the brokers
halted a partition and stopped the service ("pot cannot continue"), and in Kubernetes each exit
while the brokers stayed down lengthened the restart back-off. Uses its own local broker on port
:data:`PORT` (deploy/local/kafka.sh with KAFKA_PORT and JACKPOT_STATE), so stopping it does not
disturb the session's broker.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jackpot.domain.errors import DomainError
from jackpot.payout.service import PayoutService
from jackpot.platform.exactly_once import NotCommitted, NotOwned
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.service import PotService
from jackpot.v1 import pot_pb2
from tests.integration.own_broker import kafka_sh, own_broker
from tests.integration.test_payout import award, ledger_types, payout_settings, publish
from tests.integration.test_pot_service import (
    assert_exactly_once,
    create_topics,
    group_names,
    pot_settings,
    produce,
    scripted_events,
    wait_processed,
)
from tests.integration.test_transaction_atomicity import stopped_at_the_end
from tests.polling import eventually

pytestmark = pytest.mark.integration

PORT = 9592
# Tries seen failing while the broker is down: the service kept trying, and did not exit.
FAILED_TAKEOVERS_WANTED = 3
OUTAGE_BOUND_SECONDS = 60.0  # a stop and a restart of a broker on a loaded two-core machine
FAST_RECOVERY = {"transaction_deadline_ms": 2_000, "recovery_backoff_max_ms": 1_000}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One broker for the module's tests (each test stops and restarts it)."""
    with own_broker(PORT, tmp_path_factory.mktemp("outage") / "state") as env:
        yield env


async def test_the_pot_waits_out_a_broker_outage_not_serving_and_loses_nothing(
    broker: dict[str, str], unique: str
) -> None:
    settings = pot_settings(f"127.0.0.1:{PORT}", unique, partitions=2, **FAST_RECOVERY)
    await create_topics(settings)
    events = scripted_events(group_names(2, 2), rounds_per_table=30, seed=36)
    half = len(events) // 2
    await produce(settings, events[:half])
    service = PotService(settings, PotMetrics())
    failed = service.metrics.processor.takeovers_failed
    async with stopped_at_the_end(service.run()) as pot:
        await wait_processed(settings)
        assert service.serving_flag.serving
        await kafka_sh("down", broker)
        await eventually(  # its heartbeats' transactions fail: it cannot write, and says so
            lambda: not service.serving_flag.serving or pot.done(),
            "the pot never reported NOT_SERVING",
            within=OUTAGE_BOUND_SECONDS,
        )
        await eventually(
            lambda: failed._value.get() >= FAILED_TAKEOVERS_WANTED or pot.done(),
            "the pot did not keep trying",
            within=OUTAGE_BOUND_SECONDS,
        )
        await eventually(  # nothing served from a state it cannot write
            lambda: service.owned_groups() == [] or pot.done(),
            "the pot went on serving groups it could not write",
            within=OUTAGE_BOUND_SECONDS,
        )
        assert not pot.done(), f"the pot exited: {pot.exception()!r}"
        await kafka_sh("up", broker)
        await produce(settings, events[half:])
        await wait_processed(settings)
        await eventually(
            lambda: service.serving_flag.serving, "the pot never served again", within=60
        )
        assert not pot.done(), f"the pot exited: {pot.exception()!r}"
        assert service.owned_partitions == [0, 1]
    await assert_exactly_once(settings, events, partitions=2)


async def test_the_payout_waits_out_a_broker_outage_not_serving_and_orders_each_prize_once(
    broker: dict[str, str], unique: str
) -> None:
    settings = await payout_settings(f"127.0.0.1:{PORT}", unique)
    settings = settings.replace(processor=FAST_RECOVERY)
    before, after = award("R1", 2, "FLUSH", 50_000), award("R2", 5, "FULL_HOUSE", 100_000)
    await publish(settings, before)
    service = PayoutService(settings)
    failed = service.processor.metrics.takeovers_failed
    async with stopped_at_the_end(service.run()) as payout:
        await eventually(lambda: before.award_id in service.book.payouts, "never ordered", 30)
        await eventually(lambda: service.serving, "the payout never served", within=30)
        await kafka_sh("down", broker)
        # A dealer confirms a payment during the outage: refused, never half written.
        with pytest.raises((NotCommitted, NotOwned, DomainError)):
            await service.paid(before.table_id, before.award_id, "dealer-ana")
        await eventually(
            lambda: not service.serving or payout.done(),
            "the payout never reported NOT_SERVING",
            within=OUTAGE_BOUND_SECONDS,
        )
        await eventually(
            lambda: failed._value.get() >= FAILED_TAKEOVERS_WANTED or payout.done(),
            "the payout did not keep trying",
            within=OUTAGE_BOUND_SECONDS,
        )
        assert not payout.done(), f"the payout exited: {payout.exception()!r}"
        await kafka_sh("up", broker)
        await eventually(lambda: service.serving, "the payout never served again", within=60)
        await publish(settings, after)
        await eventually(lambda: after.award_id in service.book.payouts, "never ordered", 30)
        paid = await service.paid(before.table_id, before.award_id, "dealer-ana")
        assert paid.award_id == before.award_id
        assert not payout.done(), f"the payout exited: {payout.exception()!r}"
    ordered = pot_pb2.LedgerEntryType.Name(pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED)
    trail = await ledger_types(settings, 3)
    assert sorted(trail) == sorted(
        [
            (before.award_id, ordered),
            (after.award_id, ordered),
            (before.award_id, pot_pb2.LedgerEntryType.Name(pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID)),
        ]
    )
