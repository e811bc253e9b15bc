"""What an accepted device event becomes on Kafka: each fact of the table's outcome as a
``TableEvent`` keyed by the table's pot group, numbered by the table's own published sequence
(the pot's idempotence key, with the event id derived from it), and a refused seat or message
as a dead letter naming why. Gateway-only facts (a seat opened) are not published.
"""

from __future__ import annotations

import time
import uuid

from google.protobuf.timestamp_pb2 import Timestamp

from jackpot.domain.cards import Game
from jackpot.domain.errors import Reason
from jackpot.domain.table import Table
from jackpot.domain.table_messages import (
    Fact,
    RoundLockedFact,
    RoundResultFact,
    RoundVoidedFact,
    SeatClosedFact,
    SeatForfeitedFact,
    SeatOpenedFact,
    SeatRefusedFact,
)
from jackpot.gateway import metrics
from jackpot.gateway.settings import GatewaySettings
from jackpot.platform import codec
from jackpot.platform.deadletter import dead_letter
from jackpot.v1 import device_pb2, table_events_pb2

EVENT_ID_NAMESPACE = uuid.UUID("5d1f0d3e-6a53-4b8e-9a8c-8f0b3c6d2a11")
DEAD_LETTER_BYTES = 65536  # what a dead letter keeps of the refused message

Record = tuple[str, bytes, bytes]  # (topic, key, value)


def fact_record(
    settings: GatewaySettings, source: str, table: Table, fact: Fact, event: device_pb2.DeviceEvent
) -> Record | None:
    """A fact as a TableEvent for Kafka, keyed by pot group (a refused seat as a dead letter
    naming it); None for gateway-only facts. Numbers the table's published events."""
    if isinstance(fact, SeatOpenedFact):
        return None
    if isinstance(fact, SeatRefusedFact):
        metrics.REJECTS.labels(fact.reason.value).inc()
        raw = device_pb2.ConnectRequest(event=event).SerializeToString()
        detail = f"seat {fact.seat}: {fact.detail}"
        return dead_letter_record(settings, source, raw, fact.reason, detail, table.table_id)
    configured = settings.table(table.table_id)
    assert configured is not None
    table.published += 1
    round_id = getattr(fact, "round_id", "") or event.round_id
    occurred_at = event.occurred_at if event.HasField("occurred_at") else None
    return published_record(
        settings,
        table.table_id,
        configured.pot_group_id,
        table.game,
        table.published,
        round_id,
        occurred_at,
        fact,
    )


def published_record(
    settings: GatewaySettings,
    table_id: str,
    pot_group_id: str,
    game: Game,
    sequence: int,
    round_id: str,
    occurred_at: Timestamp | None,
    fact: Fact,
) -> Record:
    """A table's fact as its ``sequence``-th TableEvent, keyed by pot group (the event id is
    derived from table and sequence: a resend after a crash carries the same one). A land
    table's and a studio table's facts alike."""
    message = table_events_pb2.TableEvent(
        event_id=str(uuid.uuid5(EVENT_ID_NAMESPACE, f"{table_id}/{sequence}")),
        table_id=table_id,
        round_id=round_id,
        sequence=sequence,
        pot_group_id=pot_group_id,
        game=codec.game_to_proto(game),
        gateway_accepted_unix_nanos=time.time_ns(),  # the latency budget's first stamp
    )
    message.occurred_at.CopyFrom(occurred_at or codec.timestamp_ns(time.time_ns()))
    _payload(message, fact)
    return settings.table_events_topic, pot_group_id.encode(), message.SerializeToString()


def _payload(message: table_events_pb2.TableEvent, fact: Fact) -> None:
    match fact:
        case RoundLockedFact(_, bets, players):
            named = dict(players)  # O1: a studio bet's player
            message.round_locked.bets.extend(
                table_events_pb2.SeatBet(seat=s, bet=b, player=named.get(s, "")) for s, b in bets
            )
        case SeatForfeitedFact(_, seat, reason):
            message.seat_forfeited.seat = seat
            message.seat_forfeited.reason = codec.forfeit_reason_to_proto(reason)
        case RoundResultFact(_, hands, community, shared_hand):
            message.round_result.hands.extend(
                table_events_pb2.SeatHand(seat=s, cards=list(cards)) for s, cards in hands
            )
            message.round_result.community_cards.extend(community)
            message.round_result.shared_hand.extend(shared_hand)  # O2
        case RoundVoidedFact(_, reason, _):
            message.round_voided.reason = reason
        case SeatClosedFact(seat, reason):
            message.seat_closed.seat = seat
            message.seat_closed.reason = reason


def dead_letter_record(
    settings: GatewaySettings, source: str, raw: bytes, reason: Reason, detail: str, table_id: str
) -> Record:
    """A refused message as a dead-letter record naming why (its first bytes kept)."""
    letter = dead_letter(source, reason, detail, raw[:DEAD_LETTER_BYTES], table_id=table_id)
    return settings.dead_letter_topic, source.encode(), letter.SerializeToString()
