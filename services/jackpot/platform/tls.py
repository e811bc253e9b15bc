"""Mutual TLS for every gRPC endpoint, and who the peer is.

One typed :class:`TlsSettings` per process, read in ``main`` from:

| variable | meaning |
|---|---|
| JACKPOT_TLS_CERT | this process's certificate (PEM) |
| JACKPOT_TLS_KEY | its private key (PEM) |
| JACKPOT_TLS_CA | the CA that signs every peer (PEM); peers must present a certificate it signed |

All three set: servers require and verify client certificates, clients present theirs. None set:
plaintext (local development; see :mod:`jackpot.platform.authz` for what is then allowed).
A peer's :class:`~jackpot.domain.access.Principal` is read from its verified certificate: CN = name,
each OU = a role, URI SAN ``urn:jackpot:table:<id>`` = the table it is bound to (``jackpot pki``).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.x509.oid import NameOID

from jackpot.domain.access import Principal, Role

TABLE_URI_PREFIX = "urn:jackpot:table:"


@dataclass(frozen=True, slots=True)
class TlsSettings:
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> TlsSettings:
        settings = cls(
            cert_file=environ.get("JACKPOT_TLS_CERT", ""),
            key_file=environ.get("JACKPOT_TLS_KEY", ""),
            ca_file=environ.get("JACKPOT_TLS_CA", ""),
        )
        given = [bool(settings.cert_file), bool(settings.key_file), bool(settings.ca_file)]
        if any(given) and not all(given):
            raise ValueError("JACKPOT_TLS_CERT, JACKPOT_TLS_KEY and JACKPOT_TLS_CA go together")
        return settings

    @classmethod
    def for_name(cls, directory: Path, name: str) -> TlsSettings:
        """The files ``jackpot pki`` writes for ``name`` in ``directory``."""
        return cls(
            str(directory / f"{name}.crt"),
            str(directory / f"{name}.key"),
            str(directory / "ca.crt"),
        )

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file)

    def _read(self) -> tuple[bytes, bytes, bytes]:
        return (
            Path(self.key_file).read_bytes(),
            Path(self.cert_file).read_bytes(),
            Path(self.ca_file).read_bytes(),
        )

    def server_credentials(self) -> grpc.ServerCredentials | None:
        """Credentials that require a client certificate signed by the CA (None: plaintext)."""
        if not self.enabled:
            return None
        key, cert, ca = self._read()
        return grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=ca, require_client_auth=True
        )

    def server_context(self) -> ssl.SSLContext | None:
        """For HTTPS (web signs): the server certificate, no client certificate asked."""
        if not self.enabled:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def channel_credentials(self) -> grpc.ChannelCredentials | None:
        if not self.enabled:
            return None
        key, cert, ca = self._read()
        return grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=key, certificate_chain=cert
        )


def secure_channel(
    target: str, tls: TlsSettings, options: list[tuple[str, object]] | None = None
) -> grpc.aio.Channel:
    """An asyncio channel: mutual TLS when ``tls`` is enabled, plaintext otherwise."""
    credentials = tls.channel_credentials()
    if credentials is None:
        return grpc.aio.insecure_channel(target, options=options)
    return grpc.aio.secure_channel(target, credentials, options=options)


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
