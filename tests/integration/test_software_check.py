"""R6, the field check on a real service: the pot service, over mutual TLS, answers an
inspector's certificate with the HMAC of every file of its installation under the inspector's
seed (equal to one computed here from the files alone), and ``jackpot verify --seed --service``
agrees with it; an operator is refused; each call is on the service's access log's chain."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import grpc
import pytest

from jackpot.platform.authz import AccessSettings
from jackpot.platform.manifest import package_root, verify, write_manifest
from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.tools import inspection
from jackpot.tools.pki import issue_dev
from jackpot.v1 import software_pb2, software_pb2_grpc
from tests.integration.in_process import pot_in_process
from tests.integration.test_pot_service import pot_settings
from tests.integration.test_security import wait_for_entries
from tests.unit.test_manifest import SEED, independent_hmac

pytestmark = pytest.mark.integration


async def attest(target: str, tls: TlsSettings, seed: bytes) -> software_pb2.AttestSoftwareResponse:
    async with secure_channel(target, tls) as channel:
        stub = software_pb2_grpc.SoftwareServiceStub(channel)  # type: ignore[no-untyped-call]
        answer: software_pb2.AttestSoftwareResponse = await stub.AttestSoftware(
            software_pb2.AttestSoftwareRequest(seed=seed)
        )
        return answer


async def test_R6_the_pot_service_answers_an_inspectors_seed_over_mutual_tls(
    kafka_bootstrap: str,
    unique: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pki = tmp_path / "pki"
    issue_dev(pki)
    audit_topic = f"test.audit.{unique}"
    access = AccessSettings(tls=TlsSettings.for_name(pki, "pot"), audit_topic=audit_topic)
    settings = pot_settings(kafka_bootstrap, unique, 1).replace(access=access)
    if not verify(package_root()).ok:  # a tree edited since the session recorded its manifest
        write_manifest(package_root())
    server = pot_in_process(settings)
    await server.start()
    target = f"localhost:{server.grpc_port}"
    try:
        answer = await attest(target, TlsSettings.for_name(pki, "inspector"), SEED)
        assert (answer.hmac_sha256, answer.files) == independent_hmac(package_root(), SEED)
        assert answer.service.startswith("pot-api:")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await attest(target, TlsSettings.for_name(pki, "operator"), SEED)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        inspector = TlsSettings.for_name(pki, "inspector")
        for variable, path in (
            ("JACKPOT_TLS_CERT", inspector.cert_file),
            ("JACKPOT_TLS_KEY", inspector.key_file),
            ("JACKPOT_TLS_CA", inspector.ca_file),
        ):
            monkeypatch.setenv(variable, path)
        status = await asyncio.to_thread(inspection.run, None, "", SEED, target)
        out = capsys.readouterr()
        assert status == 0, out.err
        said = out.out.splitlines()[-1]  # after the service's own log lines
        assert said == (
            f"software verified: {answer.service} at {target} answers hmac-sha256:"
            f"{answer.hmac_sha256} over {answer.files} files, as {package_root()} does"
        )
        other = bytes(reversed(SEED))  # under another seed, another answer: both sides agree
        assert await asyncio.to_thread(inspection.run, None, "", other, target) == 0
        said = capsys.readouterr().out.splitlines()[-1]
        assert said.startswith("software verified:")
        assert answer.hmac_sha256 not in said
        # The judge refuses: a reference copy one line apart (its manifest recorded again)...
        reference = tmp_path / "reference" / "jackpot"
        shutil.copytree(package_root(), reference, ignore=shutil.ignore_patterns("__pycache__"))
        (reference / "cli.py").write_text((reference / "cli.py").read_text() + "# other\n")
        write_manifest(reference)
        assert await asyncio.to_thread(inspection.run, reference, "", SEED, target) == 1
        assert "its installed files are not these" in capsys.readouterr().err
        # ...and a service that did not start from the approved manifest (this one, composed in
        # the test's process, verified none)
        approved = verify(package_root()).digest
        assert await asyncio.to_thread(inspection.run, None, approved, SEED, target) == 1
        assert f"not the approved sha256:{approved}" in capsys.readouterr().err
    finally:
        await server.stop()
    entries = await wait_for_entries(kafka_bootstrap, audit_topic, 1)
    checks = [(e.principal, e.outcome) for e in entries if e.action == "attest_software"]
    assert ("inspector", "applied") in checks
    assert ("operator", "refused") in checks
