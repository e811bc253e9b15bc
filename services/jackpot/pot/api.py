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
from collections.abc import AsyncIterator

import grpc
import structlog
from aiokafka import AIOKafkaProducer

from jackpot.domain.access import Action, Principal
from jackpot.domain.config import load_config
from jackpot.domain.errors import DomainError
from jackpot.platform import codec
from jackpot.platform.authz import Authorizer
from jackpot.platform.kafka import idempotent_producer
from jackpot.pot import commands, records
from jackpot.pot.settings import PotSettings
from jackpot.pot.view import PotStateView, read_ledger_page
from jackpot.v1 import pot_pb2, pot_pb2_grpc, table_events_pb2

log = structlog.get_logger("jackpot.pot.api")

SERVICE_NAME = pot_pb2.DESCRIPTOR.services_by_name["PotService"].full_name
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000

# How a refusal's reason maps to a gRPC status.
REFUSAL_STATUS = {
    "INVALID_CONFIG": grpc.StatusCode.INVALID_ARGUMENT,
    "MALFORMED": grpc.StatusCode.INVALID_ARGUMENT,
    "UNKNOWN_GAME": grpc.StatusCode.INVALID_ARGUMENT,
    "UNKNOWN_POT_GROUP": grpc.StatusCode.NOT_FOUND,
    "UNKNOWN_TABLE": grpc.StatusCode.NOT_FOUND,
}


class CommandPublisher:
    """Publishes admin commands on the table-events topic with an idempotent producer."""

    def __init__(self, settings: PotSettings) -> None:
        self.settings = settings
        self._producer: AIOKafkaProducer | None = None

    async def start(self) -> None:
        options = self.settings.kafka_options()
        self._producer = idempotent_producer(
            options.pop("bootstrap_servers"),
            client_id=f"{self.settings.instance_id}-admin",
            **options,
        )
        await self._producer.start()

    async def stop(self) -> None:
        if self._producer is not None:
            await self._producer.stop()

    async def publish(self, event: table_events_pb2.TableEvent) -> None:
        assert self._producer is not None
        await self._producer.send_and_wait(
            self.settings.table_events_topic,
            event.SerializeToString(),
            key=event.pot_group_id.encode(),
        )


