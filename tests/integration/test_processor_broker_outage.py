"""Brokers gone is not fatal (issue 36 item 4): the pot and the payout turn NOT_SERVING while
their broker is stopped, keep trying, and go on when it returns, with nothing lost or repeated.

An idle payout (nothing to write) notices the outage too, through the processor's broker probe
(platform/broker_probe.py): before the probe, it reported SERVING until its next write.

Before, a whole-cluster outage made the pot exit: an abort that could not reach the brokers
halted a partition and stopped the service ("pot cannot continue"), and in Kubernetes each exit
while the brokers stayed down lengthened the restart back-off. Uses its own local broker on port
:data:`PORT` (deploy/local/kafka.sh with KAFKA_PORT and JACKPOT_STATE), so stopping it does not
disturb the session's broker.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jackpot.domain.errors import DomainError
from jackpot.payout.service import PayoutService
from jackpot.platform.broker_probe import BrokerProbe
from jackpot.platform.kafka import KafkaConnection
from jackpot.platform.processor_errors import NotCommitted, NotOwned
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.service import PotService
from jackpot.v1 import pot_pb2
from tests.integration.own_broker import all_threads_stopped, kafka_sh, own_broker
from tests.integration.test_payout import award, ledger_types, payout_settings, publish
from tests.integration.test_pot_service import (
    assert_exactly_once,
    create_topics,
    environment,
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
IDLE_SECONDS = 3.0  # three of the payout's ticks without a transaction
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


async def test_an_idle_payout_reports_not_serving_through_an_outage_and_serving_after(
    broker: dict[str, str], unique: str
) -> None:
    """No award, no dealer call, no write during the outage: the probe alone turns it
    NOT_SERVING, and SERVING again once the broker is back. Before the probe it stayed
    SERVING for the whole outage."""
    settings = await payout_settings(f"127.0.0.1:{PORT}", unique)
    settings = settings.replace(processor=FAST_RECOVERY)
    service = PayoutService(settings)
    async with stopped_at_the_end(service.run()) as payout:
        await eventually(lambda: service.serving, "the payout never served", within=30)
        await eventually(idle_for(service, IDLE_SECONDS), "the payout never fell idle", 60)
        await kafka_sh("down", broker)
        await eventually(
            lambda: not service.serving or payout.done(),
            "an idle payout went on reporting SERVING with its broker stopped",
            within=OUTAGE_BOUND_SECONDS,
        )
        assert not payout.done(), f"the payout exited: {payout.exception()!r}"
        assert service.processor.metrics.writable._value.get() == 0
        await kafka_sh("up", broker)
        await eventually(lambda: service.serving, "the payout never served again", within=60)
        assert not payout.done(), f"the payout exited: {payout.exception()!r}"
        assert service.processor.metrics.writable._value.get() == 1


async def test_a_pot_started_while_its_broker_is_down_waits_for_it_and_then_serves(
    broker: dict[str, str], unique: str, tmp_path: Path
) -> None:
    """Before, `jackpot pot` started during an outage exited at once ("Unable to bootstrap"),
    and so did each restart (fault campaign seed 36427: four in 20 s); in Kubernetes each exit
    lengthens the restart back-off. Now it waits for the brokers, saying so, and serves once
    they answer; SIGTERM while it waits is a clean stop."""
    settings = pot_settings(f"127.0.0.1:{PORT}", unique, partitions=2)
    await create_topics(settings)
    events = scripted_events(group_names(2, 2), rounds_per_table=5, seed=3642)
    await kafka_sh("down", broker)
    log = tmp_path / "pot.log"
    env = {**environment(settings), "JACKPOT_LOG_LEVEL": "INFO"}  # its partitions_assigned
    with log.open("wb") as sink:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "jackpot.cli", "pot", env=env, stderr=sink
        )
    try:
        await eventually(
            lambda: (
                log.read_text(errors="replace").count("service_waiting_for_brokers") >= 2
                or process.returncode is not None
            ),
            "the pot neither waited for its broker nor exited",
            within=OUTAGE_BOUND_SECONDS,
        )
        assert process.returncode is None, (
            f"the pot exited ({process.returncode}) with its broker down: "
            f"{log.read_text(errors='replace')[-2000:]}"
        )
        await kafka_sh("up", broker)
        await produce(settings, events)
        await eventually(
            lambda: "partitions_assigned" in log.read_text(errors="replace"),
            "the pot never took its partitions after its broker came back",
            within=OUTAGE_BOUND_SECONDS,
        )
        await wait_processed(settings, log=log)
        assert "service_brokers_answer" in log.read_text(errors="replace")
        assert process.returncode is None
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 60) == 0
    await assert_exactly_once(settings, events, partitions=2)


def idle_for(service: PayoutService, seconds: float) -> Callable[[], bool]:
    """A check that holds once no transaction committed for ``seconds`` (after a takeover a
    payout writes its mark; then, with no award and no dealer call, nothing)."""
    histogram = service.processor.metrics.transaction_seconds
    last = [-1.0, time.monotonic()]

    def check() -> bool:
        count = sum(
            sample.value
            for metric in histogram.collect()
            for sample in metric.samples
            if sample.name.endswith("_count")
        )
        if count != last[0]:
            last[:] = [count, time.monotonic()]
        return time.monotonic() - last[1] >= seconds

    return check


def broker_pid(env: dict[str, str]) -> int:
    pid_file = Path(env["JACKPOT_STATE"]) / "kafka" / f"single-{PORT}" / "kafka.pid"
    return int(pid_file.read_text().strip())


async def test_the_probe_hears_a_broker_that_answers_and_not_one_paused_or_stopped(
    broker: dict[str, str],
) -> None:
    """What the probe relies on from aiokafka, on the real broker: a request to a SIGSTOPped
    broker does not answer (it would hang for the client's 40 s request timeout; the probe's
    deadline cuts it), one to a stopped broker fails, and the client reconnects after both."""
    heard: list[bool] = []
    connection = KafkaConnection({"bootstrap_servers": f"127.0.0.1:{PORT}"})
    probe = BrokerProbe(connection.client(), interval=3600, deadline=2.0, on_change=heard.append)
    await probe.start()
    try:
        assert await probe.ask()
        pid = broker_pid(broker)
        os.kill(pid, signal.SIGSTOP)
        try:
            await eventually(lambda: all_threads_stopped(pid), "the broker never stopped", 10)
            started = time.monotonic()
            assert not await probe.ask(), "a paused broker was heard"
            assert time.monotonic() - started < 10, "the deadline did not cut the request"
        finally:
            os.kill(pid, signal.SIGCONT)
        await eventually(probe.ask, "the resumed broker was never heard", within=30)
        await kafka_sh("down", broker)
        assert not await probe.ask(), "a stopped broker was heard"
        await kafka_sh("up", broker)
        await eventually(probe.ask, "the restarted broker was never heard", within=60)
    finally:
        await probe.stop()
    assert heard == []  # ask() answers; only the probe's own loop (and heard()) tell on_change
