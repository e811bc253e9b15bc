"""The read side of the pot service's API: committed pot group state, pot updates, command outcomes.

Every instance keeps a :class:`PotStateView` of **all** pot groups, whichever instance processes
them, by tailing (read_committed, no consumer group) the compacted state topic from its beginning,
and the pot-update and dead-letter topics from their end. It answers:

- queries: the latest committed state of a group (never the hidden mystery trigger);
- watches: the latest update seen per group, then every update as it is committed;
- admin calls: whether a published command was applied (its event id appears in the group's
  committed state) or refused (a dead letter carries it), see :meth:`expect`.

The ledger is not held in memory: :func:`read_ledger_page` reads a page from Kafka on demand.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition

from jackpot.domain.engine import PotGroup
from jackpot.platform import codec
from jackpot.platform.bundles import ledger_entries
from jackpot.platform.kafka import STARTUP_TOPIC_WAIT_SECONDS, KafkaConnection, stop_client
from jackpot.pot.partitions import key_partition, topic_partitions
from jackpot.pot.settings import PotSettings
from jackpot.pot.state_records import decode_state, locked_round_of
from jackpot.topics import LOCKED_ROUND_PREFIX, is_bookkeeping_key
from jackpot.v1 import dead_letter_pb2, pot_pb2, table_events_pb2

log = structlog.get_logger("jackpot.pot.view")

WATCH_QUEUE_LIMIT = 1000
CATCH_UP_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What became of an admin command: applied, or refused with a reason."""

    event_id: str
    applied: bool
    reason: str = ""  # RejectReason name without the prefix, when refused
    detail: str = ""


@dataclass(slots=True)
class Subscription:
    """One WatchPotGroups stream: its filter and its queue (None in the queue ends it)."""

    group_ids: frozenset[str]
    include_heartbeats: bool
    queue: asyncio.Queue[pot_pb2.PotUpdate | None] = field(
        default_factory=lambda: asyncio.Queue(WATCH_QUEUE_LIMIT)
    )
    overflowed: bool = False

    def wants(self, update: pot_pb2.PotUpdate) -> bool:
        if update.heartbeat and not self.include_heartbeats:
            return False
        return not self.group_ids or update.pot_group_id in self.group_ids


@dataclass(slots=True)
class _Waiter:
    pot_group_id: str
    future: asyncio.Future[CommandOutcome]


