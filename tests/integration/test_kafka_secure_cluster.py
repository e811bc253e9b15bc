"""The secure local cluster: TLS, SCRAM users and the production ACLs (issue 9).

`deploy/local/kafka.sh secure-cluster-up` runs three brokers whose client listener is SASL_SSL
(SCRAM-SHA-512, certificate from the development CA) with the ACLs of deploy/k8s/access.yaml.
Every client here is built the way the services build theirs: ``load(KafkaSecurity, ...)`` on the
``client-<user>.env`` variables the script writes, then ``client_options()``. Marked ``cluster``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shlex
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    KafkaConnectionError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailed,
)
from loadtest.rounds import CONFIG, CREDIT_VALUE, FLUSH, MAX_BET, MIN_BET

from jackpot.platform.kafka import (
    KafkaSecurity,
    committed_consumer,
    idempotent_producer,
)
from jackpot.platform.settings import load
from jackpot.pot import commands
from jackpot.pot.partitions import topic_partitions
from jackpot.pot.settings import PotSettings
from jackpot.tools.audit import audit
from jackpot.topics import DEAD_LETTER, LEDGER, POT_STATE, POT_UPDATES, TABLE_EVENTS
from jackpot.v1 import common_pb2, dead_letter_pb2, pot_pb2, pot_pb2_grpc, table_events_pb2
from tests.conftest import KAFKA_SH
from tests.integration.in_process import pot_in_process
from tests.integration.test_pot_service import NO_PRIZE, ScriptedTable

pytestmark = pytest.mark.cluster

TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class SecureCluster:
    """The running secure cluster; a user's settings come from `kafka.sh secure-env USER`."""

    bootstrap: str

    def env(self, user: str) -> dict[str, str]:
        """The variables of client-<user>.env, as a shell that sources it would export them."""
        text = subprocess.run(
            [KAFKA_SH, "secure-env", user], check=True, capture_output=True, text=True
        ).stdout
        environ = {}
        for line in text.splitlines():
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").partition("=")
                environ[name] = " ".join(shlex.split(value))
        return environ

    def security(self, user: str) -> KafkaSecurity:
        return load(KafkaSecurity, self.env(user))

    def options(self, user: str) -> dict[str, Any]:
        """Keyword arguments of any aiokafka client for ``user`` (bootstrap servers included)."""
        return {"bootstrap_servers": self.bootstrap, **self.security(user).client_options()}


