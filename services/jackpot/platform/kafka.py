"""Kafka plumbing shared by every service: client construction, security, topic creation.

Nothing here connects at import time; callers pass the bootstrap servers (and the security
options, :class:`KafkaSecurity`) from their settings.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaConnectionError, TopicAlreadyExistsError, for_code

from jackpot.platform.service_settings import KafkaSecurity as KafkaSecurity
from jackpot.topics import TopicSpec

log = structlog.get_logger("jackpot.kafka")
STARTUP_TOPIC_WAIT_SECONDS = 15.0  # how long a starting service waits for its topics to appear
CLIENT_STOP_SECONDS = 10.0  # a client stop that takes longer is cut short and logged


async def ensure_topics(
    bootstrap_servers: str,
    topics: Iterable[TopicSpec],
    replication_factor: int = 1,
    **client_options: Any,
) -> None:
    """Create the topics that do not exist yet; existing ones are left as they are."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, **client_options)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [
            NewTopic(t.name, t.partitions, replication_factor, topic_configs=dict(t.config))
            for t in topics
            if t.name not in existing
        ]
        if missing:
            # Another instance may create them between the listing and now.
            with contextlib.suppress(TopicAlreadyExistsError):
                response = await admin.create_topics(missing)
                # The broker answers per topic; a refusal (ACLs, bad config) is not an exception.
                for topic, code, *message in response.topic_errors:
                    if code not in (0, TopicAlreadyExistsError.errno):
                        raise for_code(code)(f"cannot create topic {topic}: {message}")
    finally:
        await admin.close()


class TopicOwner(Protocol):
    """The settings of a service that creates its topics at start (``create_topics``)."""

    @property
    def create_topics(self) -> bool: ...

    def topic_specs(self) -> list[TopicSpec]: ...
    def kafka_options(self) -> dict[str, Any]: ...


async def ensure_service_topics(
    settings: TopicOwner, replication_factor: int = 1, within_seconds: float | None = None
) -> None:
    """A service's topics at its start, when its settings ask for them. ``within_seconds``: for a
    service that works without the brokers (the gateway spools): a creation that has not ended
    by then, or failed, is logged and left; the topics are made by whoever starts next."""
    if not settings.create_topics:
        return
    options = settings.kafka_options()
    made = ensure_topics(
        options.pop("bootstrap_servers"), settings.topic_specs(), replication_factor, **options
    )
    if within_seconds is None:
        await made
        return
    try:
        await asyncio.wait_for(made, within_seconds)
    except Exception as error:  # the broker away or refusing: the service starts all the same
        log.warning("topics_not_created", error=repr(error), within_seconds=within_seconds)


async def topic_partitions(
    options: Mapping[str, Any], topics: Iterable[str], wait_seconds: float = 0.0
) -> dict[str, int]:
    """Partition count per topic; a topic that does not exist is absent from the result.

    ``options`` are the Kafka client options (bootstrap servers, security), as
    :meth:`jackpot.pot.settings.PotSettings.kafka_options` gives them. ``wait_seconds``: keep
    asking while some topic is missing, for a service starting right after its topics were
    created (a broker may not have the new topics' metadata yet).
    """
    wanted = list(topics)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    admin = AIOKafkaAdminClient(**options)
    await admin.start()
    try:
        while True:
            described = await admin.describe_topics(wanted)
            counts = {
                topic["topic"]: len(topic["partitions"])
                for topic in described
                if topic["error_code"] == 0 and topic["partitions"]
            }
            if len(counts) == len(set(wanted)) or loop.time() >= deadline:
                return counts
            await asyncio.sleep(0.2)
    finally:
        await admin.close()


