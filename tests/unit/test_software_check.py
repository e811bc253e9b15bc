"""R6, the field check without a network: ``AttestSoftware`` answers an inspector's certificate
with the HMAC of every installed file under the inspector's seed (equal to one computed in the
test from the files alone), refuses anyone else and a seed too short, and puts every call on the
access log."""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from jackpot.domain.access import Principal, Role
from jackpot.platform.authz import AccessSettings, Authorizer
from jackpot.platform.grpc_edge import SoftwareServicer
from jackpot.platform.manifest import (
    package_root,
    remember_verified,
    verified_digest,
    write_manifest,
)
from jackpot.tools.pki import issue
from jackpot.v1 import software_pb2
from tests.unit.test_manifest import SEED, independent_hmac

pytestmark = pytest.mark.unit


class Aborted(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code


@dataclass
class CertifiedContext:
    """A call over mutual TLS from the holder of ``pem`` (gRPC verified it against the CA)."""

    pem: bytes

    def auth_context(self) -> dict[str, list[bytes]]:
        return {"x509_pem_cert": [self.pem]}

    async def abort(self, code: grpc.StatusCode, details: str = "", **_: Any) -> None:
        raise Aborted(code, details)


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


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("site") / "jackpot"
    shutil.copytree(package_root(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    write_manifest(copy)
    return copy


def certificate(tmp_path: Path, name: str, role: Role) -> bytes:
    return issue(tmp_path / "pki", name, {role}).certificate.read_bytes()


async def test_R6_an_inspector_gets_the_hmac_of_every_installed_file_under_their_seed(
    installed: Path, tmp_path: Path
) -> None:
    audit = FakeAudit()
    authorizer = Authorizer(AccessSettings(), audit)  # type: ignore[arg-type]
    servicer = SoftwareServicer(authorizer, "pot-api:test", installed)
    before = verified_digest()
    remember_verified("ab" * 32)
    try:
        context = CertifiedContext(certificate(tmp_path, "ines", Role.INSPECTOR))
        request = software_pb2.AttestSoftwareRequest(seed=SEED)
        answer = await servicer.AttestSoftware(request, context)  # type: ignore[arg-type]
    finally:
        remember_verified(before)
    expected, files = independent_hmac(installed, SEED)
    assert (answer.hmac_sha256, answer.files) == (expected, files)
    assert (answer.manifest_sha256, answer.service) == ("ab" * 32, "pot-api:test")
    assert audit.entries == [
        ("ines", "attest_software", "allowed", "software", "a seed of 32 bytes"),
        (
            "ines",
            "attest_software",
            "applied",
            "software",
            f"hmac-sha256:{expected} over {files} files",
        ),
    ]


@pytest.mark.parametrize(
    ("role", "seed", "code"),
    [
        (Role.OPERATOR, SEED, grpc.StatusCode.PERMISSION_DENIED),
        (Role.SERVICE, SEED, grpc.StatusCode.PERMISSION_DENIED),
        (Role.INSPECTOR, SEED[:15], grpc.StatusCode.INVALID_ARGUMENT),
    ],
)
async def test_R6_nobody_but_an_inspector_is_answered_and_never_a_short_seed(
    installed: Path, tmp_path: Path, role: Role, seed: bytes, code: grpc.StatusCode
) -> None:
    audit = FakeAudit()
    servicer = SoftwareServicer(Authorizer(AccessSettings(), audit), "pot", installed)  # type: ignore[arg-type]
    context = CertifiedContext(certificate(tmp_path, "someone", role))
    with pytest.raises(Aborted) as refused:
        await servicer.AttestSoftware(software_pb2.AttestSoftwareRequest(seed=seed), context)  # type: ignore[arg-type]
    assert refused.value.code == code
    assert [(action, outcome) for _, action, outcome, _, _ in audit.entries][-1] == (
        "attest_software",
        "refused",
    )