class PotStateView:
    """All pot groups' committed state, kept current from Kafka."""

    def __init__(self, settings: PotSettings) -> None:
        self.settings = settings
        self._states: dict[str, bytes] = {}
        self._parsed: dict[str, tuple[pot_pb2.PotGroupState, PotGroup]] = {}
        # pot group id -> table id -> its large locked round's record, written apart
        self._apart: dict[str, dict[str, bytes]] = {}
        self._latest_updates: dict[str, pot_pb2.PotUpdate] = {}
        self._subscriptions: list[Subscription] = []
        self._waiters: dict[str, _Waiter] = {}
        self._consumer: AIOKafkaConsumer | None = None
        self._ready = asyncio.Event()

    # ----------------------------------------------------------------------------- life

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    async def start(self) -> None:
        """Connect and position: state from the beginning, updates and dead letters from now."""
        settings = self.settings
        # earliest: a partition assigned is positioned by the fetcher as soon as it is assigned,
        # and a seek_to_beginning after that was seen to leave the state partition at its end
        # (aiokafka; the view then held no group): the tails are positioned by an explicit seek
        consumer = KafkaConnection.of(settings).consumer(
            client_id=f"{settings.processor.instance_id}-view", auto_offset_reset="earliest"
        )
        await consumer.start()
        self._consumer = consumer
        counts = await topic_partitions(
            settings.kafka_options(),
            [settings.state_topic, settings.pot_updates_topic, settings.dead_letter_topic],
            wait_seconds=STARTUP_TOPIC_WAIT_SECONDS,
        )
        state_tps = _partitions(counts, settings.state_topic)
        tail_tps = _partitions(counts, settings.pot_updates_topic) + _partitions(
            counts, settings.dead_letter_topic
        )
        consumer.assign(state_tps + tail_tps)
        ends = await consumer.end_offsets(state_tps + tail_tps)
        for tp in tail_tps:
            consumer.seek(tp, ends[tp])
        await consumer.seek_to_beginning(*state_tps)
        await self._catch_up({tp: ends[tp] for tp in state_tps})
        self._ready.set()

    async def _catch_up(self, ends: dict[TopicPartition, int]) -> None:
        consumer = self._consumer
        assert consumer is not None
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_SECONDS
        remaining = {tp for tp, end in ends.items() if end > 0}
        while remaining:
            if time.monotonic() > deadline:
                raise TimeoutError("the pot state topic could not be read to its end")
            await self._poll(500)
            for tp in list(remaining):
                if await consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)

    async def run(self) -> None:
        """Follow the topics until cancelled."""
        while True:
            await self._poll(1000)

    def end_watches(self) -> None:
        """End every WatchPotGroups stream (before a graceful stop, so none holds it up)."""
        for subscription in self._subscriptions:
            with contextlib.suppress(asyncio.QueueFull):
                subscription.queue.put_nowait(None)

    async def stop(self) -> None:
        self.end_watches()
        for waiter in self._waiters.values():
            if not waiter.future.done():
                waiter.future.cancel()
        if self._consumer is not None:
            await stop_client(self._consumer)

    async def _poll(self, timeout_ms: int) -> None:
        consumer = self._consumer
        assert consumer is not None
        batch = await consumer.getmany(timeout_ms=timeout_ms)
        settings = self.settings
        for tp, records in batch.items():
            for record in records:
                key = record.key
                if key is None:
                    continue
                try:
                    if tp.topic == settings.state_topic and key.startswith(LOCKED_ROUND_PREFIX):
                        self._on_locked_round(key, record.value)  # its tombstone too
                    elif record.value is None or is_bookkeeping_key(key):
                        continue  # a heartbeat's update-sequence mark, the processor's offset
                    elif tp.topic == settings.state_topic:
                        self._on_state(key.decode(), record.value)
                    elif tp.topic == settings.pot_updates_topic:
                        self._on_update(pot_pb2.PotUpdate.FromString(record.value))
                    elif tp.topic == settings.dead_letter_topic:
                        self._on_dead_letter(dead_letter_pb2.DeadLetter.FromString(record.value))
                except Exception as error:  # one unreadable record must not stop the API
                    log.warning(
                        "view_record_unreadable",
                        topic=tp.topic,
                        partition=tp.partition,
                        offset=record.offset,
                        error=repr(error),
                    )

    # ------------------------------------------------------------------------- records

    def _on_state(self, group_id: str, data: bytes) -> None:
        self._states[group_id] = data
        self._parsed.pop(group_id, None)
        if not self._waiters:
            return
        state = pot_pb2.PotGroupState.FromString(data)
        for event_id in state.recent_event_ids:
            waiter = self._waiters.get(event_id)
            if waiter is not None and not waiter.future.done():
                waiter.future.set_result(CommandOutcome(event_id, applied=True))

    def _on_locked_round(self, key: bytes, data: bytes | None) -> None:
        """A locked round written apart (``jackpot.pot.state_records``), or its tombstone."""
        group_id, table_id = locked_round_of(key)
        if data is None:
            self._apart.get(group_id, {}).pop(table_id, None)
        else:
            self._apart.setdefault(group_id, {})[table_id] = data
        self._parsed.pop(group_id, None)

    def _on_update(self, update: pot_pb2.PotUpdate) -> None:
        previous = self._latest_updates.get(update.pot_group_id)
        if previous is not None and previous.update_sequence >= update.update_sequence:
            return
        self._latest_updates[update.pot_group_id] = update
        for subscription in self._subscriptions:
            if subscription.overflowed or not subscription.wants(update):
                continue
            try:
                subscription.queue.put_nowait(update)
            except asyncio.QueueFull:
                # A watcher that cannot keep up is cut off rather than slowing everyone down.
                subscription.overflowed = True
                with contextlib.suppress(asyncio.QueueEmpty):
                    subscription.queue.get_nowait()
                subscription.queue.put_nowait(None)

    def _on_dead_letter(self, letter: dead_letter_pb2.DeadLetter) -> None:
        if not self._waiters or letter.source != self.settings.source:
            return
        try:
            event = table_events_pb2.TableEvent.FromString(letter.original)
        except Exception:
            return
        waiter = self._waiters.get(event.event_id)
        if waiter is not None and not waiter.future.done():
            reason = codec.reason_from_proto(letter.reason).value
            waiter.future.set_result(
                CommandOutcome(event.event_id, applied=False, reason=reason, detail=letter.detail)
            )

    # ------------------------------------------------------------------------- queries

    def group(self, group_id: str) -> tuple[pot_pb2.PotGroupState, PotGroup] | None:
        parsed = self._parsed.get(group_id)
        if parsed is None:
            data = self._states.get(group_id)
            if data is None:
                return None
            parsed = decode_state(data, self._apart.get(group_id))
            self._parsed[group_id] = parsed
        return parsed

    def group_ids(self) -> list[str]:
        return sorted(self._states)

    def latest_updates(self, group_ids: Iterable[str]) -> list[pot_pb2.PotUpdate]:
        wanted = set(group_ids) or set(self._latest_updates)
        return [self._latest_updates[g] for g in sorted(wanted) if g in self._latest_updates]

    def subscribe(self, group_ids: Iterable[str], include_heartbeats: bool) -> Subscription:
        subscription = Subscription(frozenset(group_ids), include_heartbeats)
        self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with contextlib.suppress(ValueError):
            self._subscriptions.remove(subscription)

    def expect(self, event_id: str, group_id: str) -> asyncio.Future[CommandOutcome]:
        """A future resolved when the command with this event id is applied or refused.

        Register it before publishing the command. A command applied before (a retry with the
        same request id) resolves at once from the group's current state.
        """
        future: asyncio.Future[CommandOutcome] = asyncio.get_running_loop().create_future()
        data = self._states.get(group_id)
        if data is not None and event_id in pot_pb2.PotGroupState.FromString(data).recent_event_ids:
            future.set_result(CommandOutcome(event_id, applied=True))
            return future
        self._waiters[event_id] = _Waiter(group_id, future)
        return future

    def forget(self, event_id: str) -> None:
        self._waiters.pop(event_id, None)


