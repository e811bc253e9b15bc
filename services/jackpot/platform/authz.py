"""Authorization at the gRPC edge: who is calling, may they, and the access log's entry either way.

:class:`AccessSettings` is the one typed group of security settings every service reads in
``main`` (TLS files, the audit topic, and the development escape hatch below).
:class:`Authorizer` resolves the caller's :class:`~jackpot.domain.access.Principal` from its
verified client certificate, asks :func:`jackpot.domain.access.authorize`, writes the attempt to
the hash-chained access log (allowed attempts are on the log *before* the change is made; if the
log cannot be written the call fails UNAVAILABLE rather than act unaudited), and aborts refused
calls with PERMISSION_DENIED (or UNAUTHENTICATED when there is no identity at all).

Without TLS there are no identities. ``JACKPOT_INSECURE_ROLES`` (for example
``operator,supervisor``) then grants those roles to every plaintext caller, named ``local``: for a
developer's laptop and the local demo only; it is refused together with TLS, and unset means
plaintext callers can do nothing protected.

Its variables (JACKPOT_TLS_*, JACKPOT_INSECURE_ROLES, JACKPOT_AUDIT_TOPIC, JACKPOT_HEALTH_GRPC)
are in docs/settings.md; the model itself is in :mod:`jackpot.platform.settings`.
"""

from __future__ import annotations

import asyncio

import grpc
import structlog

from jackpot.domain.access import ANONYMOUS, Action, Principal, authorize
from jackpot.platform.access_log import AccessLog
from jackpot.platform.service_settings import AccessSettings as AccessSettings
from jackpot.platform.tls import peer_principal

log = structlog.get_logger("jackpot.authz")

AUDIT_WRITE_TIMEOUT_SECONDS = 10.0


class Authorizer:
    """Decides and audits protected calls for one service."""

    def __init__(
        self,
        settings: AccessSettings,
        access_log: AccessLog,
        audit_timeout_seconds: float = AUDIT_WRITE_TIMEOUT_SECONDS,
    ) -> None:
        self.settings = settings
        self.access_log = access_log
        self.audit_timeout_seconds = audit_timeout_seconds
        if not settings.tls.enabled:
            log.warning(
                "plaintext_grpc",
                insecure_roles=sorted(role.value for role in settings.insecure_roles),
                hint="set JACKPOT_TLS_CERT/KEY/CA for mutual TLS (jackpot pki)",
            )

    def principal(self, context: grpc.aio.ServicerContext) -> Principal:
        peer = peer_principal(context)
        if peer is not None:
            return peer
        if self.settings.tls.enabled or not self.settings.insecure_roles:
            return ANONYMOUS
        return Principal("local", self.settings.insecure_roles, authenticated_by="none")

    async def require(
        self,
        context: grpc.aio.ServicerContext,
        action: Action,
        target: str,
        table_id: str = "",
        detail: str = "",
        studio: str = "",
    ) -> Principal:
        """The caller, if it may perform ``action``; otherwise the call is aborted."""
        principal = self.principal(context)
        decision = authorize(principal, action, table_id, studio)
        log.info(
            "access_allowed" if decision.allowed else "access_refused",
            principal=principal.name,
            action=action.value,
            target=target,
        )
        if not decision.allowed:
            self.access_log.note(principal, action.value, "refused", target, decision.detail)
            status = (
                grpc.StatusCode.UNAUTHENTICATED
                if principal is ANONYMOUS
                else grpc.StatusCode.PERMISSION_DENIED
            )
            await context.abort(status, decision.detail)
        entry = self.access_log.record(principal, action.value, "allowed", target, detail)
        try:
            await asyncio.wait_for(asyncio.shield(entry), self.audit_timeout_seconds)
        except Exception as error:
            log.error("audit_unavailable", action=action.value, target=target, error=repr(error))
            # The "allowed" entry is still queued and will reach the log: say how it ended.
            self.access_log.note(
                principal,
                action.value,
                "fault",
                target,
                "the access log could not be written in time: the call was refused, nothing "
                "changed",
            )
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                "the access log cannot be written; nothing was changed, try again",
            )
        return principal

    async def require_read(self, context: grpc.aio.ServicerContext, method: str) -> None:
        await self.check(context, Action.READ, method)

    async def check(self, context: grpc.aio.ServicerContext, action: Action, method: str) -> None:
        """Queries and streams: the roles of ``action`` under TLS (refusals audited, allowed
        calls not: they are reads); open on plaintext, where every caller is local."""
        if not self.settings.tls.enabled:
            return
        principal = self.principal(context)
        decision = authorize(principal, action)
        if not decision.allowed:
            self.access_log.note(principal, action.value, "refused", method, decision.detail)
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, decision.detail)

    def outcome(
        self, principal: Principal, action: Action, outcome: str, target: str, detail: str
    ) -> None:
        """Record what an allowed call came to (applied, or refused by the rules)."""
        self.access_log.note(principal, action.value, outcome, target, detail)
