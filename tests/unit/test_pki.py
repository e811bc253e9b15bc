"""The development CA (`jackpot pki`) and what the services read back from a certificate."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from jackpot.domain.access import Role
from jackpot.platform.authz import AccessSettings
from jackpot.platform.settings import load
from jackpot.platform.tls import TlsSettings, principal_from_pem
from jackpot.tools.pki import init_ca, issue, issue_dev, run

pytestmark = pytest.mark.unit


def signed_by_ca(certificate: Path, ca: Path) -> bool:
    cert = x509.load_pem_x509_certificate(certificate.read_bytes())
    authority = x509.load_pem_x509_certificate(ca.read_bytes())
    try:
        cert.verify_directly_issued_by(authority)
    except (ValueError, InvalidSignature):
        return False
    return True


def test_a_device_certificate_names_its_table_and_role(tmp_path: Path) -> None:
    issued = issue(tmp_path, "CAR-1", {Role.DEVICE}, table_id="CAR-1", file_name="device-CAR-1")
    principal = principal_from_pem(issued.certificate.read_bytes())
    assert principal.name == "CAR-1"
    assert principal.roles == {Role.DEVICE}
    assert principal.table_id == "CAR-1"
    assert principal.authenticated_by == "x509"
    assert signed_by_ca(issued.certificate, tmp_path / "ca.crt")
    assert stat.S_IMODE(issued.key.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "ca.key").stat().st_mode) == 0o600
    assert issued.bundle.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")


def test_a_server_certificate_carries_its_hosts_and_several_roles(tmp_path: Path) -> None:
    issued = issue(tmp_path, "pot", {Role.SERVICE, Role.OPERATOR}, hosts=["localhost", "127.0.0.1"])
    cert = x509.load_pem_x509_certificate(issued.certificate.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert principal_from_pem(issued.certificate.read_bytes()).roles == {
        Role.SERVICE,
        Role.OPERATOR,
    }


def test_another_ca_does_not_sign_for_ours(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    rogue = issue(theirs, "operator", {Role.OPERATOR})
    init_ca(ours)
    assert not signed_by_ca(rogue.certificate, ours / "ca.crt")


def test_the_dev_set_is_made_once_and_kept(tmp_path: Path) -> None:
    first = issue_dev(tmp_path, ["T1"])
    assert {"pot", "payout", "display", "gateway", "operator", "supervisor", "sign"} <= set(first)
    assert principal_from_pem(first["terminal-T1"].certificate.read_bytes()).table_id == "T1"
    before = first["operator"].certificate.read_bytes()
    issue_dev(tmp_path, ["T1", "T2"])
    assert first["operator"].certificate.read_bytes() == before
    assert (tmp_path / "device-T2.crt").exists()


def test_the_command_issues_and_refuses_unknown_roles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["issue", "--dir", str(tmp_path), "--name", "ana", "--role", "supervisor"]) == 0
    assert principal_from_pem((tmp_path / "ana.crt").read_bytes()).roles == {Role.SUPERVISOR}
    with pytest.raises(ValueError, match="unknown role 'root'"):
        run(["issue", "--dir", str(tmp_path), "--name", "x", "--role", "root"])
    with pytest.raises(ValueError, match="plain file name"):
        issue(tmp_path, "../escape", {Role.SIGN})


def test_tls_settings_come_whole_and_exclude_insecure_roles(tmp_path: Path) -> None:
    assert not load(TlsSettings, {}).enabled
    with pytest.raises(ValueError, match="go together"):
        load(TlsSettings, {"JACKPOT_TLS_CERT": "a.crt"})
    env = {"JACKPOT_TLS_CERT": "a", "JACKPOT_TLS_KEY": "b", "JACKPOT_TLS_CA": "c"}
    assert load(AccessSettings, env).tls.enabled
    with pytest.raises(ValueError, match="plaintext development only"):
        load(AccessSettings, {**env, "JACKPOT_INSECURE_ROLES": "operator"})
    local = load(AccessSettings, {"JACKPOT_INSECURE_ROLES": "operator,supervisor"})
    assert local.insecure_roles == {Role.OPERATOR, Role.SUPERVISOR}
    issue_dev(tmp_path)
    tls = TlsSettings.for_name(tmp_path, "pot")
    assert tls.server_credentials() is not None
    assert tls.channel_credentials() is not None
    assert tls.server_context() is not None