def _partitions(counts: dict[str, int], topic: str) -> list[TopicPartition]:
    if topic not in counts:
        raise RuntimeError(f"topic {topic} does not exist")
    return [TopicPartition(topic, p) for p in range(counts[topic])]


async def read_ledger_page(
    settings: PotSettings, group_id: str, page_size: int, page_token: str
) -> tuple[list[pot_pb2.LedgerEntry], str]:
    """Up to ``page_size`` ledger entries of a group from the token's position, and the next token.

    A page ends between records: a bundle's entries (:mod:`jackpot.platform.bundles`) all go in
    one page, which may then hold more than ``page_size``. The token is
    ``"<partition>:<offset>"`` on the ledger topic; empty means the beginning. The next token
    is empty when the end of the committed ledger was reached.
    """
    async with KafkaConnection.of(settings).reader(settings.ledger_topic) as reader:
        if not reader.partitions:
            raise RuntimeError(f"topic {settings.ledger_topic} does not exist")
        partition = key_partition(group_id, len(reader.partitions))
        offset = 0
        if page_token:
            token_partition, offset = parse_page_token(page_token)
            if token_partition != partition:
                raise ValueError(f"page token {page_token!r} is not for pot group {group_id}")
        _, ends = await reader.bounds([partition])
        key = group_id.encode()
        entries: list[pot_pb2.LedgerEntry] = []
        next_offset = ends[partition]
        async with contextlib.aclosing(reader.records({partition: offset})) as records:
            async for record in records:
                if len(entries) >= page_size:  # a bundle's entries all go in one page
                    next_offset = record.offset
                    break
                if record.key == key and record.value is not None:
                    entries += (entry for entry, _ in ledger_entries(record.value))
        return entries, f"{partition}:{next_offset}" if next_offset < ends[partition] else ""


def parse_page_token(token: str) -> tuple[int, int]:
    try:
        partition, offset = (int(part) for part in token.split(":"))
    except ValueError:
        raise ValueError(f"malformed page token {token!r}") from None
    if partition < 0 or offset < 0:
        raise ValueError(f"malformed page token {token!r}")
    return partition, offset