class PotApi(pot_pb2_grpc.PotServiceServicer):
    """jackpot.v1.PotService."""

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

    # ---------------------------------------------------------------------------- queries

    async def GetPotGroup(
        self, request: pot_pb2.GetPotGroupRequest, context: grpc.aio.ServicerContext
    ) -> pot_pb2.GetPotGroupResponse:
        await self.authorizer.require_read(context, "GetPotGroup")
        return pot_pb2.GetPotGroupResponse(
            pot_group=await self._pot_group(request.pot_group_id, context)
        )

    async def ListPotGroups(
        self, request: pot_pb2.ListPotGroupsRequest, context: grpc.aio.ServicerContext
    ) -> pot_pb2.ListPotGroupsResponse:
        await self.authorizer.require_read(context, "ListPotGroups")
        groups = []
        for group_id in self.view.group_ids():
            found = self.view.group(group_id)
            if found is not None:
                groups.append(records.pot_group_message(*found))
        return pot_pb2.ListPotGroupsResponse(pot_groups=groups)

    async def WatchPotGroups(
        self, request: pot_pb2.WatchPotGroupsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pot_pb2.WatchPotGroupsResponse]:
        await self.authorizer.require_read(context, "WatchPotGroups")
        subscription = self.view.subscribe(request.pot_group_ids, request.include_heartbeats)
        try:
            for latest in self.view.latest_updates(request.pot_group_ids):
                yield pot_pb2.WatchPotGroupsResponse(update=latest)
            while True:
                update = await subscription.queue.get()
                if update is None:
                    if subscription.overflowed:
                        await context.abort(
                            grpc.StatusCode.RESOURCE_EXHAUSTED,
                            "the watcher fell too far behind the pot updates; watch again",
                        )
                    return
                yield pot_pb2.WatchPotGroupsResponse(update=update)
        finally:
            self.view.unsubscribe(subscription)

    async def GetMeters(
        self, request: pot_pb2.GetMetersRequest, context: grpc.aio.ServicerContext
    ) -> pot_pb2.GetMetersResponse:
        await self.authorizer.require_read(context, "GetMeters")
        found = self.view.group(request.pot_group_id)
        if found is None:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"pot group {request.pot_group_id!r} does not exist"
            )
        _, group = found  # type: ignore[misc]
        return pot_pb2.GetMetersResponse(meters=records.meters_message(group))

    async def ListLedger(
        self, request: pot_pb2.ListLedgerRequest, context: grpc.aio.ServicerContext
    ) -> pot_pb2.ListLedgerResponse:
        await self.authorizer.require_read(context, "ListLedger")
        if not request.pot_group_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "pot_group_id is required")
        page_size = min(request.page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        try:
            entries, token = await read_ledger_page(
                self.settings, request.pot_group_id, page_size, request.page_token
            )
        except ValueError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        return pot_pb2.ListLedgerResponse(entries=entries, next_page_token=token)

    # ------------------------------------------------------------------------------ admin

    async def CreatePotGroup(
        self, request: pot_pb2.CreatePotGroupRequest, context: grpc.aio.ServicerContext
    ) -> pot_pb2.CreatePotGroupResponse:
        who = await self._require(context, request.admin, request.pot_group_id, "create", False)
        await self._valid_config(context, request.config_json)
        if self.view.group(request.pot_group_id) is not None:
            await context.abort(
                grpc.StatusCode.ALREADY_EXISTS, f"pot group {request.pot_group_id} exists already"
            )
        event = commands.create_group(
            request.pot_group_id,
            request.config_json,
            self._requested_by(who, request.admin),
            request.admin.reason,
            event_id=request.admin.request_id or None,
        )
        group = await self._execute(
            event, context, who, {"INVALID_STATE": grpc.StatusCode.ALREADY_EXISTS}
        )
        return pot_pb2.CreatePotGroupResponse(pot_group=group, command_event_id=event.event_id)

    async def UpdateConfig(
        self, request: pot_pb2.UpdateConfigRequest, context: grpc.aio.ServicerContext
    ) -> pot_pb2.UpdateConfigResponse:
        who = await self._require(context, request.admin, request.pot_group_id, "update", True)
        await self._valid_config(context, request.config_json)
        event = commands.propose_config(
            request.pot_group_id,
            request.config_json,
            self._requested_by(who, request.admin),
            request.admin.reason,
            event_id=request.admin.request_id or None,
        )
        group = await self._execute(event, context, who)
        return pot_pb2.UpdateConfigResponse(pot_group=group, command_event_id=event.event_id)

    async def LinkTable(
        self, request: pot_pb2.LinkTableRequest, context: grpc.aio.ServicerContext
    ) -> pot_pb2.LinkTableResponse:
        who = await self._require(
            context, request.admin, request.pot_group_id, f"link {request.table.table_id}", False
        )
        if not request.table.table_id or codec.game_of(request.table.game) is None:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "table.table_id and a known table.game needed"
            )
        event = commands.link_table(
            request.pot_group_id,
            request.table,
            self._requested_by(who, request.admin),
            request.admin.reason,
            event_id=request.admin.request_id or None,
        )
        # Limits that differ from the group's are a precondition of the group, not bad input (E1).
        group = await self._execute(
            event, context, who, {"INVALID_CONFIG": grpc.StatusCode.FAILED_PRECONDITION}
        )
        return pot_pb2.LinkTableResponse(pot_group=group, command_event_id=event.event_id)

    async def UnlinkTable(
        self, request: pot_pb2.UnlinkTableRequest, context: grpc.aio.ServicerContext
    ) -> pot_pb2.UnlinkTableResponse:
        who = await self._require(
            context, request.admin, request.pot_group_id, f"unlink {request.table_id}", False
        )
        if not request.table_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "table_id is required")
        event = commands.unlink_table(
            request.pot_group_id,
            request.table_id,
            self._requested_by(who, request.admin),
            request.admin.reason,
            event_id=request.admin.request_id or None,
        )
        group = await self._execute(event, context, who)
        return pot_pb2.UnlinkTableResponse(pot_group=group, command_event_id=event.event_id)

    # ---------------------------------------------------------------------------- helpers

    async def _pot_group(
        self, group_id: str, context: grpc.aio.ServicerContext
    ) -> pot_pb2.PotGroup:
        found = self.view.group(group_id)
        if found is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"pot group {group_id!r} does not exist")
        return records.pot_group_message(*found)  # type: ignore[misc]

    async def _require(
        self,
        context: grpc.aio.ServicerContext,
        admin: pot_pb2.AdminContext,
        group_id: str,
        change: str,
        needs_reason: bool,
    ) -> Principal:
        """The operator making this change (audited), once the request names what C7 wants."""
        if not group_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "pot_group_id is required")
        principal = await self.authorizer.require(
            context,
            Action.CONFIGURE_POT,
            target=group_id,
            detail=f"{change}; reason: {admin.reason or '-'}; request {admin.request_id or '-'}",
        )
        if not admin.requested_by and principal.authenticated_by != "x509":
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "admin.requested_by is required (rule C7)"
            )
        if needs_reason and not admin.reason:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "admin.reason is required (rule C7)"
            )
        return principal

    @staticmethod
    def _requested_by(principal: Principal, admin: pot_pb2.AdminContext) -> str:
        """Who the ledger names (C7): the certificate's name when there is one, not a claim."""
        return principal.name if principal.authenticated_by == "x509" else admin.requested_by

    async def _valid_config(self, context: grpc.aio.ServicerContext, config_json: str) -> None:
        try:
            data = json.loads(config_json)
            if not isinstance(data, dict):
                raise ValueError("configuration JSON must be an object")
            load_config(data)
        except (ValueError, DomainError) as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"INVALID_CONFIG: {error}")

    async def _execute(
        self,
        event: table_events_pb2.TableEvent,
        context: grpc.aio.ServicerContext,
        principal: Principal,
        statuses: dict[str, grpc.StatusCode] | None = None,
    ) -> pot_pb2.PotGroup:
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
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"command {event.event_id} was published but not seen applied within "
                f"{timeout:g} s; it may still be applied: check GetPotGroup before retrying "
                "(retry with the same admin.request_id to make it idempotent)",
            )
        finally:
            self.view.forget(event.event_id)
        self.authorizer.outcome(
            principal,
            Action.CONFIGURE_POT,
            "applied" if outcome.applied else "refused",
            event.pot_group_id,
            f"command {event.event_id}"
            + ("" if outcome.applied else f": {outcome.reason}: {outcome.detail}"),
        )
        if not outcome.applied:
            bound.info("command_refused", reason=outcome.reason, detail=outcome.detail)
            status = {**REFUSAL_STATUS, **(statuses or {})}.get(
                outcome.reason, grpc.StatusCode.FAILED_PRECONDITION
            )
            await context.abort(status, f"{outcome.reason}: {outcome.detail}")
        bound.info("command_confirmed")
        return await self._pot_group(event.pot_group_id, context)
