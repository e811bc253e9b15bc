"""GetPotGroup and ListPotGroups return every level (issue 37 item 2; rules L1, L4, D2) from a
real pot service over real Kafka and gRPC: a five-level group (`jackpot demo`'s configuration,
created through the API) gives each level's name, label, sign, rise, base and pot, equal to the
last pot update the service published for it; a one-level group gives none, as before levels.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import grpc
import pytest
from loadtest.rounds import CONFIG

from jackpot.pot import commands
from jackpot.tools.demo_tables import LEVELS_POKER_CONFIG
from jackpot.v1 import common_pb2, pot_pb2, pot_pb2_grpc, table_events_pb2
from tests.integration.in_process import pot_in_process
from tests.integration.test_pot_service import pot_settings, produce, until

pytestmark = pytest.mark.integration

LABELS = ["Escalera real", "Escalera de color", "Póker", "Full", "Color"]


async def test_L4_GetPotGroup_returns_every_level_as_the_last_pot_update(
    kafka_bootstrap: str, unique: str
) -> None:
    settings = pot_settings(kafka_bootstrap, unique, partitions=1)
    server = pot_in_process(settings)
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}")
    stub = pot_pb2_grpc.PotServiceStub(channel)  # type: ignore[no-untyped-call]
    changes: list[pot_pb2.PotUpdate] = []

    async def watch() -> None:
        async for response in stub.WatchPotGroups(pot_pb2.WatchPotGroupsRequest()):
            changes.append(response.update)

    watcher = asyncio.create_task(watch())
    try:
        admin = pot_pb2.AdminContext(requested_by="ana", reason="opening")
        for group_id, config in (("scl-five", LEVELS_POKER_CONFIG), ("scl-one", CONFIG)):
            await stub.CreatePotGroup(
                pot_pb2.CreatePotGroupRequest(
                    pot_group_id=group_id, config_json=json.dumps(config), admin=admin
                )
            )
            table = table_events_pb2.LinkTable(
                table_id=f"{group_id}-T1",
                game=common_pb2.GAME_CARIBBEAN,
                site="SCL",
                min_bet=1000,
                max_bet=5000,
                credit_value=1000,
            )
            await stub.LinkTable(
                pot_pb2.LinkTableRequest(pot_group_id=group_id, table=table, admin=admin)
            )
        for group_id, bets in (("scl-five", {1: 5000, 2: 1000}), ("scl-one", {1: 2000})):
            lock = commands.table_event(
                group_id,
                f"{group_id}-T1",
                "R1",
                1,
                common_pb2.GAME_CARIBBEAN,
                round_locked=commands.locked(bets),
            )
            await produce(settings, [lock])

        async def group(group_id: str) -> pot_pb2.PotGroup:
            request = pot_pb2.GetPotGroupRequest(pot_group_id=group_id)
            response: pot_pb2.GetPotGroupResponse = await stub.GetPotGroup(request)
            return response.pot_group

        def last_change(group_id: str) -> pot_pb2.PotUpdate | None:
            mine = [u for u in changes if u.pot_group_id == group_id and not u.heartbeat]
            return mine[-1] if mine else None

        async def both_rounds_seen() -> bool:
            """Each lock's update watched, and its group's state showing the round locked."""
            for group_id in ("scl-five", "scl-one"):
                update = last_change(group_id)
                if update is None or update.increment <= 0:
                    return False
                if (await group(group_id)).tables[0].locked_round_id != "R1":
                    return False
            return True

        await until(both_rounds_seen, "the rounds' pot updates never reached the watch and the API")
        shown = await group("scl-five")
        update = last_change("scl-five")
        assert update is not None
        assert [level.label for level in shown.levels] == LABELS
        assert list(shown.levels) == list(update.levels)  # name, label, sign, rise, base, pot
        assert all(level.increment > 0 for level in shown.levels)  # the lock's rise (D2)
        assert shown.levels[0].sign_value == shown.sign_value  # the main level is the group's
        listed = await stub.ListPotGroups(pot_pb2.ListPotGroupsRequest())
        by_id = {g.pot_group_id: g for g in listed.pot_groups}
        assert list(by_id["scl-five"].levels) == list(update.levels)
        assert not (await group("scl-one")).levels  # one level: as before (L1)
        assert not by_id["scl-one"].levels
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
            await watcher
        await channel.close()
        await server.stop()