@pytest.fixture(scope="session")
def secure_cluster() -> Iterator[SecureCluster]:
    """`kafka.sh secure-cluster-up` (idempotent: also adds ACLs and topics when missing); stopped
    after the session unless it was already running."""
    status = subprocess.run([KAFKA_SH, "secure-cluster-status"], capture_output=True)
    started_here = status.returncode != 0
    subprocess.run([KAFKA_SH, "secure-cluster-up"], check=True, stdout=subprocess.DEVNULL)
    bootstrap = subprocess.run(
        [KAFKA_SH, "bootstrap", "secure"], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        yield SecureCluster(bootstrap)
    finally:
        if started_here:
            subprocess.run([KAFKA_SH, "secure-cluster-down"], check=False)


@contextlib.asynccontextmanager
async def started(client: Any) -> AsyncIterator[Any]:
    """Start an aiokafka producer or consumer and always stop it (also when start fails)."""
    try:
        await client.start()
        yield client
    finally:
        await client.stop()


async def read_from(
    options: dict[str, Any], tp: TopicPartition, offset: int = 0, count: int | None = None
) -> list[bytes]:
    """Committed values of one partition from ``offset`` on: ``count`` of them, or up to the end
    (no consumer group)."""
    consumer = AIOKafkaConsumer(
        **options, group_id=None, isolation_level="read_committed", enable_auto_commit=False
    )
    values: list[bytes] = []
    async with started(consumer):
        consumer.assign([tp])
        consumer.seek(tp, offset)
        end = (await consumer.end_offsets([tp]))[tp]
        deadline = time.monotonic() + 20
        while (len(values) < count) if count is not None else (await consumer.position(tp) < end):
            assert time.monotonic() < deadline, f"{tp} did not give what was expected in 20 s"
            batch = await consumer.getmany(tp, timeout_ms=500)
            values.extend(r.value for r in batch.get(tp, []) if r.value is not None)
    return values


def probe_event(unique: str) -> table_events_pb2.TableEvent:
    """A table event for a pot group that does not exist (the pot service dead-letters it)."""
    return commands.table_event(
        f"secure-probe-{unique}",
        "T1",
        "R1",
        1,
        common_pb2.GAME_CARIBBEAN,
        round_locked=commands.locked({1: 1000}),
    )


# ------------------------------------------------------------------------ TLS and SCRAM


async def test_service_users_produce_and_consume_over_sasl_ssl(
    secure_cluster: SecureCluster, unique: str
) -> None:
    gateway = secure_cluster.security("jackpot-gateway")
    assert (gateway.protocol, gateway.sasl_mechanism) == ("SASL_SSL", "SCRAM-SHA-512")
    options = gateway.client_options()
    assert options["ssl_context"].check_hostname  # the broker's name is checked against the CA's
    event = probe_event(unique)
    producer = idempotent_producer(secure_cluster.bootstrap, **options)
    async with started(producer):
        sent = await producer.send_and_wait(
            TABLE_EVENTS.name, event.SerializeToString(), key=event.pot_group_id.encode()
        )
    tp = TopicPartition(TABLE_EVENTS.name, sent.partition)
    (value,) = await read_from(secure_cluster.options("jackpot-pot"), tp, sent.offset, 1)
    assert table_events_pb2.TableEvent.FromString(value) == event


async def refused_connection(
    cluster: SecureCluster, security: KafkaSecurity, caplog: pytest.LogCaptureFixture
) -> str:
    """A producer with ``security`` cannot connect; what aiokafka logged as errors meanwhile."""
    caplog.set_level(logging.ERROR, logger="aiokafka")
    producer = AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap,
        request_timeout_ms=TIMEOUT_MS,
        **security.client_options(),
    )
    with pytest.raises(KafkaConnectionError):
        async with started(producer):
            pass
    return caplog.text


async def test_a_wrong_password_is_refused(
    secure_cluster: SecureCluster, caplog: pytest.LogCaptureFixture
) -> None:
    good = secure_cluster.security("jackpot-pot")
    wrong = good.replace(protocol="SASL_SSL", password="wrong")
    errors = await refused_connection(secure_cluster, wrong, caplog)
    # aiokafka raises only "Unable to bootstrap"; the broker's reason is in its error log.
    assert "SaslAuthenticationFailed" in errors
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in errors


async def test_the_broker_certificate_is_verified_against_the_ca(
    secure_cluster: SecureCluster, caplog: pytest.LogCaptureFixture
) -> None:
    good = secure_cluster.security("jackpot-pot")
    untrusting = good.replace(protocol="SASL_SSL", cafile="")
    # no KAFKA_SSL_CAFILE: the system CAs only
    errors = await refused_connection(secure_cluster, untrusting, caplog)
    assert "CERTIFICATE_VERIFY_FAILED" in errors


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SASL_PLAINTEXT"])
async def test_a_client_without_tls_cannot_connect(
    secure_cluster: SecureCluster, protocol: str
) -> None:
    good = secure_cluster.security("jackpot-pot")  # the right password, but no TLS
    security = good.replace(protocol=protocol, cafile="")
    producer = AIOKafkaProducer(
        bootstrap_servers=secure_cluster.bootstrap,
        request_timeout_ms=TIMEOUT_MS,
        **security.client_options(),
    )
    with pytest.raises(KafkaConnectionError):
        async with started(producer):
            pass


# ------------------------------------------------------------------------------- ACLs


