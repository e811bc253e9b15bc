"""Shared fixtures: where the Kafka broker comes from, unique names, topic creation.

The broker, in this order (issue #2):
1. ``KAFKA_BOOTSTRAP_SERVERS`` if set;
2. with ``JACKPOT_TEST_KAFKA=container``, the ``kafka_container`` below;
3. the project's local broker (``deploy/local/kafka.sh up``), stopped after the session if this
   fixture started it.

Containers (issue 25 item 5; ``tests/containers.py``): ``container_engine`` is the session's
Docker-compatible engine for testcontainers, podman's ``system service`` started on a private
socket when nothing answers, the reaper off, every container it made removed at the end of the
session whatever the tests did; ``kafka_container`` is one Kafka node in a container of the image
built here from the project's Kafka jars (``deploy/image/kafka-image.sh``). Without an engine a
test that needs one fails, naming why, unless ``JACKPOT_ALLOW_SKIP=1``.

Tests are marked by tier: ``unit`` (no I/O), ``integration`` (real Kafka), ``cluster`` (the local
three-node cluster). Tests under tests/unit are marked ``unit`` automatically.

Order (issue 24 item 10): every test must pass in any selection and order. ``--random-order``
(a seed, or none for a new one, printed in the header) shuffles the selected tests; ``make test``
runs the unit tier so. After each test of the other tiers the garbage collector runs: what a
test left to it (aiokafka's clients leave futures whose failure nobody awaited) is finalized
within that test, never in the middle of a later one (on Python 3.11.7 a traceback formatted
by a collection that interrupted an ``ast.parse`` makes that parse raise SystemError).
"""

from __future__ import annotations

import gc
import os
import random
import subprocess
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from jackpot.platform.kafka import ensure_topics
from jackpot.topics import TopicSpec
from tests.containers import Engine, KafkaBroker, NoEngine, open_engine, start_kafka

REPO = Path(__file__).resolve().parent.parent
KAFKA_SH = REPO / "deploy" / "local" / "kafka.sh"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--random-order",
        nargs="?",
        const="new",
        default=None,
        metavar="SEED",
        help="run the selected tests in a shuffled order (SEED repeats one; none: a new one)",
    )


ORDER_SEED = pytest.StashKey[int]()


def order_seed(config: pytest.Config) -> int | None:
    """The seed of this session's shuffled order, or None for the written order."""
    chosen = config.getoption("--random-order")
    if chosen is None:
        return None
    if ORDER_SEED not in config.stash:
        new = random.SystemRandom().randrange(10**6)
        config.stash[ORDER_SEED] = new if chosen == "new" else int(chosen)
    return config.stash[ORDER_SEED]


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = order_seed(config)
    return None if seed is None else f"random order: seed {seed} (again: --random-order={seed})"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The seed again at the end, where ``-q`` shows it too: a failure in one order repeats."""
    seed = order_seed(config)
    if seed is not None:
        terminalreporter.write_line(f"random order: seed {seed} (again: --random-order={seed})")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/unit/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.unit)
    seed = order_seed(config)
    if seed is not None:
        random.Random(seed).shuffle(items)


@pytest.fixture(autouse=True)
def collect_what_the_test_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test of the tiers with real clients (not ``unit``: thousands of pure tests
    leave nothing, and the collection costs), the garbage collector runs, so that whatever the
    test left to it is finalized within the test (module docstring)."""
    yield
    if request.node.get_closest_marker("unit") is None:
        gc.unfreeze()  # what a takeover froze (jackpot.platform.heap) is the test's too
        gc.collect()


@pytest.fixture(scope="session", autouse=True)
def software_manifest() -> None:
    """Services the tests start verify their files at start (R6): a working tree edited since
    `make setup` records its manifest again, as `make setup` would (docs/security.md)."""
    from jackpot.platform.manifest import record_for_working_tree

    record_for_working_tree()


def unavailable(why: str) -> NoReturn:
    """Fail naming why; a skip only with ``JACKPOT_ALLOW_SKIP=1`` (as test_site_cutoff does)."""
    if os.environ.get("JACKPOT_ALLOW_SKIP") == "1":
        pytest.skip(why)
    pytest.fail(f"{why} (JACKPOT_ALLOW_SKIP=1 skips instead)")


@pytest.fixture(scope="session")
def container_engine() -> Iterator[Engine]:
    """The session's container engine (module docstring); its containers go at the end."""
    try:
        engine = open_engine()
    except NoEngine as why:
        unavailable(f"no container engine: {why}")
    orphans = engine.remove_orphans()
    if orphans:
        print(f"\nconftest: removed containers of ended sessions: {', '.join(orphans)}")
    try:
        yield engine
    finally:
        left = engine.close()
        if left:
            print(f"\nconftest: removed the session's containers: {', '.join(left)}")


@pytest.fixture(scope="session")
def kafka_container(container_engine: Engine) -> Iterator[KafkaBroker]:
    """One Kafka node in a container of the locally built image (built first if it is not)."""
    try:
        broker = start_kafka(container_engine)
    except NoEngine as why:
        unavailable(str(why))
    try:
        yield broker
    finally:
        broker.stop()


def _local_broker_running() -> bool:
    return subprocess.run([KAFKA_SH, "status"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def kafka_bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    """Bootstrap servers of a real Kafka broker for this test session."""
    configured = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if configured:
        yield configured
        delete_session_topics(configured)
        return
    if os.environ.get("JACKPOT_TEST_KAFKA") == "container":
        yield request.getfixturevalue("kafka_container").bootstrap
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
