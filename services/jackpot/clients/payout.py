"""How clients reach the payout instance that owns the payouts (dealer terminals, supervisors).

A client is given one or more addresses (``host:port``, comma-separated: the Kubernetes Service,
or each local instance). An instance that does not own the payouts refuses with UNAVAILABLE and
names the owner in the trailing metadata ``jackpot-payout-owner``; :class:`PayoutTargets` goes
there next, or to the next address when no owner is named. Terminal channels ping the server
every few seconds (:data:`KEEPALIVE_OPTIONS`), so a terminal leaves a frozen instance (a paused
process, a stalled node) by itself instead of waiting on it forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import grpc

from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.v1 import payout_pb2, payout_pb2_grpc

OWNER_METADATA_KEY = "jackpot-payout-owner"
# A server that does not answer two pings two seconds apart is gone: the stream fails UNAVAILABLE.
KEEPALIVE_OPTIONS: list[tuple[str, object]] = [
    ("grpc.keepalive_time_ms", 2_000),
    ("grpc.keepalive_timeout_ms", 2_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
OWNER_SEARCH_SECONDS = 10.0  # how long a unary call looks for the owner (a handover's rebalance)
OWNER_RETRY_SECONDS = 0.25  # the pause before the next address when no owner was named
T = TypeVar("T")


def owner_named(error: grpc.aio.AioRpcError) -> str:
    """The owner's address a refusing instance named, or ""."""
    for key, value in error.trailing_metadata() or ():
        if key == OWNER_METADATA_KEY:
            return value if isinstance(value, str) else value.decode()
    return ""


class PayoutTargets:
    """The payout addresses a client may try, and which one it tries now."""

    def __init__(self, targets: str | Sequence[str]) -> None:
        listed = targets.split(",") if isinstance(targets, str) else list(targets)
        self.targets = [t.strip() for t in listed if t.strip()]
        if not self.targets:
            raise ValueError("no payout service address given")
        self._index = 0
        self._owner = ""

    @property
    def current(self) -> str:
        return self._owner or self.targets[self._index]

    def options(self) -> list[tuple[str, object]]:
        """Channel options for the current target: keepalive, and the TLS name of the first
        configured address when the owner was reached by another (its pod address)."""
        options = list(KEEPALIVE_OPTIONS)
        if self._owner and self._owner not in self.targets:
            host = self.targets[0].rsplit(":", 1)[0]
            options.append(("grpc.ssl_target_name_override", host))
        return options

    def moved(self, error: grpc.aio.AioRpcError | None = None) -> bool:
        """The current target refused or went away: the owner it named next, else the next
        address. True when an owner was named (worth trying at once)."""
        owner = owner_named(error) if error is not None else ""
        if owner and owner != self.current:
            self._owner = owner
            return True
        if not self._owner:
            self._index = (self._index + 1) % len(self.targets)
        self._owner = ""
        return False


async def call_owner(
    targets: PayoutTargets,
    tls: TlsSettings,
    call: Callable[[payout_pb2_grpc.PayoutServiceStub], Awaitable[T]],
    within_seconds: float = OWNER_SEARCH_SECONDS,
) -> T:
    """``call`` on the owning instance, following refusals that name the owner; the last
    refusal or error is raised when no instance answered within ``within_seconds``.

    An owner named is tried at once; otherwise the next address after a short pause, since
    during a handover the instances can name an owner that has just stopped until the
    group's rebalance settles."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_seconds
    while True:
        async with secure_channel(targets.current, tls, targets.options()) as channel:
            stub = payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]
            try:
                return await call(stub)
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.UNAVAILABLE or loop.time() >= deadline:
                    raise
                if not targets.moved(error):
                    await asyncio.sleep(OWNER_RETRY_SECONDS)


async def all_payouts(
    stub: payout_pb2_grpc.PayoutServiceStub,
    pending_only: bool = False,
    call_seconds: float = 10.0,
    awaiting_approval_only: bool = False,
) -> list[payout_pb2.Payout]:
    """Every payout an instance lists (``pending_only``: the open ones; ``awaiting_approval_only``
    those a supervisor decides), page by page, in payment order (S5)."""
    payouts: list[payout_pb2.Payout] = []
    token = ""
    while True:
        request = payout_pb2.ListPayoutsRequest(
            pending_only=pending_only,
            page_token=token,
            awaiting_approval_only=awaiting_approval_only,
        )
        page = await stub.ListPayouts(request, timeout=call_seconds)
        payouts.extend(page.payouts)
        token = page.next_page_token
        if not token:
            return payouts