@dataclass(frozen=True, slots=True)
class KafkaConnection:
    """How a service reaches Kafka: bootstrap servers and security, from its settings.

    Every client the product builds comes from here (``consumer``, ``producer``, ``admin``,
    ``client``, ``reader``), so security options and safe defaults are given once.
    """

    options: Mapping[str, Any]

    @classmethod
    def of(cls, settings: Any) -> KafkaConnection:
        """From any service settings with ``kafka_options()`` (``ServiceSettings``)."""
        return cls(dict(settings.kafka_options()))

    @property
    def bootstrap_servers(self) -> str:
        return str(self.options["bootstrap_servers"])

    @property
    def client_options(self) -> dict[str, Any]:
        """The options without the bootstrap servers (security only)."""
        return {k: v for k, v in self.options.items() if k != "bootstrap_servers"}

    def consumer(self, *topics: str, **extra: Any) -> AIOKafkaConsumer:
        """A consumer of committed records only, no group unless given, that never commits on
        its own."""
        options: dict[str, Any] = {
            "group_id": None,
            "isolation_level": "read_committed",
            "enable_auto_commit": False,
            **self.options,
            **extra,
        }
        return AIOKafkaConsumer(*topics, **options)

    def producer(self, **extra: Any) -> AIOKafkaProducer:
        """An idempotent producer (acks from all in-sync replicas)."""
        return idempotent_producer(self.bootstrap_servers, **self.client_options, **extra)

    def admin(self) -> AIOKafkaAdminClient:
        return AIOKafkaAdminClient(**self.options)

    def client(self, **extra: Any) -> AIOKafkaClient:
        """A bare client, for requests no other client makes (the broker probe)."""
        return AIOKafkaClient(**self.options, **extra)

    def reader(self, topic: str) -> TopicReader:
        return TopicReader(self, topic)


class TopicReader:
    """The one way the product reads a range of a topic: streamed, never held whole.

    ``async with connection.reader(topic) as reader``: ``partitions``, ``bounds()`` (first and
    end offsets), ``offsets_for_time()`` (the broker's offsets-for-times), and ``records()``,
    which yields every committed record from given start offsets up to the end offsets it saw
    when it began (or given ones), in offset order per partition, within an optional deadline.
    Memory is one fetch (``max_partition_fetch_bytes`` per partition), whatever the history.
    """

    def __init__(self, connection: KafkaConnection, topic: str) -> None:
        self.connection = connection
        self.topic = topic
        self.partitions: list[int] = []
        # seek waits for the fetch in flight: 20 ms, not the default 500 ms (takeover reads)
        self._consumer = connection.consumer(fetch_max_wait_ms=20)

    async def __aenter__(self) -> TopicReader:
        counts = await topic_partitions(self.connection.options, [self.topic])
        self.partitions = list(range(counts.get(self.topic, 0)))
        await self._consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await stop_client(self._consumer)

    def _tps(self, partitions: Iterable[int] | None) -> list[TopicPartition]:
        chosen = self.partitions if partitions is None else partitions
        return [TopicPartition(self.topic, p) for p in chosen if p in self.partitions]

    async def bounds(
        self, partitions: Iterable[int] | None = None
    ) -> tuple[dict[int, int], dict[int, int]]:
        """(first offset, end offset) of each partition."""
        tps = self._tps(partitions)
        if not tps:
            return {}, {}
        starts = await self._consumer.beginning_offsets(tps)
        ends = await self._consumer.end_offsets(tps)
        return {tp.partition: o for tp, o in starts.items()}, {
            tp.partition: o for tp, o in ends.items()
        }

    async def offsets_for_time(
        self, unix_ms: int, partitions: Iterable[int] | None = None
    ) -> dict[int, int]:
        """Per partition, the first offset whose record time is at or after ``unix_ms``; the
        end offset where none is."""
        tps = self._tps(partitions)
        if not tps:
            return {}
        found = await self._consumer.offsets_for_times({tp: max(unix_ms, 0) for tp in tps})
        ends = await self._consumer.end_offsets(tps)
        return {
            tp.partition: (at.offset if at is not None else ends[tp]) for tp, at in found.items()
        }

    async def records(
        self,
        start: Mapping[int, int] | None = None,
        end: Mapping[int, int] | None = None,
        *,
        partitions: Iterable[int] | None = None,
        deadline_seconds: float | None = None,
    ) -> AsyncGenerator[ConsumerRecord[bytes, bytes], None]:
        """Committed records from ``start`` (default: each partition's first) to ``end``
        (exclusive; default: the end offsets when the read begins)."""
        if partitions is None and start is not None:
            partitions = list(start)
        tps = self._tps(partitions)
        firsts, ends = await self.bounds([tp.partition for tp in tps])
        if end is not None:
            ends = {p: min(ends[p], end.get(p, ends[p])) for p in ends}
        begin = {p: max(firsts[p], (start or {}).get(p, firsts[p])) for p in firsts}
        todo = {tp for tp in tps if ends[tp.partition] > begin[tp.partition]}
        if not todo:
            return
        consumer = self._consumer
        consumer.assign(list(todo))
        for tp in todo:
            consumer.seek(tp, begin[tp.partition])
        loop = asyncio.get_running_loop()
        give_up = None if deadline_seconds is None else loop.time() + deadline_seconds
        try:
            while todo:
                if give_up is not None and loop.time() > give_up:
                    raise TimeoutError(
                        f"reading {self.topic} took more than {deadline_seconds:g} s"
                    )
                batch = await consumer.getmany(*todo, timeout_ms=500)
                for tp, batch_records in batch.items():
                    for record in batch_records:
                        if record.offset < ends[tp.partition]:
                            yield record
                for tp in list(todo):
                    if await consumer.position(tp) >= ends[tp.partition]:
                        consumer.pause(tp)  # read to its end: fetch no further
                        todo.discard(tp)
        finally:
            # Paused, not unassigned: aiokafka's fetcher swallows a cancellation that lands
            # while it handles an unassignment (aiokafka 0.14 fetcher.py, issue #983), so
            # assign([]) right before stop() could hang the stop for ever.
            consumer.pause(*consumer.assignment())

    async def latest(
        self,
        keys: Collection[bytes] | None = None,
        end: Mapping[int, int] | None = None,
        window: int = 1_000,
    ) -> dict[bytes, ConsumerRecord[bytes, bytes]]:
        """The last record of each key before ``end`` (default: the end offsets), read from
        each partition's tail in growing windows (``window``, then 8x) until every one of
        ``keys`` is found or the partition's beginning is reached; ``keys`` None: the keys of
        the last window only. For topics whose keys write often (pot updates: a heartbeat per
        group every 500 ms), so that the cost is the tail, not the retention."""
        firsts, ends = await self.bounds()
        if end is not None:
            ends = {p: min(o, end.get(p, o)) for p, o in ends.items()}
        found: dict[bytes, ConsumerRecord[bytes, bytes]] = {}
        upper = dict(ends)
        span = window
        while upper:
            start = {p: max(firsts[p], upper[p] - span) for p in upper}
            async for record in self.records(start, upper):
                key = record.key
                if key is not None and (key not in found or record.offset > found[key].offset):
                    found[key] = record  # an older window never overrides a newer one
            missing = keys is not None and any(k not in found for k in keys)
            upper = {p: start[p] for p in upper if missing and start[p] > firsts[p]}
            span *= 8
        return found


