"""What a table-events record asks of a pot group: the record read into a ``TableEvent`` and
checked, and the engine call each command or table event makes. Every refusal is a
:class:`~jackpot.domain.errors.DomainError` naming why (MALFORMED, UNKNOWN_TABLE, UNKNOWN_GAME,
INVALID_CONFIG, or the engine's own); the pot's book (:mod:`jackpot.pot.pot_book`) turns it
into a dead letter and applies nothing of the record.
"""

from __future__ import annotations

import json
from typing import Protocol

from google.protobuf.message import DecodeError

from jackpot.domain.config import PotGroupConfig, load_config
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import Event
from jackpot.domain.table_messages import one_per_seat
from jackpot.platform import codec
from jackpot.v1 import table_events_pb2


class ConsumedRecord(Protocol):
    """A consumed table-events record as the pot reads it (an aiokafka ``ConsumerRecord`` is
    one; tests and tools build :class:`~jackpot.pot.pot_book.InputRecord`)."""

    @property
    def value(self) -> bytes | None: ...
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def timestamp(self) -> int: ...


def decode(record: ConsumedRecord) -> table_events_pb2.TableEvent:
    """The record's TableEvent, well formed for a pot group on this partition, or MALFORMED."""
    if record.value is None:
        raise DomainError(Reason.MALFORMED, "empty record (tombstone)")
    try:
        event = table_events_pb2.TableEvent.FromString(record.value)
    except DecodeError as error:
        raise DomainError(Reason.MALFORMED, f"not a TableEvent: {error}") from None
    if not event.event_id:
        raise DomainError(Reason.MALFORMED, "event_id is empty")
    if not event.pot_group_id:
        raise DomainError(Reason.MALFORMED, f"event {event.event_id} has no pot_group_id")
    if record.key is not None and record.key != event.pot_group_id.encode():
        raise DomainError(
            Reason.MALFORMED,
            f"record key {record.key!r} is not the event's pot group {event.pot_group_id!r}: "
            "it would be on another group's partition",
        )
    if event.WhichOneof("payload") is None:
        raise DomainError(Reason.MALFORMED, f"event {event.event_id} has no payload")
    return event


def check_table_event(group: PotGroup, event: table_events_pb2.TableEvent) -> None:
    """A table event names a table linked to ``group`` as the game it is linked as, and a
    round."""
    table = group.tables.get(event.table_id)
    if table is None:
        raise DomainError(
            Reason.UNKNOWN_TABLE,
            f"table {event.table_id} is not linked to pot group {event.pot_group_id}",
        )
    if codec.game_of(event.game) != table.game:
        raise DomainError(
            Reason.UNKNOWN_GAME,
            f"event says game {codec.game_name(event.game)}; table {event.table_id} is "
            f"linked as {table.game.value}",
        )
    if not event.round_id:
        raise DomainError(Reason.MALFORMED, f"event {event.event_id} has no round_id")


def group_command(
    group: PotGroup, command: table_events_pb2.PotGroupCommand, kind: str | None
) -> list[Event]:
    if kind == "propose_config":
        config = load_config_json(command.propose_config.config_json)
        return group.propose_config(config, command.requested_by, command.reason)
    if kind == "link_table":
        link = command.link_table
        game = codec.game_of(link.game)
        if not link.table_id or game is None:
            raise DomainError(Reason.MALFORMED, "link_table needs a table_id and a known game")
        return group.link_table(
            link.table_id,
            game,
            link.site,
            min_bet=link.min_bet,
            max_bet=link.max_bet,
            credit_value=link.credit_value,
            studio_seats=link.studio_seats,
        )
    if kind == "unlink_table":
        if not command.unlink_table.table_id:
            raise DomainError(Reason.MALFORMED, "unlink_table needs a table_id")
        return group.unlink_table(command.unlink_table.table_id)
    raise DomainError(Reason.MALFORMED, f"pot group command without a known command ({kind})")


def round_event(group: PotGroup, event: table_events_pb2.TableEvent) -> list[Event]:
    """The engine call a table event makes (rules C1, E2-E5, S1-S9); refusals name why."""
    kind = event.WhichOneof("payload")
    table_id, round_id = event.table_id, event.round_id
    if kind == "round_locked":
        seat_bets = event.round_locked.bets
        bets = one_per_seat(((b.seat, b.bet) for b in seat_bets), "bets")
        players = {b.seat: b.player for b in seat_bets if b.player}  # O1: a studio round's
        return group.lock_round(table_id, round_id, bets, players)
    if kind == "seat_forfeited":
        forfeit = event.seat_forfeited
        try:
            reason = codec.forfeit_reason_from_proto(forfeit.reason)
        except DomainError as error:
            raise DomainError(error.reason, f"seat {forfeit.seat} {error.detail}") from None
        return group.forfeit(table_id, round_id, forfeit.seat, reason)
    if kind == "round_result":
        result = event.round_result
        hands = one_per_seat(((h.seat, list(h.cards)) for h in result.hands), "hands")
        return group.resolve_round(
            table_id,
            round_id,
            hands,
            list(result.community_cards),
            shared_hand=list(result.shared_hand),
        )
    if kind == "round_voided":
        locked = group.locked.get(table_id)
        if locked is not None and locked.round_id == round_id:
            raise DomainError(
                Reason.INVALID_STATE,
                f"round {round_id} is locked and its bets collected; only a round voided "
                "before lock is refunded (rule C1)",
            )
        return []  # never collected, nothing to refund from the pot
    if kind == "seat_closed":
        return []  # the gateway closes the seat (E5); the pot holds no seat state
    raise DomainError(Reason.MALFORMED, f"unknown table event payload {kind}")


def load_config_json(text: str) -> PotGroupConfig:
    """Operator JSON to a validated configuration; anything hostile is INVALID_CONFIG."""
    try:
        return load_config(_config_json(text))
    except (TypeError, ValueError, OverflowError, RecursionError, AttributeError) as error:
        if isinstance(error, DomainError):
            raise
        raise DomainError(
            Reason.INVALID_CONFIG, f"configuration refused: {error!r}"[:500]
        ) from None


def _config_json(text: str) -> dict[str, object]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise DomainError(Reason.INVALID_CONFIG, f"configuration is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise DomainError(Reason.INVALID_CONFIG, "configuration JSON must be an object")
    return data
