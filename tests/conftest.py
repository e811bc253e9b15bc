"""Shared fixtures: where the Kafka broker comes from, unique names, topic creation.

The broker, in this order (issue #2):
1. ``KAFKA_BOOTSTRAP_SERVERS`` if set;
2. a testcontainers ``KafkaContainer`` if a Docker *engine* answers a ping (a docker client alone
   is not enough);
3. the project's local broker (``deploy/local/kafka.sh up``), stopped after the session if this
   fixture started it.

Tests are marked by tier: ``unit`` (no I/O), ``integration`` (real Kafka), ``cluster`` (the local
three-node cluster). Tests under tests/unit are marked ``unit`` automatically.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from jackpot.platform.kafka import ensure_topics
from jackpot.topics import TopicSpec

REPO = Path(__file__).resolve().parent.parent
KAFKA_SH = REPO / "deploy" / "local" / "kafka.sh"
KAFKA_IMAGE = "apache/kafka:4.1.1"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/unit/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.unit)


@pytest.fixture(scope="session", autouse=True)
def software_manifest() -> None:
    """Services the tests start verify their files at start (R6): a working tree edited since
    `make setup` records its manifest again, as `make setup` would (docs/security.md)."""
    from jackpot.platform.manifest import record_for_working_tree

    record_for_working_tree()


def _docker_engine_answers() -> bool:
    try:
        import docker

        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def _local_broker_running() -> bool:
    return subprocess.run([KAFKA_SH, "status"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap servers of a real Kafka broker for this test session."""
    configured = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if configured:
        yield configured
        delete_session_topics(configured)
        return
    if _docker_engine_answers():
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer(KAFKA_IMAGE).with_kraft() as container:
            yield container.get_bootstrap_server()
        return
    started_here = not _local_broker_running()
    if started_here:
        subprocess.run([KAFKA_SH, "up"], check=True)
    try:
        yield "127.0.0.1:9092"
    finally:
        delete_session_topics("127.0.0.1:9092")
        if started_here:
            subprocess.run([KAFKA_SH, "down"], check=False)


SESSION_UNIQUES: set[str] = set()  # every `unique` handed out in this session


def delete_session_topics(bootstrap: str) -> None:
    """Delete the topics this session's tests made (their names carry a `unique` of this
    session): otherwise a local broker collects thousands of partitions over many runs and
    starts ever more slowly. Topics of other sessions on the same broker are left alone."""
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient

    async def delete() -> int:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            ours = [t for t in await admin.list_topics() if any(u in t for u in SESSION_UNIQUES)]
            for start in range(0, len(ours), 200):
                await admin.delete_topics(ours[start : start + 200])
            return len(ours)
        finally:
            await admin.close()

    if SESSION_UNIQUES:
        try:
            asyncio.run(asyncio.wait_for(delete(), 60))
        except Exception as error:  # the tests' verdict stands; leftovers only cost start time
            print(f"\nconftest: test topics not deleted: {error!r}")


@pytest.fixture
def unique() -> str:
    """A short random suffix for topic, group and transactional ids of one test (its topics
    are deleted at the end of the session, :func:`delete_session_topics`)."""
    value = uuid.uuid4().hex[:10]
    SESSION_UNIQUES.add(value)
    return value


TopicFactory = Callable[..., Awaitable[str]]


@pytest.fixture
def make_topic(kafka_bootstrap: str, unique: str) -> TopicFactory:
    """Create a topic whose name is unique to this test; returns its name."""
    counter = iter(range(1_000))

    async def create(base: str = "t", partitions: int = 1, **config: str) -> str:
        name = f"test.{base}.{unique}.{next(counter)}"
        await ensure_topics(kafka_bootstrap, [TopicSpec(name, partitions, dict(config))])
        return name

    return create
