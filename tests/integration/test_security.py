"""Security on real Kafka and real gRPC (issue 9): mutual TLS on every endpoint with the project's
development CA, authorization by role and table, every attempt on the hash-chained access log, and
`jackpot audit --chain` naming the first tampered entry."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from loadtest.free_ports import free_port
from loadtest.rounds import CONFIG

from jackpot.clients.device import DeviceClient
from jackpot.display.main import run_display
from jackpot.display.settings import DisplaySettings
from jackpot.domain.access import Role
from jackpot.domain.access_chain import AccessEntry, ChainReport
from jackpot.domain.cards import Game
from jackpot.gateway.settings import StudioTableSettings
from jackpot.payout.grpc_api import SERVICE_NAME as PAYOUT_SERVICE
from jackpot.payout.grpc_api import PayoutServicer
from jackpot.payout.service import PayoutService
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.access_log import AccessLog, read_entries, to_record
from jackpot.platform.authz import AccessSettings, Authorizer
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.kafka import KafkaConnection, ensure_topics, idempotent_producer
from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.tools.access_chain import verify_stream
from jackpot.tools.payouts import decide
from jackpot.tools.pki import issue, issue_dev
from jackpot.topics import TopicSpec
from jackpot.v1 import (
    display_pb2,
    display_pb2_grpc,
    payout_pb2,
    payout_pb2_grpc,
    pot_pb2,
    pot_pb2_grpc,
    studio_pb2,
    studio_pb2_grpc,
    table_events_pb2,
)
from tests.integration.gateway_harness import (
    CREDENTIAL,
    settings_for,
    start_gateway,
    wait_health,
    wait_until,
)
from tests.integration.in_process import pot_in_process
from tests.integration.test_payout import award, publish
from tests.integration.test_pot_service import pot_settings, read_topic
from tests.polling import eventually

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("pki")
    issue_dev(directory, ["CAR-1", "T1"])
    issue(directory / "rogue", "operator", {Role.OPERATOR})  # an operator of another CA
    issue(directory, "studio-a", {Role.PLATFORM})  # an operator's game platform, per studio
    issue(directory, "studio-b", {Role.PLATFORM})
    return directory


def tls(pki: Path, name: str) -> TlsSettings:
    return TlsSettings.for_name(pki, name)


async def audit_entries(bootstrap: str, topic: str) -> list[tuple[int, AccessEntry | None]]:
    """The entries of a test's own (small) audit topic, to assert on."""
    connection = KafkaConnection({"bootstrap_servers": bootstrap})
    return [position async for position in read_entries(connection, topic)]


async def verify_topic(bootstrap: str, topic: str) -> ChainReport:
    """The chain verifier over the topic, streamed, as `jackpot audit --chain` runs it."""
    return await verify_stream(
        read_entries(KafkaConnection({"bootstrap_servers": bootstrap}), topic)
    )


async def wait_for_entries(bootstrap: str, topic: str, count: int) -> list[AccessEntry]:
    async def enough() -> list[AccessEntry] | None:
        entries = [e for _, e in await audit_entries(bootstrap, topic) if e is not None]
        return entries if len(entries) >= count else None

    found: list[AccessEntry] = await eventually(enough, f"{count} audit entries on {topic}")
    return found


def code_of(error: pytest.ExceptionInfo[grpc.aio.AioRpcError]) -> grpc.StatusCode:
    return error.value.code()


