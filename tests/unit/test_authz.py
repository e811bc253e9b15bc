"""The authorization edge without a network: principal resolution, the audit entry written for
every protected attempt, and how a refusal or an unwritable access log is answered."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from jackpot.domain.access import Action, Principal, Role
from jackpot.platform.authz import AccessSettings, Authorizer
from jackpot.platform.tls import TlsSettings

pytestmark = pytest.mark.unit


class Aborted(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


class FakeContext:
    """A plaintext call: no certificate in the auth context."""

    def auth_context(self) -> dict[str, list[bytes]]:
        return {}

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)


@dataclass
class FakeAudit:
    written: bool = True
    entries: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def record(
        self, principal: Principal, action: str, outcome: str, target: str = "", detail: str = ""
    ) -> asyncio.Future[Any]:
        self.entries.append((principal.name, action, outcome, target, detail))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.written:
            future.set_result(None)
        return future

    def note(self, *args: Any) -> None:
        self.record(*args)


def authorizer(audit: FakeAudit, **settings: Any) -> Authorizer:
    return Authorizer(AccessSettings(**settings), audit, audit_timeout_seconds=0.05)  # type: ignore[arg-type]


async def test_plaintext_without_development_roles_is_refused_and_audited() -> None:
    audit = FakeAudit()
    with pytest.raises(Aborted) as refused:
        await authorizer(audit).require(FakeContext(), Action.CONFIGURE_POT, "scl")  # type: ignore[arg-type]
    assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert audit.entries[0][:4] == ("anonymous", "configure_pot", "refused", "scl")
    assert "needs the role operator" in audit.entries[0][4]


async def test_development_roles_make_every_plaintext_caller_local() -> None:
    audit = FakeAudit()
    auth = authorizer(audit, insecure_roles=frozenset({Role.SUPERVISOR}))
    who = await auth.require(FakeContext(), Action.VOID_PAYOUT, "a1", detail="why")  # type: ignore[arg-type]
    assert (who.name, who.authenticated_by) == ("local", "none")
    assert audit.entries == [("local", "void_payout", "allowed", "a1", "why")]
    with pytest.raises(Aborted) as not_operator:
        await auth.require(FakeContext(), Action.CONFIGURE_POT, "scl")  # type: ignore[arg-type]
    assert not_operator.value.code == grpc.StatusCode.PERMISSION_DENIED


async def test_an_unwritable_audit_log_refuses_the_call_and_says_so() -> None:
    audit = FakeAudit(written=False)
    auth = authorizer(audit, insecure_roles=frozenset({Role.OPERATOR}))
    with pytest.raises(Aborted) as unavailable:
        await auth.require(FakeContext(), Action.CONFIGURE_POT, "scl")  # type: ignore[arg-type]
    assert unavailable.value.code == grpc.StatusCode.UNAVAILABLE
    assert [e[2] for e in audit.entries] == ["allowed", "fault"]


async def test_reads_are_open_on_plaintext_and_need_a_role_under_tls() -> None:
    audit = FakeAudit()
    await authorizer(audit).require_read(FakeContext(), "ListPotGroups")  # type: ignore[arg-type]
    assert audit.entries == []
    under_tls = authorizer(
        audit, tls=TlsSettings(cert_file="a.crt", key_file="a.key", ca_file="ca.crt")
    )
    with pytest.raises(Aborted) as refused:
        await under_tls.require_read(FakeContext(), "ListPotGroups")  # type: ignore[arg-type]
    assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert audit.entries[0][:4] == ("anonymous", "read", "refused", "ListPotGroups")
