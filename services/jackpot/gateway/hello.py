"""Who may open a table's session on the gateway: the controller's first message must be a Hello
naming a table of this gateway, from a device certificate bound to that table (with mutual TLS: a
stolen credential alone opens no other table), with the table's credential and its game. A
refusal is a :class:`~jackpot.domain.errors.DomainError` naming why (NOT_AUTHENTICATED,
UNKNOWN_TABLE, UNKNOWN_GAME, MALFORMED)."""

from __future__ import annotations

import hmac

from google.protobuf.message import DecodeError

from jackpot.domain.access import ANONYMOUS, Action, Principal, authorize
from jackpot.domain.errors import DomainError, Reason
from jackpot.gateway.settings import GatewaySettings
from jackpot.platform import codec
from jackpot.v1 import device_pb2


def authenticated_hello(
    raw: bytes, settings: GatewaySettings, peer: Principal | None = None
) -> device_pb2.Hello:
    """The Hello of a controller's first message, once it may open its table's session."""
    try:
        request = device_pb2.ConnectRequest.FromString(raw)
    except DecodeError:
        raise DomainError(Reason.MALFORMED, "the first message is not a ConnectRequest") from None
    if request.WhichOneof("message") != "hello":
        raise DomainError(Reason.NOT_AUTHENTICATED, "the first message must be a Hello")
    hello = request.hello
    configured = settings.table(hello.table_id)
    if configured is None:
        raise DomainError(Reason.UNKNOWN_TABLE, f"table {hello.table_id!r} is not on this gateway")
    if settings.access.tls.enabled:
        decision = authorize(peer or ANONYMOUS, Action.CONNECT_DEVICE, hello.table_id)
        if not decision.allowed:
            raise DomainError(Reason.NOT_AUTHENTICATED, decision.detail)
    if not _same_secret(hello.credential, configured.credential):
        raise DomainError(Reason.NOT_AUTHENTICATED, f"wrong credential for table {hello.table_id}")
    if codec.game_of(hello.game) != configured.game:
        raise DomainError(
            Reason.UNKNOWN_GAME,
            f"table {hello.table_id} runs {configured.game.value}, not "
            f"{codec.game_name(hello.game)}",
        )
    return hello


def _same_secret(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())