async def test_pot_admin_api_needs_an_operator_certificate_and_audits_every_attempt(
    kafka_bootstrap: str, unique: str, pki: Path
) -> None:
    access = AccessSettings(
        tls=tls(pki, "pot"), audit_topic=f"test.audit.{unique}", health_address="127.0.0.1:0"
    )
    settings = pot_settings(kafka_bootstrap, unique, 1).replace(access=access)
    server = pot_in_process(settings)
    await server.start()
    target = f"localhost:{server.grpc_port}"
    request = pot_pb2.CreatePotGroupRequest(
        pot_group_id="scl",
        config_json=json.dumps(CONFIG),
        admin=pot_pb2.AdminContext(reason="opening the link", requested_by="claimed-name"),
    )
    try:
        async with secure_channel(target, tls(pki, "operator")) as channel:
            stub = pot_pb2_grpc.PotServiceStub(channel)  # type: ignore[no-untyped-call]
            created = await stub.CreatePotGroup(request)
            assert created.pot_group.pot_group_id == "scl"
            assert [
                g.pot_group_id
                for g in (await stub.ListPotGroups(pot_pb2.ListPotGroupsRequest())).pot_groups
            ] == ["scl"]
            # C7: the command names the certificate's holder, not what the request claimed.
            commands = [
                table_events_pb2.TableEvent.FromString(raw).pot_group_command
                for raw in await read_topic(settings, settings.table_events_topic)
            ]
            assert [c.requested_by for c in commands] == ["operator"]

        async with secure_channel(target, tls(pki, "supervisor")) as channel:
            stub = pot_pb2_grpc.PotServiceStub(channel)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.CreatePotGroup(
                    pot_pb2.CreatePotGroupRequest(
                        pot_group_id="other", config_json=json.dumps(CONFIG), admin=request.admin
                    )
                )
            assert code_of(refused) == grpc.StatusCode.PERMISSION_DENIED
            assert "needs the role operator" in (refused.value.details() or "")

        async with secure_channel(target, tls(pki, "device-CAR-1")) as channel:
            stub = pot_pb2_grpc.PotServiceStub(channel)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.aio.AioRpcError) as device_reads:
                await stub.ListPotGroups(pot_pb2.ListPotGroupsRequest())
            assert code_of(device_reads) == grpc.StatusCode.PERMISSION_DENIED

        # No certificate, a certificate of another CA, or plaintext: no connection at all.
        no_cert = grpc.aio.secure_channel(
            target, grpc.ssl_channel_credentials((pki / "ca.crt").read_bytes())
        )
        rogue = secure_channel(
            target,
            TlsSettings(
                cert_file=str(pki / "rogue" / "operator.crt"),
                key_file=str(pki / "rogue" / "operator.key"),
                ca_file=str(pki / "ca.crt"),
            ),
        )
        plaintext = grpc.aio.insecure_channel(target)
        for channel in (no_cert, rogue, plaintext):
            async with channel:
                stub = pot_pb2_grpc.PotServiceStub(channel)  # type: ignore[no-untyped-call]
                with pytest.raises(grpc.aio.AioRpcError) as unconnected:
                    await stub.CreatePotGroup(request, timeout=5)
                assert code_of(unconnected) == grpc.StatusCode.UNAVAILABLE

        # Probes: a plaintext port that answers health and nothing else.
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.server.health_port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            answer = await health.Check(health_pb2.HealthCheckRequest(service=""))
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
            stub = pot_pb2_grpc.PotServiceStub(channel)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.aio.AioRpcError) as not_here:
                await stub.ListPotGroups(pot_pb2.ListPotGroupsRequest())
            assert code_of(not_here) == grpc.StatusCode.UNIMPLEMENTED
    finally:
        await server.stop()

    entries = await wait_for_entries(kafka_bootstrap, access.audit_topic, 4)
    facts = {(e.principal, e.action, e.outcome, e.target) for e in entries}
    assert ("operator", "configure_pot", "allowed", "scl") in facts
    assert ("operator", "configure_pot", "applied", "scl") in facts
    assert ("supervisor", "configure_pot", "refused", "other") in facts
    assert ("CAR-1", "read", "refused", "ListPotGroups") in facts
    report = await verify_topic(kafka_bootstrap, access.audit_topic)
    assert report.ok
    assert report.chains == {f"pot-api:{settings.processor.instance_id}": len(entries)}

    # The command line verifies the topic, then a forged copy of entry 2 is appended.
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    command = [sys.executable, "-m", "jackpot.cli", "audit", "--chain"]
    command += ["--audit-topic", access.audit_topic]
    clean = await asyncio.to_thread(
        subprocess.run, command, env=env, capture_output=True, text=True, timeout=60
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "OK: every chain holds" in clean.stdout
    forged = dataclasses.replace(entries[1], principal="mallory")
    producer = idempotent_producer(kafka_bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(
            access.audit_topic, to_record(forged).SerializeToString(), key=b"x"
        )
    finally:
        await producer.stop()
    tampered = await asyncio.to_thread(
        subprocess.run, command, env=env, capture_output=True, text=True, timeout=60
    )
    assert tampered.returncode == 1
    assert (
        f"TAMPERED: chain 'pot-api:{settings.processor.instance_id}' breaks at entry 2 "
        f"(position {len(entries)})" in tampered.stdout
    )


@contextlib.asynccontextmanager
async def payout_under_tls(
    kafka_bootstrap: str, unique: str, pki: Path
) -> AsyncIterator[PayoutSettings]:
    settings = PayoutSettings(
        bootstrap_servers=kafka_bootstrap,
        grpc_address=f"127.0.0.1:{free_port()}",
        metrics_port=0,
        processor={
            "consumer_group": f"payout-{unique}",
            "transactional_id_prefix": f"payout-{unique}",
        },
        awards_topic=f"test.awards.{unique}",
        payouts_topic=f"test.payouts.{unique}",
        ledger_topic=f"test.ledger.{unique}",
        access=AccessSettings(tls=tls(pki, "payout"), audit_topic=f"test.audit.{unique}"),
    )
    await ensure_topics(
        kafka_bootstrap,
        [
            TopicSpec(settings.awards_topic, 1),
            TopicSpec(settings.payouts_topic, 1, {"cleanup.policy": "compact,delete"}),
            TopicSpec(settings.ledger_topic, 1),
        ],
    )
    service = PayoutService(settings)
    audit = AccessLog(kafka_bootstrap, settings.access.audit_topic, "payout:test")
    servicer = PayoutServicer(service, Authorizer(settings.access, audit))
    server = GrpcServer(
        settings.grpc_address,
        [servicer.register],
        [PAYOUT_SERVICE],
        settings.access.tls.server_credentials(),
    )
    processing = asyncio.create_task(service.run())
    await audit.start()
    await server.start()
    try:
        await wait_until(lambda: service.processor.owned_partitions == [0])
        yield settings
    finally:
        await server.stop(0.5)
        await service.stop()
        await processing
        await audit.stop()


async def test_only_supervisors_approve_and_a_terminal_serves_only_its_table(
    kafka_bootstrap: str, unique: str, pki: Path
) -> None:
    large = award("R1", 5, "ROYAL_FLUSH", 2_000_000)
    mistaken = award("R2", 3, "ROYAL_FLUSH", 3_000_000)
    async with payout_under_tls(kafka_bootstrap, unique, pki) as settings:
        await publish(settings, large, mistaken)
        target = f"localhost:{settings.grpc_address.rsplit(':', 1)[1]}"
        approve = payout_pb2.ApprovePayoutRequest(
            award_id=large.award_id, supervisor="someone-else", reason="checked the cards"
        )
        async with secure_channel(target, tls(pki, "operator")) as channel:
            stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
            deadline = asyncio.get_running_loop().time() + 10
            while not (await stub.ListPayouts(payout_pb2.ListPayoutsRequest())).payouts:
                assert asyncio.get_running_loop().time() < deadline, "the awards were not consumed"
                await asyncio.sleep(0.1)
            with pytest.raises(grpc.aio.AioRpcError) as operator_approves:
                await stub.ApprovePayout(approve)
            assert code_of(operator_approves) == grpc.StatusCode.PERMISSION_DENIED
            assert "needs the role supervisor" in (operator_approves.value.details() or "")

        async with secure_channel(target, tls(pki, "supervisor")) as channel:
            stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
            approved = await stub.ApprovePayout(approve)
            assert approved.payout.state == payout_pb2.PAYOUT_STATE_APPROVED
            assert "supervisor" in str(approved.payout)
            assert "someone-else" not in str(approved.payout)

        async with secure_channel(target, tls(pki, "terminal-T1")) as channel:
            stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]

            async def hello(table: str) -> AsyncIterator[payout_pb2.DealerTerminalRequest]:
                yield payout_pb2.DealerTerminalRequest(
                    hello=payout_pb2.TerminalHello(table_id=table, dealer="dora")
                )
                await asyncio.sleep(30)

            wrong = stub.DealerTerminal(hello("T2"))
            with pytest.raises(grpc.aio.AioRpcError) as other_table:
                await wrong.read()
            assert code_of(other_table) == grpc.StatusCode.PERMISSION_DENIED
            assert "bound to another table" in (other_table.value.details() or "")
            own = stub.DealerTerminal(hello("T1"))
            first = await own.read()
            assert [p.award_id for p in first.open] == [large.award_id, mistaken.award_id]
            own.cancel()

        # The supervisors' command line: `jackpot payouts --void AWARD --reason ...`.
        def as_holder(name: str) -> PayoutSettings:
            client = AccessSettings(tls=tls(pki, name))
            return settings.replace(grpc_address=target, access=client)

        with pytest.raises(SystemExit, match=r"PERMISSION_DENIED.*needs the role supervisor"):
            await decide(as_holder("operator"), "void", mistaken.award_id, "wrong round")
        voided = await decide(as_holder("supervisor"), "void", mistaken.award_id, "wrong round")
        assert voided == f"{mistaken.award_id}: PAYOUT_STATE_VOIDED"

        entries = await wait_for_entries(kafka_bootstrap, settings.access.audit_topic, 8)
    facts = {(e.principal, e.action, e.outcome) for e in entries}
    assert ("supervisor", "void_payout", "applied") in facts
    assert ("operator", "void_payout", "refused") in facts
    assert ("operator", "approve_payout", "refused") in facts
    assert ("supervisor", "approve_payout", "allowed") in facts
    assert ("supervisor", "approve_payout", "applied") in facts
    assert ("T1", "confirm_payment", "refused") in facts
    assert ("T1", "confirm_payment", "allowed") in facts
    assert (await verify_topic(kafka_bootstrap, settings.access.audit_topic)).ok


async def test_a_device_certificate_opens_only_its_own_table_at_the_gateway(
    kafka_bootstrap: str, unique: str, pki: Path, tmp_path: Path
) -> None:
    access = AccessSettings(tls=tls(pki, "gateway"), audit_topic=f"test.audit.{unique}")
    settings = settings_for(kafka_bootstrap, unique, tmp_path / "spool.sqlite").replace(
        access=access
    )
    gateway = await start_gateway(settings, access_logged=True)
    target = gateway.tls_target
    try:
        own = DeviceClient(
            target, "CAR-1", Game.CARIBBEAN, CREDENTIAL, tls=tls(pki, "device-CAR-1")
        )
        welcome = await own.connect()
        assert welcome.table_id == "CAR-1"
        await own.close()
        # The right shared credential with another table's certificate is not enough.
        other = DeviceClient(target, "DRW-1", Game.DRAW, CREDENTIAL, tls=tls(pki, "device-CAR-1"))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await other.connect()
        assert code_of(refused) == grpc.StatusCode.UNAUTHENTICATED
        assert "bound to another table" in (refused.value.details() or "")
        await other.close()
        # An operator's certificate is not a device.
        person = DeviceClient(target, "CAR-1", Game.CARIBBEAN, CREDENTIAL, tls=tls(pki, "operator"))
        with pytest.raises(grpc.aio.AioRpcError) as not_a_device:
            await person.connect()
        assert "needs the role device" in (not_a_device.value.details() or "")
        await person.close()
        entries = await wait_for_entries(kafka_bootstrap, access.audit_topic, 2)
    finally:
        await gateway.stop()
    refusals = [(e.principal, e.action, e.outcome) for e in entries]
    assert ("CAR-1", "connect_device", "refused") in refusals
    assert ("operator", "connect_device", "refused") in refusals


async def test_O1_only_its_studios_platform_certificate_drives_a_studio_table(
    kafka_bootstrap: str, unique: str, pki: Path, tmp_path: Path
) -> None:
    """A platform certificate per studio (role platform, CN the studio): another studio's
    platform and a device are refused, both on the access log; the studio's own is let in."""
    access = AccessSettings(tls=tls(pki, "gateway"), audit_topic=f"test.audit.{unique}")
    studio = StudioTableSettings(table_id="S-1", pot_group_id="g", seats=100, studio="studio-a")
    settings = settings_for(kafka_bootstrap, unique, tmp_path / "spool.sqlite").replace(
        access=access, studio_tables=(studio,)
    )
    gateway = await start_gateway(settings, access_logged=True)
    request = studio_pb2.OpenStudioRoundRequest(table_id="S-1", round_id="R1")
    try:
        for name, code in (
            ("studio-b", grpc.StatusCode.PERMISSION_DENIED),
            ("device-CAR-1", grpc.StatusCode.PERMISSION_DENIED),
        ):
            async with secure_channel(gateway.tls_target, tls(pki, name)) as channel:
                platform = studio_pb2_grpc.StudioPlatformServiceStub(channel)  # type: ignore[no-untyped-call]
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await platform.OpenStudioRound(request)
                assert code_of(refused) == code, name
        async with secure_channel(gateway.tls_target, tls(pki, "studio-a")) as channel:
            platform = studio_pb2_grpc.StudioPlatformServiceStub(channel)  # type: ignore[no-untyped-call]
            opened = await platform.OpenStudioRound(request)
            assert not opened.resent
        entries = await wait_for_entries(kafka_bootstrap, access.audit_topic, 4)
    finally:
        await gateway.stop()
    facts = [(e.principal, e.action, e.outcome) for e in entries]
    assert ("studio-b", "drive_studio_table", "refused") in facts
    assert ("CAR-1", "drive_studio_table", "refused") in facts
    assert ("studio-a", "drive_studio_table", "allowed") in facts
    assert ("studio-a", "drive_studio_table", "applied") in facts


async def test_signs_need_a_sign_certificate(kafka_bootstrap: str, unique: str, pki: Path) -> None:
    settings = DisplaySettings(
        bootstrap_servers=kafka_bootstrap,
        grpc_address=f"127.0.0.1:{free_port()}",
        http_port=free_port(),
        metrics_port=0,
        pot_updates_topic=f"test.pot-updates.{unique}",
        awards_topic=f"test.awards.{unique}",
        access=AccessSettings(
            tls=tls(pki, "display"),
            audit_topic=f"test.audit.{unique}",
            health_address=f"127.0.0.1:{free_port()}",
        ),
    )
    await ensure_topics(
        kafka_bootstrap,
        [TopicSpec(settings.pot_updates_topic, 1), TopicSpec(settings.awards_topic, 1)],
    )
    stop = asyncio.Event()
    task = asyncio.create_task(run_display(settings, stop))
    target = f"localhost:{settings.grpc_address.rsplit(':', 1)[1]}"
    try:
        await wait_health(settings.access.health_address, within=20)  # access log and gRPC up
        async with secure_channel(target, tls(pki, "device-CAR-1")) as channel:
            stub = display_pb2_grpc.SignServiceStub(channel)  # type: ignore[no-untyped-call]
            stream = stub.WatchSigns(display_pb2.WatchSignsRequest())
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stream.read()
            assert code_of(refused) == grpc.StatusCode.PERMISSION_DENIED
        async with secure_channel(target, tls(pki, "sign")) as channel:
            stub = display_pb2_grpc.SignServiceStub(channel)  # type: ignore[no-untyped-call]
            stream = stub.WatchSigns(display_pb2.WatchSignsRequest(), timeout=2)
            with pytest.raises(grpc.aio.AioRpcError) as quiet:
                await stream.read()  # nothing to show yet: the stream stays open until timeout
            assert code_of(quiet) == grpc.StatusCode.DEADLINE_EXCEEDED
        entries = await wait_for_entries(kafka_bootstrap, settings.access.audit_topic, 1)
        assert [(e.principal, e.action, e.outcome) for e in entries] == [
            ("CAR-1", "watch_signs", "refused")
        ]
    finally:
        stop.set()
        await task
