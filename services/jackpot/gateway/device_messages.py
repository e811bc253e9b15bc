"""What a device says to the gateway and what the gateway answers it, as protobuf messages: an
event read from a device message (its size bounded, refused when unreadable), the fingerprint
that recognises a resend of it, the reply (accepted or refused, seat by seat) and the seat
commands a table's facts call for. :class:`~jackpot.gateway.service.Gateway` decides; this
module only speaks the device protocol (protos/jackpot/v1/device.proto)."""

from __future__ import annotations

import hashlib

from google.protobuf.message import DecodeError

from jackpot.domain.cards import GAME_RULES
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.table import Table
from jackpot.domain.table_messages import Fact, SeatAnswer, SeatClosedFact, SeatOpenedFact
from jackpot.platform import codec
from jackpot.v1 import device_pb2


def read_event(raw: bytes, max_bytes: int) -> device_pb2.DeviceEvent:
    """The DeviceEvent a device message carries; refused if too large, unreadable or no event."""
    if len(raw) > max_bytes:
        raise DomainError(
            Reason.TOO_LARGE, f"message of {len(raw)} bytes; the limit is {max_bytes}"
        )
    request = connect_request(raw, "not a ConnectRequest")
    if request.WhichOneof("message") != "event":
        raise DomainError(Reason.INVALID_STATE, "expected a DeviceEvent after the Hello")
    return request.event


def connect_request(raw: bytes, unreadable: str) -> device_pb2.ConnectRequest:
    """A device message read; MALFORMED, saying ``unreadable``, when it is not one."""
    try:
        return device_pb2.ConnectRequest.FromString(raw)
    except DecodeError:
        raise DomainError(Reason.MALFORMED, unreadable) from None


def fingerprint(event: device_pb2.DeviceEvent) -> str:
    """What makes a resend the same event: everything but the device's timestamp and event id."""
    content = device_pb2.DeviceEvent()
    content.CopyFrom(event)
    content.ClearField("occurred_at")
    content.ClearField("event_id")
    return hashlib.sha256(content.SerializeToString(deterministic=True)).hexdigest()


def reply(
    sequence: int,
    error: DomainError | None = None,
    duplicate: bool = False,
    seats: tuple[SeatAnswer, ...] = (),
) -> device_pb2.ConnectResponse:
    if error is None:
        reply = device_pb2.EventReply(sequence=sequence, accepted=True, duplicate=duplicate)
        reply.seats.extend(seat_reply(answer) for answer in seats)
    else:
        reply = device_pb2.EventReply(
            sequence=sequence,
            accepted=False,
            reason=codec.reason_to_proto(error.reason),
            detail=error.detail,
        )
    return device_pb2.ConnectResponse(reply=reply)


def seat_reply(answer: SeatAnswer) -> device_pb2.SeatReply:
    if answer.reason is None:
        return device_pb2.SeatReply(seat=answer.seat, accepted=True)
    return device_pb2.SeatReply(
        seat=answer.seat,
        accepted=False,
        reason=codec.reason_to_proto(answer.reason),
        detail=answer.detail,
    )


def commands(facts: tuple[Fact, ...]) -> list[device_pb2.ConnectResponse]:
    commands = []
    for fact in facts:
        if isinstance(fact, SeatClosedFact):
            status = device_pb2.SeatStatus(seat=fact.seat, open=False, reason=fact.reason)
            commands.append(device_pb2.ConnectResponse(seat_status=status))
        elif isinstance(fact, SeatOpenedFact):
            status = device_pb2.SeatStatus(seat=fact.seat, open=True)
            commands.append(device_pb2.ConnectResponse(seat_status=status))
    return commands


def welcome(table: Table) -> device_pb2.ConnectResponse:
    """The answer to an accepted Hello: where the table stands (its last sequence, its round, its
    limits, its seats, whether the progressive is open), so the controller resumes from there."""
    welcome = device_pb2.Welcome(
        table_id=table.table_id,
        last_sequence=table.last_sequence,
        round_id=table.round_id,
        min_bet=table.limits.min_bet,
        max_bet=table.limits.max_bet,
        credit_value=table.limits.credit_value,
        seats=GAME_RULES[table.game].seats,
        progressive_open=table.progressive_open,
    )
    return device_pb2.ConnectResponse(welcome=welcome)