async def read_records(
    connection: KafkaConnection,
    topic: str,
    partitions: Collection[int] | None = None,
    deadline_seconds: float | None = None,
) -> AsyncGenerator[ConsumerRecord[bytes, bytes], None]:
    """Every committed record of ``topic`` (or of its ``partitions``) from its beginning to the
    end offsets it has when the read starts, streamed (no consumer group, nothing committed)."""
    async with connection.reader(topic) as reader:
        async for record in reader.records(
            partitions=partitions, deadline_seconds=deadline_seconds
        ):
            yield record


async def group_offsets(
    connection: KafkaConnection, group_id: str, topic: str
) -> dict[int, tuple[int, int]]:
    """Each partition of ``topic``: (the offset consumer group ``group_id`` committed, 0 if none;
    the partition's end offset). For a topic without transactions the group has consumed a
    partition exactly when the two are equal."""
    counts = await topic_partitions(connection.options, [topic])
    partitions = [TopicPartition(topic, p) for p in range(counts.get(topic, 0))]
    if not partitions:
        return {}
    consumer = connection.consumer()
    admin = connection.admin()
    await consumer.start()
    try:
        ends = await consumer.end_offsets(partitions)
        await admin.start()
        committed = await admin.list_consumer_group_offsets(group_id, partitions=partitions)
    finally:
        await stop_client(consumer)
        await admin.close()
    offsets = {}
    for tp in partitions:
        done = committed.get(tp)
        offsets[tp.partition] = (max(done.offset, 0) if done is not None else 0, ends[tp])
    return offsets


def idempotent_producer(bootstrap_servers: str, **extra: object) -> AIOKafkaProducer:
    """A producer that never duplicates on retry: idempotence on, acks from all in-sync replicas."""
    options: dict[str, object] = {"linger_ms": 2, **extra}
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap_servers, enable_idempotence=True, acks="all", **options
    )


def committed_consumer(
    bootstrap_servers: str, *topics: str, group_id: str | None, **extra: object
) -> AIOKafkaConsumer:
    """A consumer that reads only committed records and never commits offsets on its own."""
    return AIOKafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap_servers,
        group_id=group_id,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **extra,
    )


