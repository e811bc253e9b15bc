"""Builders of the TableEvent messages the pot service consumes.

Admin commands travel on jackpot.table-events.v1 like the table events, keyed by pot group id, so
they are ordered with the rounds of the group and applied exactly once (the admin API builds them
here). Table round events are built by the gateways; :func:`table_event` is the same shape for
tests, benchmarks and simulators.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from jackpot.platform import codec
from jackpot.v1 import common_pb2, table_events_pb2


def new_event_id() -> str:
    return str(uuid.uuid4())


def _event(
    pot_group_id: str,
    *,
    event_id: str | None,
    table_id: str = "",
    round_id: str = "",
    sequence: int = 0,
    game: int = common_pb2.GAME_UNSPECIFIED,
    occurred_at_ns: int | None = None,
) -> table_events_pb2.TableEvent:
    return table_events_pb2.TableEvent(
        event_id=event_id or new_event_id(),
        table_id=table_id,
        round_id=round_id,
        sequence=sequence,
        occurred_at=codec.timestamp_ns(
            time.time_ns() if occurred_at_ns is None else occurred_at_ns
        ),
        pot_group_id=pot_group_id,
        game=game,  # type: ignore[arg-type]
    )


def command_event(
    pot_group_id: str,
    requested_by: str,
    reason: str,
    *,
    event_id: str | None = None,
    table_id: str = "",
    occurred_at_ns: int | None = None,
    **command: Any,
) -> table_events_pb2.TableEvent:
    """An admin command; ``command`` is create=, propose_config=, link_table= or unlink_table=."""
    event = _event(
        pot_group_id, event_id=event_id, table_id=table_id, occurred_at_ns=occurred_at_ns
    )
    event.pot_group_command.CopyFrom(
        table_events_pb2.PotGroupCommand(requested_by=requested_by, reason=reason, **command)
    )
    return event


def create_group(
    pot_group_id: str,
    config: Mapping[str, Any] | str,
    requested_by: str = "operator",
    reason: str = "",
    *,
    event_id: str | None = None,
) -> table_events_pb2.TableEvent:
    config_json = config if isinstance(config, str) else json.dumps(config)
    return command_event(
        pot_group_id,
        requested_by,
        reason,
        event_id=event_id,
        create=table_events_pb2.CreatePotGroup(config_json=config_json),
    )


def propose_config(
    pot_group_id: str,
    config: Mapping[str, Any] | str,
    requested_by: str,
    reason: str,
    *,
    event_id: str | None = None,
) -> table_events_pb2.TableEvent:
    config_json = config if isinstance(config, str) else json.dumps(config)
    return command_event(
        pot_group_id,
        requested_by,
        reason,
        event_id=event_id,
        propose_config=table_events_pb2.ProposeConfig(config_json=config_json),
    )


def link_table(
    pot_group_id: str,
    link: table_events_pb2.LinkTable,
    requested_by: str = "operator",
    reason: str = "",
    *,
    event_id: str | None = None,
) -> table_events_pb2.TableEvent:
    return command_event(
        pot_group_id,
        requested_by,
        reason,
        event_id=event_id,
        table_id=link.table_id,
        link_table=link,
    )


def unlink_table(
    pot_group_id: str,
    table_id: str,
    requested_by: str = "operator",
    reason: str = "",
    *,
    event_id: str | None = None,
) -> table_events_pb2.TableEvent:
    return command_event(
        pot_group_id,
        requested_by,
        reason,
        event_id=event_id,
        table_id=table_id,
        unlink_table=table_events_pb2.UnlinkTable(table_id=table_id),
    )


def table_event(
    pot_group_id: str,
    table_id: str,
    round_id: str,
    sequence: int,
    game: int,
    *,
    event_id: str | None = None,
    occurred_at_ns: int | None = None,
    **payload: Any,
) -> table_events_pb2.TableEvent:
    """A table round event; ``payload`` is round_locked=, seat_forfeited=, round_result=, ..."""
    event = _event(
        pot_group_id,
        event_id=event_id,
        table_id=table_id,
        round_id=round_id,
        sequence=sequence,
        game=game,
        occurred_at_ns=occurred_at_ns,
    )
    ((name, message),) = payload.items()
    getattr(event, name).CopyFrom(message)
    return event


def locked(
    bets: Mapping[int, int], players: Mapping[int, str] | None = None
) -> table_events_pb2.RoundLocked:
    """A lock's bets; ``players``: a studio table's seat -> player (O1; none at a land table)."""
    players = players or {}
    return table_events_pb2.RoundLocked(
        bets=[
            table_events_pb2.SeatBet(seat=seat, bet=bet, player=players.get(seat, ""))
            for seat, bet in bets.items()
        ]
    )


def result(
    hands: Mapping[int, Sequence[str]], community: Sequence[str] = ()
) -> table_events_pb2.RoundResult:
    return table_events_pb2.RoundResult(
        hands=[
            table_events_pb2.SeatHand(seat=seat, cards=list(cards)) for seat, cards in hands.items()
        ],
        community_cards=list(community),
    )