async def test_read_only_and_unrelated_users_cannot_write(secure_cluster: SecureCluster) -> None:
    # The display reads pot updates, awards and payouts; it may not feed the pot.
    display = AIOKafkaProducer(**secure_cluster.options("jackpot-display"))
    async with started(display):
        with pytest.raises(TopicAuthorizationFailedError):
            await display.send_and_wait(TABLE_EVENTS.name, b"forged", key=b"scl")
    # The audit user reads the ledger (Describe and Read) but may not append to it.
    audit_user = AIOKafkaProducer(**secure_cluster.options("jackpot-audit"))
    async with started(audit_user):
        with pytest.raises(TopicAuthorizationFailedError):
            await audit_user.send_and_wait(LEDGER.name, b"forged", key=b"scl")
    # Writing nowhere, the audit user is not even given a producer id (IdempotentWrite); which
    # of the two refusals reaches the caller first depends on aiokafka's sender task.
    options = secure_cluster.options("jackpot-audit")
    idempotent = idempotent_producer(options.pop("bootstrap_servers"), **options)
    with pytest.raises((ClusterAuthorizationFailedError, TopicAuthorizationFailedError)):
        async with started(idempotent):
            await idempotent.send_and_wait(POT_UPDATES.name, b"forged", key=b"scl")


async def test_only_the_pot_sees_the_state_topic(secure_cluster: SecureCluster) -> None:
    # Pot-state snapshots contain the unrevealed mystery trigger (docs/architecture.md).
    topics = [POT_STATE.name, POT_UPDATES.name]
    assert await topic_partitions(secure_cluster.options("jackpot-pot"), topics) == {
        POT_STATE.name: POT_STATE.partitions,
        POT_UPDATES.name: POT_UPDATES.partitions,
    }
    assert await topic_partitions(secure_cluster.options("jackpot-gateway"), topics) == {
        POT_UPDATES.name: POT_UPDATES.partitions
    }


async def test_groups_transactional_ids_and_topic_creation_are_guarded(
    secure_cluster: SecureCluster, unique: str
) -> None:
    # A gateway may not take the pot's transactional id (it would fence the pot service).
    options = secure_cluster.options("jackpot-gateway")
    bootstrap = options.pop("bootstrap_servers")
    thief = idempotent_producer(bootstrap, transactional_id="jackpot-pot-0", **options)
    with pytest.raises(TransactionalIdAuthorizationFailed):
        async with started(thief):
            await thief.begin_transaction()
    # The display may not join the pot's consumer group.
    options = secure_cluster.options("jackpot-display")
    bootstrap = options.pop("bootstrap_servers")
    intruder = committed_consumer(bootstrap, POT_UPDATES.name, group_id="jackpot-pot", **options)
    with pytest.raises(GroupAuthorizationFailedError):
        async with started(intruder):
            await intruder.getmany(timeout_ms=TIMEOUT_MS)
    # No service creates topics (admin does, as the Topic Operator does in production).
    name = f"jackpot.secure-probe-{unique}.v1"
    pot_admin = AIOKafkaAdminClient(**secure_cluster.options("jackpot-pot"))
    await pot_admin.start()
    try:
        response = await pot_admin.create_topics([NewTopic(name, 1, 3)])
    finally:
        await pot_admin.close()
    errors = {topic: code for topic, code, *_ in response.topic_errors}
    assert errors == {name: TopicAuthorizationFailedError.errno}
    assert await topic_partitions(secure_cluster.options("admin"), [name]) == {}


# ----------------------------------------------------------------------- transactions


async def test_the_pot_user_writes_in_transactions(
    secure_cluster: SecureCluster, unique: str
) -> None:
    options = secure_cluster.options("jackpot-pot")
    bootstrap = options.pop("bootstrap_servers")
    producer = idempotent_producer(
        bootstrap, transactional_id=f"jackpot-pot-probe-{unique}", **options
    )

    def letter(detail: str) -> bytes:
        return dead_letter_pb2.DeadLetter(
            source="test:secure-cluster", detail=f"{detail} {unique}"
        ).SerializeToString()

    async with started(producer):
        await producer.begin_transaction()
        committed = await producer.send_and_wait(DEAD_LETTER.name, letter("committed"))
        await producer.commit_transaction()
        await producer.begin_transaction()
        await producer.send_and_wait(DEAD_LETTER.name, letter("aborted"))
        await producer.abort_transaction()
        await producer.begin_transaction()
        await producer.send_and_wait(DEAD_LETTER.name, letter("after"))
        await producer.commit_transaction()
    tp = TopicPartition(DEAD_LETTER.name, committed.partition)
    # read_committed skips the aborted record (and the transaction markers).
    values = await read_from(secure_cluster.options("jackpot-pot"), tp, committed.offset, 2)
    details = [dead_letter_pb2.DeadLetter.FromString(v).detail for v in values]
    assert details == [f"committed {unique}", f"after {unique}"]