async def stop_client(client: AIOKafkaConsumer | AIOKafkaProducer) -> None:
    """Stop an aiokafka client whatever state it is in, without ending the caller.

    After a broker restart, aiokafka's ``stop()`` can raise the CancelledError of one of its
    own internal tasks. Let through only a cancellation of the calling task itself: a loop that
    rebuilds its client must not die of the old one's. A stop that has not ended within
    ``CLIENT_STOP_SECONDS`` is cancelled once more and logged: aiokafka 0.14's fetcher can
    swallow the stop's own cancellation (aiokafka issue #983) and would wait for ever; the
    second one ends it and ``stop()`` completes its clean-up.
    """
    name = type(client).__name__
    stopping = asyncio.ensure_future(client.stop())
    try:
        for attempt in range(2):
            done, _ = await asyncio.wait({stopping}, timeout=CLIENT_STOP_SECONDS)
            if done:
                break
            log.error("kafka_client_stop_timed_out", client=name, attempt=attempt + 1)
            stopping.cancel()
        else:
            return  # left behind, not waited for: the caller goes on
    except asyncio.CancelledError:
        stopping.cancel()
        raise
    try:
        stopping.result()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        log.warning("kafka_client_stop_cancelled", client=name)
    except Exception as error:
        log.warning("kafka_client_stop_failed", client=name, error=repr(error))


async def wait_for_brokers(
    options: Mapping[str, Any],
    stop: asyncio.Event,
    service: str,
    *,
    first_seconds: float = 1.0,
    longest_seconds: float = 30.0,
) -> bool:
    """Until one of the brokers answers (True) or ``stop`` is set (False), retried with a
    doubling back-off and logged (``service_waiting_for_brokers``). A service that cannot start
    without its brokers waits for them rather than exiting: in Kubernetes each exit lengthens the
    restart back-off (up to five minutes of closed tables after the brokers are back), while the
    start-up probe grants a wait its time."""
    wait = first_seconds
    waited = False
    while not stop.is_set():
        client = KafkaConnection(options).client(client_id=f"{service}-start")
        try:
            await client.bootstrap()
        except KafkaConnectionError as error:
            log.warning(
                "service_waiting_for_brokers",
                service=service,
                error=repr(error),
                retry_in_seconds=wait,
            )
        else:
            if waited:
                log.warning("service_brokers_answer", service=service)
            return True
        finally:
            await client.close()
        waited = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), wait)
        wait = min(wait * 2, longest_seconds)
    return False


# A follower's request timeout unless its service sets one: a request lost in a cut is retried on
# a new connection within it (docs/architecture.md, "Running a site over a WAN").
FOLLOW_REQUEST_TIMEOUT_MS = 5000


async def follow_latest(
    connection: KafkaConnection,
    topics: Sequence[str],
    on_record: Callable[[ConsumerRecord[bytes, bytes]], None],
    retry_seconds: float = 1.0,
    idle_restart_seconds: float | None = None,
    from_beginning: bool = False,
    request_timeout_ms: int = FOLLOW_REQUEST_TIMEOUT_MS,
) -> None:
    """Follow ``topics`` from their end, forever: no consumer group, nothing committed.

    For readers that only need what is current (pot values, liveness, winners). When the broker
    is away the client is rebuilt after ``retry_seconds``; callers decide what silence means.
    ``idle_restart_seconds``: for topics that are never quiet when healthy (heartbeats), a
    client that has heard nothing for that long is rebuilt too - after a broker restart an
    aiokafka consumer can stay connected and silent, and silence keeps tables closed.
    ``from_beginning``: for compacted topics whose latest value per key is the state (payouts):
    read from the start, and again after every rebuild, so a stateless reader rebuilds it.
    ``request_timeout_ms``: how long one request may go unanswered before the client retries it
    on a new connection (the gateway's and the display's ``kafka_request_timeout_ms``).
    """
    loop = asyncio.get_running_loop()
    while True:
        consumer = connection.consumer(
            *topics,
            auto_offset_reset="earliest" if from_beginning else "latest",
            request_timeout_ms=request_timeout_ms,
        )
        try:
            await consumer.start()
            heard = loop.time()
            while True:
                batch = await consumer.getmany(timeout_ms=250)
                for records in batch.values():
                    for record in records:
                        on_record(record)
                if batch:
                    heard = loop.time()
                elif idle_restart_seconds is not None and (
                    loop.time() - heard > idle_restart_seconds
                ):
                    log.info("kafka_follow_idle_restart", topics=list(topics))
                    break
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("kafka_follow_retry", topics=list(topics), error=repr(error))
            await asyncio.sleep(retry_seconds)
        finally:
            await stop_client(consumer)
