"""The read-only watch of one table for its dealer terminal (rule D3): ``WatchTable``.

The view is computed from the gateway's own state (the table's round and seats, the pot group's
sign value and, for a group with several levels, every level's (L4), progressive open or closed
and why) and sent whenever it differs from the last one sent; a studio table's view (O1) counts
its round's bets instead of listing its seats. It is sampled on a short period instead of hooked
into the device path: the watch must never slow down or change how a device event is accepted
and spooled, and a dealer's screen needs no more than a few updates a second.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from jackpot.domain.studio_table import StudioTable
from jackpot.domain.table import Phase, Table
from jackpot.gateway.service import Gateway
from jackpot.v1 import device_pb2

WATCH_PERIOD_SECONDS = 0.1


def round_state(table: Table | StudioTable) -> device_pb2.RoundState:
    """Open while betting, locked after the dealer's lock, results once settled."""
    if table.phase is Phase.BETTING:
        return device_pb2.ROUND_STATE_OPEN
    if table.phase is Phase.LOCKED:
        return device_pb2.ROUND_STATE_LOCKED
    return device_pb2.ROUND_STATE_RESULTS if table.last_round_id else device_pb2.ROUND_STATE_IDLE


def table_view(gateway: Gateway, table_id: str) -> device_pb2.TableView:
    """What the table's terminal shows now; the table must be one of this gateway's."""
    if table_id in gateway.studio.tables:
        return studio_view(gateway, table_id)
    table = gateway.tables[table_id]
    configured = gateway.settings.table(table_id)
    pot_group_id = configured.pot_group_id if configured is not None else ""
    pot = gateway.pots.get(pot_group_id)
    locked = table.phase is Phase.LOCKED
    seats = [
        device_pb2.SeatView(
            seat=number,
            bet_credits=seat.bet_credits,
            bet=seat.bet_credits * table.limits.credit_value,
            lamp=bool(seat.bet_credits) and not seat.closed,
            locked=locked and bool(seat.bet_credits),
            closed=seat.closed,
            forfeited=table.forfeited.get(number, ""),
        )
        for number, seat in sorted(table.seats.items())
    ]
    return device_pb2.TableView(
        table_id=table_id,
        pot_group_id=pot_group_id,
        round_id=table.round_id or table.last_round_id,
        round_state=round_state(table),
        seats=seats,
        sign_value=pot.sign_value if pot is not None else 0,
        progressive_open=table.progressive_open,
        closed_reason="" if table.progressive_open else gateway.closed_reason.get(table_id, ""),
        device_connected=table_id in gateway.sessions,
        levels=[
            device_pb2.TableLevel(name=name, label=label, sign_value=value)
            for name, label, value in (pot.levels if pot is not None else ())
        ],
    )


def studio_view(gateway: Gateway, table_id: str) -> device_pb2.TableView:
    """A studio table's view (O1): its round and its bets counted, never listed seat by seat;
    "connected" while the gateway serves the platform's calls (there is no device)."""
    table = gateway.studio.tables[table_id]
    pot_group_id = gateway.studio.configured(table_id).pot_group_id
    pot = gateway.pots.get(pot_group_id)
    closed = gateway.studio.closed_reason.get(table_id, "")
    return device_pb2.TableView(
        table_id=table_id,
        pot_group_id=pot_group_id,
        round_id=table.round_id or table.last_round_id,
        round_state=round_state(table),
        sign_value=pot.sign_value if pot is not None else 0,
        progressive_open=table.progressive_open,
        closed_reason="" if table.progressive_open else closed,
        device_connected=True,
        levels=[
            device_pb2.TableLevel(name=name, label=label, sign_value=value)
            for name, label, value in (pot.levels if pot is not None else ())
        ],
        studio=device_pb2.StudioRoundView(
            seats=table.seats,
            bets=len(table.bets),
            bet_total=sum(bet.pesos for bet in table.bets.values()),
            folded=len(table.folded),
        ),
    )


async def watch_table(
    gateway: Gateway, table_id: str, period: float = WATCH_PERIOD_SECONDS
) -> AsyncIterator[device_pb2.TableView]:
    """The table's view at once, then each time it changes, until the caller stops."""
    last: device_pb2.TableView | None = None
    while True:
        view = table_view(gateway, table_id)
        if view != last:
            last = view
            yield view
        await asyncio.sleep(period)
