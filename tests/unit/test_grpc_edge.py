"""The audited gRPC edge without a network (jackpot.platform.grpc_edge): every refusal reason has
its one status; a servicer method's refusal is answered with it and its message, and an
authorized change's outcome reaches the access log, whatever ends it; what is not a refusal is not
answered for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from jackpot.domain.access import Action, Principal, Role
from jackpot.domain.access_chain import OUTCOMES
from jackpot.domain.errors import DomainError, Reason
from jackpot.platform.authz import AccessSettings, Authorizer
from jackpot.platform.grpc_edge import (
    FAULT,
    REFUSED,
    STATUS,
    Call,
    Unavailable,
    answer_for,
    answered,
)
from jackpot.platform.processor_errors import NotCommitted

pytestmark = pytest.mark.unit

Code = grpc.StatusCode


class Aborted(Exception):
    """What grpc.aio's context.abort raises (an AbortError), with what it was given."""

    def __init__(
        self, code: grpc.StatusCode, details: str, metadata: tuple[tuple[str, str], ...]
    ) -> None:
        super().__init__(details)
        self.code = code
        self.details = details
        self.metadata = metadata


class FakeContext:
    """A plaintext call: no certificate in the auth context."""

    def auth_context(self) -> dict[str, list[bytes]]:
        return {}

    async def abort(
        self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()
    ) -> None:
        raise Aborted(code, details, tuple(trailing_metadata))


@dataclass
class FakeAudit:
    entries: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def record(
        self, principal: Principal, action: str, outcome: str, target: str = "", detail: str = ""
    ) -> asyncio.Future[Any]:
        self.entries.append((principal.name, action, outcome, target, detail))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future

    def note(self, *args: Any) -> None:
        self.record(*args)

    @property
    def outcomes(self) -> list[str]:
        return [outcome for _, _, outcome, _, _ in self.entries]


class Servicer:
    """Two methods of a payout-like API; ``raises`` is what the change raises."""

    def __init__(self, audit: FakeAudit, raises: BaseException | None = None) -> None:
        access = AccessSettings(insecure_roles=frozenset({Role.SUPERVISOR}))
        self.authorizer = Authorizer(access, audit, audit_timeout_seconds=0.05)  # type: ignore[arg-type]
        self.raises = raises
        self.closed = False

    @answered
    async def Approve(self, award_id: str, call: Call) -> str:
        await call.require(Action.APPROVE_PAYOUT, target=award_id, detail="reason: big")
        if self.raises is not None:
            raise self.raises
        call.applied("500 pesos")
        return f"approved {award_id}"

    @answered
    async def Validated(self, award_id: str, call: Call) -> str:
        """Refuses before it is authorized: nothing to record an outcome for."""
        raise DomainError(Reason.MALFORMED, "award_id is required")

    @answered
    async def Watch(self, count: int, call: Call) -> AsyncIterator[int]:
        await call.read("Watch")
        try:
            for number in range(count):
                yield number
            if self.raises is not None:
                raise self.raises
        finally:
            self.closed = True


def test_every_reason_has_one_status() -> None:
    assert set(STATUS) == set(Reason)
    assert all(isinstance(code, grpc.StatusCode) for code in STATUS.values())
    assert grpc.StatusCode.OK not in STATUS.values()
    assert grpc.StatusCode.UNKNOWN not in STATUS.values()  # UNKNOWN is a bug's, never a rule's


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        # What the wire contracts say (protos/jackpot/v1/pot.proto, device.proto) and clients
        # and tests depend on.
        (Reason.MALFORMED, Code.INVALID_ARGUMENT),
        (Reason.UNKNOWN_TABLE, Code.NOT_FOUND),
        (Reason.UNKNOWN_POT_GROUP, Code.NOT_FOUND),
        (Reason.UNKNOWN_GAME, Code.FAILED_PRECONDITION),  # a device's Hello names another game
        (Reason.INVALID_CONFIG, Code.FAILED_PRECONDITION),  # LinkTable, limits unlike the group's
        (Reason.INVALID_STATE, Code.FAILED_PRECONDITION),  # a paid payout voided; a locked round
        (Reason.BET_AFTER_LOCK, Code.FAILED_PRECONDITION),
        (Reason.NOT_AUTHENTICATED, Code.UNAUTHENTICATED),
        (Reason.TABLE_MISMATCH, Code.PERMISSION_DENIED),
        (Reason.SEQUENCE_REPLAYED, Code.ALREADY_EXISTS),
        (Reason.SEQUENCE_OUT_OF_ORDER, Code.ABORTED),
        (Reason.PROGRESSIVE_CLOSED, Code.UNAVAILABLE),
    ],
)
def test_a_reason_is_answered_with_its_status(reason: Reason, code: grpc.StatusCode) -> None:
    assert STATUS[reason] is code
    answer = answer_for(DomainError(reason, "why"))
    assert answer is not None
    assert (answer.status, answer.detail, answer.outcome) == (code, f"{reason.value}: why", REFUSED)