async def test_the_pot_service_runs_a_round_on_the_secure_cluster(
    secure_cluster: SecureCluster, unique: str
) -> None:
    """The real pot service (its composition root, in-process) with the settings `jackpot pot`
    reads from client-jackpot-pot.env: admin API commands and its access log as jackpot-pot, a
    round from the gateway user, one transaction per batch with the group's offsets, audited as
    jackpot-audit."""
    group_id = f"secure-{unique}"
    environ = {
        **secure_cluster.env("jackpot-pot"),
        "JACKPOT_METRICS_PORT": "0",
        "JACKPOT_GRPC_ADDRESS": "127.0.0.1:0",
        "JACKPOT_SESSION_TIMEOUT_MS": "6000",
        "JACKPOT_HEARTBEAT_MS": "1000",
        "JACKPOT_RETRY_BACKOFF_MS": "100",
        "JACKPOT_INSTANCE_ID": f"secure-test-{unique}",
        "JACKPOT_INSECURE_ROLES": "operator",  # plaintext gRPC here; Kafka is what is secured
    }
    settings = load(PotSettings, environ)
    assert settings.kafka_security.protocol == "SASL_SSL"
    assert not settings.create_topics
    server = pot_in_process(settings)
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}")
    try:
        stub = pot_pb2_grpc.PotServiceStub(channel)  # type: ignore[no-untyped-call]
        admin = pot_pb2.AdminContext(requested_by="ana", reason="secure cluster test")
        await stub.CreatePotGroup(
            pot_pb2.CreatePotGroupRequest(
                pot_group_id=group_id, config_json=json.dumps(CONFIG), admin=admin
            )
        )
        link = table_events_pb2.LinkTable(
            table_id="T1",
            game=common_pb2.GAME_CARIBBEAN,
            site="SCL",
            min_bet=MIN_BET,
            max_bet=MAX_BET,
            credit_value=CREDIT_VALUE,
        )
        await stub.LinkTable(
            pot_pb2.LinkTableRequest(pot_group_id=group_id, table=link, admin=admin)
        )
        table = ScriptedTable(group_id, "T1")
        options = secure_cluster.options("jackpot-gateway")
        producer = idempotent_producer(options.pop("bootstrap_servers"), **options)
        async with started(producer):
            for event in table.round({1: 2000, 3: 1000}, {1: list(FLUSH), 3: NO_PRIZE}):
                await producer.send_and_wait(
                    TABLE_EVENTS.name, event.SerializeToString(), key=group_id.encode()
                )
        await processed(secure_cluster, settings)
    finally:
        await channel.close()
        await server.stop()
    (group,) = (
        await audit(
            secure_cluster.options("jackpot-audit"), LEDGER.name, POT_UPDATES.name, [group_id]
        )
    ).groups
    assert group.problems == []  # conservation (M2), balances = the last pot update
    assert group.collected > 0
    assert sum(group.hits.values()) == 1, group.hits  # the flush: an award was written too


async def processed(cluster: SecureCluster, settings: PotSettings) -> None:
    """Until the pot's consumer group committed (in its transactions) every input record."""
    options = cluster.options("admin")
    admin = AIOKafkaAdminClient(**options)
    consumer = AIOKafkaConsumer(**options)
    tps = [TopicPartition(TABLE_EVENTS.name, p) for p in range(TABLE_EVENTS.partitions)]
    deadline = time.monotonic() + 60
    async with started(consumer):
        await admin.start()
        try:
            ends = await consumer.end_offsets(tps)
            while True:
                committed = await admin.list_consumer_group_offsets(
                    settings.processor.consumer_group
                )
                done = {tp: committed[tp].offset if tp in committed else 0 for tp in tps}
                if all(done[tp] >= ends[tp] for tp in tps):
                    return
                assert time.monotonic() < deadline, "the pot service did not catch up in 60 s"
                await asyncio.sleep(0.3)
        finally:
            await admin.close()
