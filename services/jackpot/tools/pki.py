"""`jackpot pki`: the development certificate authority and the certificates it issues.

    jackpot pki init  --dir .run/pki                        # ca.crt + ca.key (once)
    jackpot pki issue --dir .run/pki --name pot --role service --host localhost --host 127.0.0.1
    jackpot pki issue --dir .run/pki --name t-01 --role device --table t-01
    jackpot pki dev   --dir .run/pki                        # CA + the local floor's certificates

What a certificate says is what the services trust (jackpot.platform.tls reads it back):

- subject CN: the principal's name (a person, a service, or a table id);
- subject OU (one per role): device, terminal, sign, operator, supervisor, service, inspector
  (the regulator's inspector: the field check of the software, R6);
- URI SAN ``urn:jackpot:table:<table id>``: binds a device or dealer terminal to its table;
- DNS/IP SANs: the host names a server answers on.

Keys are ECDSA P-256 (fast to make, accepted by gRPC, Python's ssl and Java); private keys are
PKCS#8 PEM, unencrypted, mode 0600 - this is a development CA: production certificates come from
the operator's PKI (cert-manager in deploy/k8s) with the same fields.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from jackpot.domain.access import Role, parse_roles

TABLE_URI_PREFIX = "urn:jackpot:table:"
CA_NAME = "Jackpot development CA"
VALID_DAYS = 825

# The local floor (`jackpot demo`, tests): servers answer on loopback.
LOCAL_HOSTS = ("localhost", "127.0.0.1")
DEV_PRINCIPALS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("pot", "service", LOCAL_HOSTS),
    ("payout", "service", LOCAL_HOSTS),
    ("display", "service", LOCAL_HOSTS),
    ("gateway", "service", LOCAL_HOSTS),
    ("kafka", "service", LOCAL_HOSTS),
    ("operator", "operator", ()),
    ("supervisor", "supervisor", ()),
    ("sign", "sign", ()),
    ("inspector", "inspector", ()),  # R6: `jackpot verify --seed ... --service ...`
)


@dataclass(frozen=True, slots=True)
class Issued:
    """A certificate and its key on disk; ``bundle`` holds key then certificate (for Kafka)."""

    certificate: Path
    key: Path
    bundle: Path


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def init_ca(directory: Path) -> Path:
    """Create the CA in ``directory`` unless it exists; the path of ca.crt."""
    certificate = directory / "ca.crt"
    if certificate.exists() and (directory / "ca.key").exists():
        return certificate
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write_private(directory / "ca.key", _key_pem(key))
    certificate.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return certificate


def issue(
    directory: Path,
    name: str,
    roles: Iterable[Role],
    table_id: str = "",
    hosts: Sequence[str] = (),
    file_name: str = "",
) -> Issued:
    """Issue ``<file_name>.crt``/``.key``/``.pem`` (default file name: ``name``) for the principal
    ``name``, signed by the CA in ``directory`` (created if needed)."""
    file_name = file_name or name
    if not name or not file_name or "/" in file_name or file_name.startswith("."):
        raise ValueError(f"certificate file name {file_name!r} must be a plain file name")
    init_ca(directory)
    ca_key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), None)
    ca_cert = x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes())
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an EC key")
    key = ec.generate_private_key(ec.SECP256R1())
    alternative = _alternative_names(table_id, hosts)
    now = _now()
    builder = (
        x509.CertificateBuilder()
        .subject_name(_subject(name, roles))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.SERVER_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if alternative:
        builder = builder.add_extension(x509.SubjectAlternativeName(alternative), critical=False)
    cert_pem = builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    key_pem = _key_pem(key)
    issued = _files(directory, file_name)
    issued.certificate.write_bytes(cert_pem)
    _write_private(issued.key, key_pem)
    _write_private(issued.bundle, key_pem + cert_pem)
    return issued


def _subject(name: str, roles: Iterable[Role]) -> x509.Name:
    """CN the principal, one OU per role (sorted)."""
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, name)]
    attributes += [
        x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, role.value)
        for role in sorted(roles, key=lambda r: r.value)
    ]
    return x509.Name(attributes)


def _alternative_names(table_id: str, hosts: Sequence[str]) -> list[x509.GeneralName]:
    """The table binding (a URI) and the hosts (IP addresses or DNS names) a certificate names."""
    alternative: list[x509.GeneralName] = []
    if table_id:
        alternative.append(x509.UniformResourceIdentifier(TABLE_URI_PREFIX + table_id))
    for host in hosts:
        try:
            alternative.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alternative.append(x509.DNSName(host))
    return alternative


def _files(directory: Path, file_name: str) -> Issued:
    return Issued(
        directory / f"{file_name}.crt",
        directory / f"{file_name}.key",
        directory / f"{file_name}.pem",
    )


def issue_dev(directory: Path, tables: Iterable[str] = ()) -> dict[str, Issued]:
    """The CA plus the local floor's certificates (services, operator, supervisor, sign) and a
    device and a dealer-terminal certificate per table id given; existing files are kept."""
    init_ca(directory)
    issued: dict[str, Issued] = {}
    wanted = [(name, parse_roles(role), "", hosts) for name, role, hosts in DEV_PRINCIPALS]
    for table in tables:
        wanted.append((f"device-{table}", frozenset({Role.DEVICE}), table, ()))
        wanted.append((f"terminal-{table}", frozenset({Role.TERMINAL}), table, ()))
    for file_name, roles, table, hosts in wanted:
        existing = _files(directory, file_name)
        if existing.certificate.exists() and existing.key.exists() and existing.bundle.exists():
            issued[file_name] = existing
        else:  # a table's certificates are named for the table (CN), filed by what they are
            issued[file_name] = issue(
                directory, table or file_name, roles, table, hosts, file_name=file_name
            )
    return issued


def run(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="jackpot pki",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    init = commands.add_parser("init", help="create the development CA (kept if it exists)")
    init.add_argument("--dir", type=Path, default=Path(".run/pki"))
    issue_cmd = commands.add_parser("issue", help="issue a certificate signed by the CA")
    issue_cmd.add_argument("--dir", type=Path, default=Path(".run/pki"))
    issue_cmd.add_argument("--name", required=True, help="CN and file name")
    issue_cmd.add_argument(
        "--role",
        action="append",
        required=True,
        help="device, terminal, sign, operator, supervisor, service or inspector (repeat for "
        "several)",
    )
    issue_cmd.add_argument("--table", default="", help="bind to this table id (devices, terminals)")
    issue_cmd.add_argument("--host", action="append", default=[], help="DNS name or IP (servers)")
    dev = commands.add_parser(
        "dev", help="the CA and every certificate the local floor (and an inspector) needs"
    )
    dev.add_argument("--dir", type=Path, default=Path(".run/pki"))
    dev.add_argument("--table", action="append", default=[], help="also a device + terminal cert")
    args = parser.parse_args(argv)
    if args.command == "init":
        print(init_ca(args.dir))
    elif args.command == "issue":
        roles = parse_roles(",".join(args.role))
        issued = issue(args.dir, args.name, roles, args.table, args.host)
        print(issued.certificate)
    else:
        for name, issued in issue_dev(args.dir, args.table).items():
            print(f"{name:24} {issued.certificate}")
    return 0