def test_the_outcomes_written_are_ones_the_audit_chain_accepts() -> None:
    assert {REFUSED, FAULT, "applied"} <= OUTCOMES


def test_what_is_not_a_refusal_has_no_answer() -> None:
    assert answer_for(RuntimeError("a bug")) is None
    assert answer_for(KeyError("award")) is None


async def test_a_change_that_is_applied_has_its_outcome_on_the_log() -> None:
    audit = FakeAudit()
    assert await Servicer(audit).Approve("a1", FakeContext()) == "approved a1"
    assert audit.entries == [
        ("local", "approve_payout", "allowed", "a1", "reason: big"),
        ("local", "approve_payout", "applied", "a1", "500 pesos"),
    ]


async def test_a_refused_change_is_aborted_with_its_reasons_status_and_recorded() -> None:
    audit = FakeAudit()
    refusal = DomainError(Reason.INVALID_STATE, "award a1 is PAID")
    with pytest.raises(Aborted) as aborted:
        await Servicer(audit, refusal).Approve("a1", FakeContext())
    assert aborted.value.code is Code.FAILED_PRECONDITION
    assert aborted.value.details == "INVALID_STATE: award a1 is PAID"
    assert audit.entries[-1] == (
        "local",
        "approve_payout",
        "refused",
        "a1",
        "INVALID_STATE: award a1 is PAID",
    )


async def test_a_change_whose_transaction_failed_is_unavailable_and_a_fault() -> None:
    audit = FakeAudit()
    with pytest.raises(Aborted) as aborted:
        await Servicer(audit, NotCommitted("the transaction aborted")).Approve("a1", FakeContext())
    assert aborted.value.code is Code.UNAVAILABLE
    assert audit.outcomes == ["allowed", FAULT]


async def test_not_served_here_names_where_to_go_in_the_trailing_metadata() -> None:
    audit = FakeAudit()
    moved = Unavailable("serves no payouts now", [("jackpot-payout-owner", "10.0.0.7:50053")])
    with pytest.raises(Aborted) as aborted:
        await Servicer(audit, moved).Approve("a1", FakeContext())
    assert aborted.value.code is Code.UNAVAILABLE
    assert aborted.value.metadata == (("jackpot-payout-owner", "10.0.0.7:50053"),)
    assert audit.outcomes == ["allowed", REFUSED]


async def test_a_refusal_before_the_call_is_authorized_records_no_outcome() -> None:
    audit = FakeAudit()
    with pytest.raises(Aborted) as aborted:
        await Servicer(audit).Validated("", FakeContext())
    assert aborted.value.code is Code.INVALID_ARGUMENT
    assert audit.entries == []


async def test_a_bug_is_not_answered_for() -> None:
    audit = FakeAudit()
    with pytest.raises(KeyError):
        await Servicer(audit, KeyError("award")).Approve("a1", FakeContext())
    assert audit.outcomes == ["allowed"]  # no outcome is invented for a bug


async def test_an_unauthorized_caller_is_refused_by_the_authorizer_not_answered_twice() -> None:
    audit = FakeAudit()
    servicer = Servicer(audit)
    servicer.authorizer = Authorizer(AccessSettings(), audit, 0.05)  # type: ignore[arg-type]
    with pytest.raises(Aborted) as aborted:
        await servicer.Approve("a1", FakeContext())
    assert aborted.value.code is Code.UNAUTHENTICATED
    assert audit.outcomes == ["refused"]


async def test_a_stream_is_answered_after_what_it_sent_and_closed() -> None:
    audit = FakeAudit()
    servicer = Servicer(audit, DomainError(Reason.UNKNOWN_POT_GROUP, "pot group 'x'"))
    sent: list[int] = []

    async def watch() -> None:
        async for number in servicer.Watch(2, FakeContext()):
            sent.append(number)

    with pytest.raises(Aborted) as aborted:
        await watch()
    assert sent == [0, 1]
    assert aborted.value.code is Code.NOT_FOUND
    assert servicer.closed
    assert audit.entries == []  # a read: no outcome


async def test_a_stream_its_client_leaves_is_closed_at_once() -> None:
    servicer = Servicer(FakeAudit())
    stream = servicer.Watch(10, FakeContext())
    assert await anext(stream) == 0
    await stream.aclose()  # type: ignore[attr-defined]
    assert servicer.closed


async def test_an_edge_answer_of_its_own_is_recorded_unless_its_outcome_is_unknown() -> None:
    audit = FakeAudit()
    servicer = Servicer(audit)
    call = Call(FakeContext(), servicer.authorizer)  # type: ignore[arg-type]
    await call.require(Action.APPROVE_PAYOUT, target="a1")
    with pytest.raises(Aborted):
        await call.abort(Code.DEADLINE_EXCEEDED, "not confirmed in time", outcome=None)
    with pytest.raises(Aborted) as exists:
        await call.abort(Code.ALREADY_EXISTS, "a1 exists already")
    assert exists.value.code is Code.ALREADY_EXISTS
    assert audit.outcomes == ["allowed", "refused"]
