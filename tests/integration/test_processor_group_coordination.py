"""A group consumer whose coordination ended is replaced, not fatal (issue 36; fault campaign
seed 36427).

aiokafka's group coordinator runs one background task; any unexpected error in it ends the task,
and from then on every ``getmany`` raises ``KafkaError("Unexpected error during coordination
...")``: the consumer never joins its group again. In the campaign a whole-cluster restart did it
(``RuntimeError('unable to perform operation on <TCPTransport closed=True ...>; the handler is
closed')``) and the pot exited ("pot cannot continue"). Here the same error is raised where it was
raised then, in the coordination task of a pot running on the real broker; the pot gives up its
partitions, joins the group with a new consumer, takes its partitions over again (fenced, restored)
and processes the rest, each event once.
"""

from __future__ import annotations

from typing import Any

import pytest

from jackpot.pot.metrics import PotMetrics
from jackpot.pot.service import PotService
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

CAMPAIGN_ERROR = (
    "unable to perform operation on <TCPTransport closed=True reading=False>; the handler is closed"
)


def end_coordination(consumer: Any) -> None:
    """Make the consumer's coordination task meet the error the campaign saw, at its next turn
    (the coordinator lookup it starts each turn with), and wake it for that turn."""
    coordinator = consumer._coordinator

    async def transport_closed() -> None:
        raise RuntimeError(CAMPAIGN_ERROR)

    coordinator.ensure_coordinator_known = transport_closed
    coordinator.request_rejoin()


async def test_the_pot_replaces_a_group_consumer_whose_coordination_ended_and_loses_nothing(
    kafka_bootstrap: str, unique: str
) -> None:
    settings = pot_settings(kafka_bootstrap, unique, partitions=2)
    await create_topics(settings)
    events = scripted_events(group_names(2, 2), rounds_per_table=20, seed=36427)
    half = len(events) // 2
    await produce(settings, events[:half])
    service = PotService(settings, PotMetrics())
    processor = service.processor
    async with stopped_at_the_end(service.run()) as pot:
        await wait_processed(settings)
        lost = processor._consumer
        assert lost is not None
        assert service.owned_partitions == [0, 1]
        end_coordination(lost)
        await eventually(
            lambda: lost._coordinator._coordination_task.done(),
            "the coordination task did not end",
        )
        await produce(settings, events[half:])
        await eventually(
            lambda: (
                pot.done()
                or (processor._consumer not in (None, lost) and service.owned_partitions == [0, 1])
            ),
            "the pot did not take its partitions over with a new group consumer",
            within=60,
        )
        assert not pot.done(), f"the pot exited: {pot.exception()!r}"
        await wait_processed(settings)
        await eventually(lambda: service.serving_flag.serving, "the pot never served again")
        assert service.metrics.processor.group_consumers_replaced._value.get() == 1
        assert not pot.done(), f"the pot exited: {pot.exception()!r}"
    await assert_exactly_once(settings, events, partitions=2)
