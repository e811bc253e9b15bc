"""The access-logged gRPC edge of every service: one answer per refusal, one way to build the edge.

**One answer per refusal.** A servicer method does not choose status codes for refusals: it
raises, and :func:`answered` (the decorator every servicer method wears) answers.

- :class:`~jackpot.domain.errors.DomainError`, the system's one refusal type, is answered with
  :data:`STATUS` of its reason and its message (``"REASON: detail"``);
- :class:`Unavailable` (not served here, not now: a payout standby, a stopping instance) with
  UNAVAILABLE and its trailing metadata (where to go instead);
- :class:`~jackpot.platform.exactly_once.NotCommitted` (the change's transaction failed; nothing
  was written) with UNAVAILABLE: the same call may be tried again.

Anything else is a bug and goes to gRPC as it is (UNKNOWN). The few answers that are no rule's
refusal (a Hello that never came: DEADLINE_EXCEEDED; a watcher too far behind:
RESOURCE_EXHAUSTED; a pot group that exists already: ALREADY_EXISTS, as the contract says) are
given with :meth:`Call.abort`. A method that was authorized as a change (:meth:`Call.require`)
has its outcome on the access log either way: ``applied`` when it says so (:meth:`Call.applied`),
``refused`` or ``fault`` when it is answered.

**One way to build the edge.** :func:`access_logged_grpc_edge` starts a service's access log
(its hash chain) and gives the :class:`~jackpot.platform.authz.Authorizer` that writes to it; its
:meth:`~AccessLoggedEdge.serve` builds the :class:`~jackpot.platform.grpc_server.GrpcServer` of the
service's servicers. Both put their stop steps on the service's
:class:`~jackpot.platform.runtime.Supervisor`: the gRPC server's where the composition root builds
it (calls in flight may finish), the access log's after everything else (every stop step before
it may still write to it).

**The software's field check.** Every edge also serves ``jackpot.v1.SoftwareService``
(:class:`SoftwareServicer`, R6): to the inspector role only, the HMAC-SHA-256 under the
inspector's seed of every file of the installed package as it is on disk when asked
(:func:`jackpot.platform.manifest.attest`), with the manifest digest the service verified at
start. The inspector computes the same over the approved build (``jackpot verify --seed``); a seed
of their own choosing makes a recorded answer useless. Each call is on the access log.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn, Protocol, TypeVar, overload

import grpc

from jackpot.domain.access import Action, Principal
from jackpot.domain.errors import DomainError, Reason
from jackpot.platform.access_log import AccessLog
from jackpot.platform.authz import AccessSettings, Authorizer
from jackpot.platform.grpc_server import GrpcServer
from jackpot.platform.manifest import attest, check_seed, package_root, verified_digest
from jackpot.platform.processor_errors import NotCommitted
from jackpot.platform.runtime import Supervisor
from jackpot.v1 import software_pb2, software_pb2_grpc

Code = grpc.StatusCode

# Every refusal reason and the status it is answered with. The rule (grpc/grpc doc/statuscodes.md):
# INVALID_ARGUMENT when the request is wrong whatever the system's state, FAILED_PRECONDITION when
# it is wrong for the state it meets (a round, a table, a pot group as they stand), NOT_FOUND when
# what it names does not exist.
STATUS: Mapping[Reason, grpc.StatusCode] = MappingProxyType(
    {
        # The request itself is wrong: retrying it unchanged can never succeed.
        Reason.MALFORMED: Code.INVALID_ARGUMENT,  # not the message expected; a field missing
        Reason.SEAT_OUT_OF_RANGE: Code.INVALID_ARGUMENT,  # a game's seats are fixed by its rules
        Reason.DUPLICATE_CARD: Code.INVALID_ARGUMENT,  # one deck holds each card once
        Reason.WRONG_CARD_COUNT: Code.INVALID_ARGUMENT,  # a game's hand size is fixed
        Reason.INVALID_CARD: Code.INVALID_ARGUMENT,  # not a card
        Reason.TOO_LARGE: Code.INVALID_ARGUMENT,  # the same bytes never fit
        # What it names does not exist.
        Reason.UNKNOWN_TABLE: Code.NOT_FOUND,
        Reason.UNKNOWN_POT_GROUP: Code.NOT_FOUND,
        # Right in itself, wrong for the state it meets.
        Reason.UNKNOWN_GAME: Code.FAILED_PRECONDITION,  # a real game, not the table's
        Reason.BET_OUT_OF_LIMITS: Code.FAILED_PRECONDITION,  # the table's configured limits
        Reason.INSUFFICIENT_CREDITS: Code.FAILED_PRECONDITION,  # the seat's credit counter now
        Reason.BET_AFTER_LOCK: Code.FAILED_PRECONDITION,  # the round is locked
        Reason.SEAT_CLOSED: Code.FAILED_PRECONDITION,
        Reason.NO_BET: Code.FAILED_PRECONDITION,
        Reason.ROUND_NOT_LOCKED: Code.FAILED_PRECONDITION,
        Reason.INVALID_STATE: Code.FAILED_PRECONDITION,  # a payout already paid, a locked round
        # A configuration whose own form is wrong is refused at the edge before it is published
        # (MALFORMED: INVALID_ARGUMENT); one the pot refuses conflicts with the group as it stands
        # (a table's limits against the group's, rule E1; a pot the new version would remove).
        Reason.INVALID_CONFIG: Code.FAILED_PRECONDITION,
        # A conflict with what came before.
        Reason.SEQUENCE_REPLAYED: Code.ALREADY_EXISTS,  # the number is taken, by other content
        Reason.SEQUENCE_OUT_OF_ORDER: Code.ABORTED,  # a sequencer check: resynchronize, then retry
        # Who is asking.
        Reason.NOT_AUTHENTICATED: Code.UNAUTHENTICATED,  # no identity, a wrong credential
        Reason.TABLE_MISMATCH: Code.PERMISSION_DENIED,  # bound to one table, acting for another
        # Not now: the pot's owner cannot be reached (rule D5); it returns by itself.
        Reason.PROGRESSIVE_CLOSED: Code.UNAVAILABLE,
    }
)

# What the access log says an authorized change came to (jackpot.domain.access_chain.OUTCOMES).
REFUSED = "refused"  # the rules or the place said no; nothing changed
FAULT = "fault"  # it could not be done now; nothing changed


class Unavailable(Exception):
    """Not served here, or not now: UNAVAILABLE, the same call may succeed again (elsewhere, when
    ``metadata`` names where; clients read it from the trailing metadata)."""

    def __init__(self, detail: str, metadata: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(detail)
        self.metadata = tuple(metadata)


@dataclass(frozen=True, slots=True)
class Answer:
    """How a call that raised is answered, and what its audit outcome is."""

    status: grpc.StatusCode
    detail: str
    outcome: str
    metadata: tuple[tuple[str, str], ...] = ()


def answer_for(error: BaseException) -> Answer | None:
    """The answer to a call that raised ``error``; None when it is no refusal (a bug)."""
    if isinstance(error, DomainError):
        return Answer(STATUS[error.reason], str(error), REFUSED)
    if isinstance(error, Unavailable):
        return Answer(grpc.StatusCode.UNAVAILABLE, str(error), REFUSED, error.metadata)
    if isinstance(error, NotCommitted):
        return Answer(grpc.StatusCode.UNAVAILABLE, str(error), FAULT)
    return None


@dataclass(frozen=True, slots=True)
class _Subject:
    principal: Principal
    action: Action
    target: str


class Call:
    """One call at an audited edge: its gRPC context, and, once it was authorized as a change
    (:meth:`require`), who does what to what, so that its outcome reaches the access log."""

    def __init__(self, context: grpc.aio.ServicerContext, authorizer: Authorizer | None) -> None:
        self.context = context
        self._authorizer = authorizer
        self._subject: _Subject | None = None

    async def read(self, method: str) -> None:
        """A query: refused (and audited) under TLS without a role that may read."""
        await (await self._authorizer_or_abort()).require_read(self.context, method)

    async def check(self, action: Action, method: str) -> None:
        """A stream open to the roles of ``action`` under TLS (refusals audited, not reads)."""
        await (await self._authorizer_or_abort()).check(self.context, action, method)

    async def require(
        self, action: Action, target: str, table_id: str = "", detail: str = "", studio: str = ""
    ) -> Principal:
        """The caller, allowed to make this change (on the access log before it is made); the
        call's outcome follows on the log (:meth:`applied`, or the decorator's answer)."""
        principal = await self.admit(action, target, table_id, detail, studio)
        self._subject = _Subject(principal, action, target)
        return principal

    async def admit(
        self, action: Action, target: str, table_id: str = "", detail: str = "", studio: str = ""
    ) -> Principal:
        """The caller, allowed into a session (a terminal's stream, a table's view): audited as
        :meth:`require` is, but the session has no outcome of its own (what it does has)."""
        authorizer = await self._authorizer_or_abort()
        return await authorizer.require(self.context, action, target, table_id, detail, studio)

    def applied(self, detail: str) -> None:
        """The change was made: its outcome on the access log."""
        self._outcome("applied", detail)

    async def abort(
        self, status: grpc.StatusCode, detail: str, *, outcome: str | None = REFUSED
    ) -> NoReturn:
        """End the call with ``status``: an answer of the edge itself, not a rule's refusal (no
        Hello in time, a group that exists already). The outcome goes on the access log when the
        call was authorized as a change (None: the outcome is not known)."""
        if outcome is not None:
            self._outcome(outcome, detail)
        await self.context.abort(status, detail)
        raise AssertionError("context.abort returned")  # pragma: no cover

    async def answer(self, answer: Answer) -> NoReturn:
        """End the call as ``answer`` says (what :func:`answered` does with a refusal)."""
        self._outcome(answer.outcome, answer.detail)
        await self.context.abort(answer.status, answer.detail, trailing_metadata=answer.metadata)
        raise AssertionError("context.abort returned")  # pragma: no cover

    def _outcome(self, outcome: str, detail: str) -> None:
        subject = self._subject
        if subject is not None and self._authorizer is not None:
            self._authorizer.outcome(
                subject.principal, subject.action, outcome, subject.target, detail
            )

    async def _authorizer_or_abort(self) -> Authorizer:
        if self._authorizer is None:
            await self.context.abort(
                grpc.StatusCode.PERMISSION_DENIED, "no access log here: nothing protected is served"
            )
        assert self._authorizer is not None
        return self._authorizer


class Servicer(Protocol):
    """What :func:`answered` needs of the servicer its methods belong to."""

    @property
    def authorizer(self) -> Authorizer | None: ...


S = TypeVar("S", bound=Servicer)
Q = TypeVar("Q")
R = TypeVar("R")


@overload
def answered(
    method: Callable[[S, Q, Call], Coroutine[Any, Any, R]],
) -> Callable[[S, Q, grpc.aio.ServicerContext], Coroutine[Any, Any, R]]: ...


@overload
def answered(
    method: Callable[[S, Q, Call], AsyncIterator[R]],
) -> Callable[[S, Q, grpc.aio.ServicerContext], AsyncIterator[R]]: ...


def answered(method: Callable[..., Any]) -> Callable[..., Any]:
    """A servicer method taking a :class:`Call` instead of the gRPC context, whose refusals are
    answered by :func:`answer_for` (and recorded as the call's audit outcome); for unary and
    streaming methods alike."""
    if inspect.isasyncgenfunction(method):

        @functools.wraps(method)
        async def stream(self: Servicer, request: Any, context: grpc.aio.ServicerContext) -> Any:
            call = Call(context, self.authorizer)
            try:
                async with contextlib.aclosing(method(self, request, call)) as responses:
                    async for response in responses:
                        yield response
            except Exception as error:
                answer = answer_for(error)
                if answer is None:
                    raise
                await call.answer(answer)

        return stream

    @functools.wraps(method)
    async def unary(self: Servicer, request: Any, context: grpc.aio.ServicerContext) -> Any:
        call = Call(context, self.authorizer)
        try:
            return await method(self, request, call)
        except Exception as error:
            answer = answer_for(error)
            if answer is None:
                raise
            await call.answer(answer)

    return unary


# ------------------------------------------------------------- the software's field check (R6)


class SoftwareServicer(software_pb2_grpc.SoftwareServiceServicer):
    """``AttestSoftware`` for one service (named ``service`` in its answers) whose installed
    package is ``root``."""

    service_name = "jackpot.v1.SoftwareService"
    TARGET = "software"  # what the access log names as the object of the check

    def __init__(self, authorizer: Authorizer, service: str, root: Path | None = None) -> None:
        self.authorizer = authorizer
        self.service = service
        self.root = root or package_root()

    def register(self, server: grpc.aio.Server) -> None:
        software_pb2_grpc.add_SoftwareServiceServicer_to_server(self, server)  # type: ignore[no-untyped-call]

    @answered
    async def AttestSoftware(
        self, request: software_pb2.AttestSoftwareRequest, call: Call
    ) -> software_pb2.AttestSoftwareResponse:
        seed = bytes(request.seed)
        detail = f"a seed of {len(seed)} bytes"
        await call.require(Action.ATTEST_SOFTWARE, self.TARGET, detail=detail)
        try:
            check_seed(seed)
        except ValueError as error:
            raise DomainError(Reason.MALFORMED, str(error)) from None
        # Reading every file takes a few milliseconds of disk: off the event loop.
        answer = await asyncio.to_thread(attest, self.root, seed)
        call.applied(f"hmac-sha256:{answer.hmac_sha256} over {answer.files} files")
        return software_pb2.AttestSoftwareResponse(
            hmac_sha256=answer.hmac_sha256,
            files=answer.files,
            manifest_sha256=verified_digest(),
            service=self.service,
        )


# ----------------------------------------------------------------------------- the edge


class EdgeSettings(Protocol):
    """What the edge reads of a service's settings (every ``ServiceSettings`` with a gRPC API)."""

    @property
    def access(self) -> AccessSettings: ...

    @property
    def grpc_address(self) -> str: ...

    def kafka_options(self) -> dict[str, Any]: ...


class Registered(Protocol):
    """A servicer the edge serves: its gRPC service's full name, and how it registers."""

    @property
    def service_name(self) -> str: ...

    def register(self, server: grpc.aio.Server) -> None: ...


class AccessLoggedEdge:
    """A service's access log (one hash chain), the authorizer that writes to it and, once
    :meth:`serve` is called, its gRPC server. Made by :func:`access_logged_grpc_edge`."""

    def __init__(
        self, supervisor: Supervisor, settings: EdgeSettings, access_log: AccessLog
    ) -> None:
        self.access_log = access_log
        self.authorizer = Authorizer(settings.access, access_log)
        self._supervisor = supervisor
        self._settings = settings

    def serve(self, *servicers: Registered, grace_seconds: float) -> GrpcServer:
        """The gRPC server of ``servicers`` (health and reflection too, and the software's field
        check for an inspector, R6) on the settings' address, not started; its health is the
        service's, and its stop step ("grpc": refuse new calls, let those in flight finish for
        ``grace_seconds``) comes after the steps added so far."""
        access = self._settings.access
        servicers = (*servicers, SoftwareServicer(self.authorizer, self.access_log.chain))
        server = GrpcServer(
            self._settings.grpc_address,
            [servicer.register for servicer in servicers],
            [servicer.service_name for servicer in servicers],
            access.tls.server_credentials(),
            access.health_address,
        )
        supervisor = self._supervisor
        supervisor.health(server)
        supervisor.on_stop("grpc", lambda: server.stop(supervisor.grace(grace_seconds)))
        return server


async def access_logged_grpc_edge(
    supervisor: Supervisor,
    settings: EdgeSettings,
    chain: str,
    *,
    audit_drain_seconds: float = 5.0,
) -> AccessLoggedEdge:
    """The access-logged edge of a service: its access log on the chain ``chain``, started first
    (the software it verified heads what it records; a part the supervisor watches, whose stop step
    comes after every other: each may still write to it), and its authorizer."""
    options = dict(settings.kafka_options())
    access_log = AccessLog(
        options.pop("bootstrap_servers"), settings.access.audit_topic, chain, options
    )
    supervisor.on_stop(
        "access log", lambda: access_log.stop(supervisor.grace(audit_drain_seconds)), last=True
    )
    await access_log.start()
    supervisor.watch(access_log.writer)
    return AccessLoggedEdge(supervisor, settings, access_log)
