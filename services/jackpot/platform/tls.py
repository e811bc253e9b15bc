"""Mutual TLS for every gRPC endpoint, and who the peer is.

One typed :class:`TlsSettings` per process (defined with the other settings in
:mod:`jackpot.platform.settings`; variables JACKPOT_TLS_CERT, JACKPOT_TLS_KEY, JACKPOT_TLS_CA, see
docs/settings.md), read in ``main`` as part of the service's settings.

All three set: servers require and verify client certificates, clients present theirs. None set:
plaintext (local development; see :mod:`jackpot.platform.authz` for what is then allowed).
A peer's :class:`~jackpot.domain.access.Principal` is read from its verified certificate: CN = name,
each OU = a role, URI SAN ``urn:jackpot:table:<id>`` = the table it is bound to (``jackpot pki``).
"""

from __future__ import annotations

import grpc
from cryptography import x509
from cryptography.x509.oid import NameOID

from jackpot.domain.access import Principal, Role
from jackpot.platform.service_settings import TlsSettings as TlsSettings
from jackpot.platform.tracing import ClientTracing, tracing_on

TABLE_URI_PREFIX = "urn:jackpot:table:"


def secure_channel(
    target: str, tls: TlsSettings, options: list[tuple[str, object]] | None = None
) -> grpc.aio.Channel:
    """An asyncio channel: mutual TLS when ``tls`` is enabled, plaintext otherwise; its unary
    calls carry the caller's trace context when tracing is on as it is made."""
    credentials = tls.channel_credentials()
    # gRPC runs an intercepted call as a second task: a cost per call (a wallet credit's) that
    # carries nothing while no tracer provider is installed
    interceptors = [ClientTracing()] if tracing_on() else []
    if credentials is None:
        return grpc.aio.insecure_channel(target, options=options, interceptors=interceptors)
    return grpc.aio.secure_channel(target, credentials, options=options, interceptors=interceptors)


def principal_from_pem(pem: bytes) -> Principal:
    """The principal a (verified) certificate names; unknown OUs grant nothing."""
    certificate = x509.load_pem_x509_certificate(pem)
    subject = certificate.subject
    names = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    roles = set()
    for attribute in subject.get_attributes_for_oid(NameOID.ORGANIZATIONAL_UNIT_NAME):
        try:
            roles.add(Role(str(attribute.value).lower()))
        except ValueError:
            continue
    table_id = ""
    try:
        alternative = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        alternative = None
    if alternative is not None:
        for uri in alternative.value.get_values_for_type(x509.UniformResourceIdentifier):
            if uri.startswith(TABLE_URI_PREFIX):
                table_id = uri.removeprefix(TABLE_URI_PREFIX)
    return Principal(
        name=str(names[0].value) if names else "",
        roles=frozenset(roles),
        table_id=table_id,
        authenticated_by="x509",
    )


def peer_principal(context: grpc.aio.ServicerContext) -> Principal | None:
    """The verified client certificate's principal, or None on a plaintext connection.

    gRPC has already verified the chain against JACKPOT_TLS_CA before the call reaches us
    (``require_client_auth``); ``x509_pem_cert`` is only present for such peers.
    """
    auth = context.auth_context()
    pem = auth.get("x509_pem_cert")
    if not pem:
        return None
    return principal_from_pem(pem[0])
