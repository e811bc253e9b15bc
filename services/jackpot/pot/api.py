"""The pot service's gRPC API (jackpot.v1.PotService): a thin, typed layer over the view.

Queries read the committed state every instance follows (:class:`~jackpot.pot.view.PotStateView`).
Admin calls validate what they can, publish a PotGroupCommand on the table-events topic (key = pot
group id, so it is ordered with the group's rounds and applied exactly once), then wait until the
view sees the command applied (its event id in the group's committed state) or refused (a dead
letter), or the command timeout passes (DEADLINE_EXCEEDED: the command may still be applied).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import grpc
import structlog
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from jackpot.domain.access import Action, Principal
from jackpot.domain.config import load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError, Reason
from jackpot.platform import codec
from jackpot.platform.authz import Authorizer
from jackpot.platform.grpc_edge import Call, answered
from jackpot.platform.kafka import KafkaConnection, stop_client
from jackpot.pot import commands, records
from jackpot.pot.settings import PotSettings
from jackpot.pot.view import PotStateView, read_ledger_page
from jackpot.v1 import pot_pb2, pot_pb2_grpc, table_events_pb2

log = structlog.get_logger("jackpot.pot.api")

AdminRequest = (
    pot_pb2.CreatePotGroupRequest
    | pot_pb2.UpdateConfigRequest
    | pot_pb2.LinkTableRequest
    | pot_pb2.UnlinkTableRequest
)
SERVICE_NAME = pot_pb2.DESCRIPTOR.services_by_name["PotService"].full_name
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


class CommandPublisher:
    """Publishes admin commands on the table-events topic with an idempotent producer.

    A command the brokers did not take is answered as an error and the next one goes on a new
    producer: aiokafka spends a failed batch's sequence numbers, so the old one would be
    refused OutOfOrderSequenceNumber on that partition for ever (docs/architecture.md, "What we
    trust the Kafka client to do")."""

    def __init__(self, settings: PotSettings) -> None:
        self.settings = settings
        self._producer: AIOKafkaProducer | None = None
        self._replacing = asyncio.Lock()

    async def start(self) -> None:
        self._producer = await self._started()

    async def _started(self) -> AIOKafkaProducer:
        producer = KafkaConnection.of(self.settings).producer(
            client_id=f"{self.settings.processor.instance_id}-admin"
        )
        await producer.start()
        return producer

    async def stop(self) -> None:
        if self._producer is not None:
            await stop_client(self._producer)

    async def publish(self, event: table_events_pb2.TableEvent) -> None:
        producer = self._producer
        assert producer is not None
        try:
            await producer.send_and_wait(
                self.settings.table_events_topic,
                event.SerializeToString(),
                key=event.pot_group_id.encode(),
            )
        except KafkaError:
            await self._replace(producer)
            raise

    async def _replace(self, failed: AIOKafkaProducer) -> None:
        async with self._replacing:
            if self._producer is not failed:
                return  # another command replaced it meanwhile
            self._producer = await self._started()
        log.warning("admin_producer_replaced")
        await stop_client(failed)


class PotApi(pot_pb2_grpc.PotServiceServicer):
    """jackpot.v1.PotService."""

    service_name = SERVICE_NAME

    def __init__(
        self,
        settings: PotSettings,
        view: PotStateView,
        publisher: CommandPublisher,
        authorizer: Authorizer,
    ) -> None:
        self.settings = settings
        self.view = view
        self.publisher = publisher
        self.authorizer = authorizer

    def register(self, server: grpc.aio.Server) -> None:
        pot_pb2_grpc.add_PotServiceServicer_to_server(self, server)  # type: ignore[no-untyped-call]

    async def end_streams(self) -> None:
        """End every WatchPotGroups stream (before a graceful stop, so none holds it up)."""
        self.view.end_watches()

    # ---------------------------------------------------------------------------- queries

    @answered
    async def GetPotGroup(
        self, request: pot_pb2.GetPotGroupRequest, call: Call
    ) -> pot_pb2.GetPotGroupResponse:
        await call.read("GetPotGroup")
        return pot_pb2.GetPotGroupResponse(pot_group=self._pot_group(request.pot_group_id))

    @answered
    async def ListPotGroups(
        self, request: pot_pb2.ListPotGroupsRequest, call: Call
    ) -> pot_pb2.ListPotGroupsResponse:
        await call.read("ListPotGroups")
        groups = []
        for group_id in self.view.group_ids():
            found = self.view.group(group_id)
            if found is not None:
                groups.append(records.pot_group_message(*found))
        return pot_pb2.ListPotGroupsResponse(pot_groups=groups)

    @answered
    async def WatchPotGroups(
        self, request: pot_pb2.WatchPotGroupsRequest, call: Call
    ) -> AsyncIterator[pot_pb2.WatchPotGroupsResponse]:
        await call.read("WatchPotGroups")
        subscription = self.view.subscribe(request.pot_group_ids, request.include_heartbeats)
        try:
            for latest in self.view.latest_updates(request.pot_group_ids):
                yield pot_pb2.WatchPotGroupsResponse(update=latest)
            while True:
                update = await subscription.queue.get()
                if update is None:
                    if subscription.overflowed:
                        await call.abort(
                            grpc.StatusCode.RESOURCE_EXHAUSTED,
                            "the watcher fell too far behind the pot updates; watch again",
                        )
                    return
                yield pot_pb2.WatchPotGroupsResponse(update=update)
        finally:
            self.view.unsubscribe(subscription)

    @answered
    async def GetMeters(
        self, request: pot_pb2.GetMetersRequest, call: Call
    ) -> pot_pb2.GetMetersResponse:
        await call.read("GetMeters")
        _, group = self._found(request.pot_group_id)
        return pot_pb2.GetMetersResponse(meters=records.meters_message(group))

    @answered
    async def ListLedger(
        self, request: pot_pb2.ListLedgerRequest, call: Call
    ) -> pot_pb2.ListLedgerResponse:
        await call.read("ListLedger")
        if not request.pot_group_id:
            raise DomainError(Reason.MALFORMED, "pot_group_id is required")
        page_size = min(request.page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        try:
            entries, token = await read_ledger_page(
                self.settings, request.pot_group_id, page_size, request.page_token
            )
        except ValueError as error:  # a page token that is not one of ours
            raise DomainError(Reason.MALFORMED, str(error)) from None
        return pot_pb2.ListLedgerResponse(entries=entries, next_page_token=token)

    # ------------------------------------------------------------------------------ admin

    @answered
    async def CreatePotGroup(
        self, request: pot_pb2.CreatePotGroupRequest, call: Call
    ) -> pot_pb2.CreatePotGroupResponse:
        group_id = request.pot_group_id
        who = await self._require(call, request.admin, group_id, "create", False)
        self._valid_config(request.config_json)
        if self.view.group(group_id) is not None:
            await call.abort(grpc.StatusCode.ALREADY_EXISTS, f"pot group {group_id} exists already")
        event = self._command(commands.create_group, group_id, request.config_json, who, request)
        group = await self._execute(event, call)
        return pot_pb2.CreatePotGroupResponse(pot_group=group, command_event_id=event.event_id)

    @answered
    async def UpdateConfig(
        self, request: pot_pb2.UpdateConfigRequest, call: Call
    ) -> pot_pb2.UpdateConfigResponse:
        group_id = request.pot_group_id
        who = await self._require(call, request.admin, group_id, "update", True)
        self._valid_config(request.config_json)
        event = self._command(commands.propose_config, group_id, request.config_json, who, request)
        group = await self._execute(event, call)
        return pot_pb2.UpdateConfigResponse(pot_group=group, command_event_id=event.event_id)

    @answered
    async def LinkTable(
        self, request: pot_pb2.LinkTableRequest, call: Call
    ) -> pot_pb2.LinkTableResponse:
        group_id, table = request.pot_group_id, request.table
        who = await self._require(call, request.admin, group_id, f"link {table.table_id}", False)
        if not table.table_id or codec.game_of(table.game) is None:
            raise DomainError(Reason.MALFORMED, "table.table_id and a known table.game needed")
        event = self._command(commands.link_table, group_id, table, who, request)
        group = await self._execute(event, call)
        return pot_pb2.LinkTableResponse(pot_group=group, command_event_id=event.event_id)

    @answered
    async def UnlinkTable(
        self, request: pot_pb2.UnlinkTableRequest, call: Call
    ) -> pot_pb2.UnlinkTableResponse:
        group_id, table_id = request.pot_group_id, request.table_id
        who = await self._require(call, request.admin, group_id, f"unlink {table_id}", False)
        if not table_id:
            raise DomainError(Reason.MALFORMED, "table_id is required")
        event = self._command(commands.unlink_table, group_id, table_id, who, request)
        group = await self._execute(event, call)
        return pot_pb2.UnlinkTableResponse(pot_group=group, command_event_id=event.event_id)

    # ---------------------------------------------------------------------------- helpers

    def _found(self, group_id: str) -> tuple[pot_pb2.PotGroupState, PotGroup]:
        found = self.view.group(group_id)
        if found is None:
            raise DomainError(Reason.UNKNOWN_POT_GROUP, f"pot group {group_id!r} does not exist")
        return found

    def _pot_group(self, group_id: str) -> pot_pb2.PotGroup:
        return records.pot_group_message(*self._found(group_id))

    async def _require(
        self,
        call: Call,
        admin: pot_pb2.AdminContext,
        group_id: str,
        change: str,
        needs_reason: bool,
    ) -> Principal:
        """The operator making this change (audited), once the request names what C7 wants."""
        if not group_id:
            raise DomainError(Reason.MALFORMED, "pot_group_id is required")
        principal = await call.require(
            Action.CONFIGURE_POT,
            target=group_id,
            detail=f"{change}; reason: {admin.reason or '-'}; request {admin.request_id or '-'}",
        )
        if not admin.requested_by and principal.authenticated_by != "x509":
            raise DomainError(Reason.MALFORMED, "admin.requested_by is required (rule C7)")
        if needs_reason and not admin.reason:
            raise DomainError(Reason.MALFORMED, "admin.reason is required (rule C7)")
        return principal

    @staticmethod
    def _command(
        build: Callable[..., table_events_pb2.TableEvent],
        group_id: str,
        payload: object,
        principal: Principal,
        request: AdminRequest,
    ) -> table_events_pb2.TableEvent:
        """The command ``build`` (one of :mod:`jackpot.pot.commands`) makes of ``payload``, naming
        who the ledger names (C7: the certificate's name when there is one, not a claim), why,
        and the request id that makes a retry idempotent."""
        admin = request.admin
        requested_by = (
            principal.name if principal.authenticated_by == "x509" else admin.requested_by
        )
        return build(
            group_id, payload, requested_by, admin.reason, event_id=admin.request_id or None
        )

    @staticmethod
    def _valid_config(config_json: str) -> None:
        """A configuration valid on its own, or MALFORMED (INVALID_ARGUMENT) before anything is
        published; what the pot refuses then conflicts with the group (INVALID_CONFIG)."""
        try:
            data = json.loads(config_json)
            if not isinstance(data, dict):
                raise ValueError("configuration JSON must be an object")
            load_config(data)
        except (ValueError, DomainError) as error:
            raise DomainError(Reason.MALFORMED, f"config_json: {error}") from None

    async def _execute(self, event: table_events_pb2.TableEvent, call: Call) -> pot_pb2.PotGroup:
        """Publish a command and wait for its outcome; the group as it stands after it."""
        command = event.pot_group_command
        bound = log.bind(
            pot_group=event.pot_group_id,
            command=command.WhichOneof("command"),
            event_id=event.event_id,
            requested_by=command.requested_by,
        )
        outcome_future = self.view.expect(event.event_id, event.pot_group_id)
        timeout = self.settings.command_timeout_ms / 1000
        try:
            if not outcome_future.done():
                await self.publisher.publish(event)
            outcome = await asyncio.wait_for(outcome_future, timeout)
        except TimeoutError:
            bound.warning("command_not_confirmed", timeout_seconds=timeout)
            await call.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"command {event.event_id} was published but not seen applied within "
                f"{timeout:g} s; it may still be applied: check GetPotGroup before retrying "
                "(retry with the same admin.request_id to make it idempotent)",
                outcome=None,  # not known: the ledger will say
            )
        finally:
            self.view.forget(event.event_id)
        if not outcome.applied:
            bound.info("command_refused", reason=outcome.reason, detail=outcome.detail)
            raise DomainError(
                Reason(outcome.reason), f"{outcome.detail} (command {event.event_id})"
            )
        call.applied(f"command {event.event_id}")
        bound.info("command_confirmed")
        return self._pot_group(event.pot_group_id)
