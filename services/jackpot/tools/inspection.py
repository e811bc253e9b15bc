"""`jackpot verify`: the installed software checked by hand, as an inspector does it (R6).

    jackpot verify [ROOT]                          # the files against their manifest
    jackpot verify --expect sha256:<digest> [ROOT] # ... and the manifest is the approved one
    jackpot verify --seed <hex> [ROOT]             # the HMAC of ROOT's files under the seed
    jackpot verify --seed <hex> --service HOST:PORT [--expect ...] [ROOT]
                                                   # a running service's answer against ROOT's

ROOT is a package folder (default: the installed ``jackpot`` package); for the field check it is
the inspector's own copy of the approved build. ``--service`` asks the service's
``SoftwareService.AttestSoftware`` over mutual TLS with the caller's certificate
(JACKPOT_TLS_CERT/KEY/CA; it needs the inspector role) and compares its answer with ROOT's: the
same only when the service's installed files are ROOT's, byte for byte. Exit 0 when everything
agrees, 1 when something differs (one line naming it), 2 when the service cannot be asked.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import grpc

from jackpot.platform.manifest import Attestation, attest, package_root, verify
from jackpot.platform.service_settings import TlsSettings
from jackpot.platform.settings import SettingsError, load
from jackpot.platform.tls import secure_channel
from jackpot.v1 import software_pb2, software_pb2_grpc

CALL_SECONDS = 30.0


def run(root: Path | None, expect: str, seed: bytes | None, service: str) -> int:
    """The exit status of ``jackpot verify`` (see the module's docstring)."""
    root = root or package_root()
    result = verify(root, expect)
    if not result.ok:
        print(result.describe(), file=sys.stderr)
        return 1
    if seed is None:
        print(result.describe())
        return 0
    ours = attest(root, seed)
    if not service:
        print(f"hmac-sha256:{ours.hmac_sha256} over {ours.files} files of {root}")
        return 0
    try:
        answer = asyncio.run(_ask(service, seed))
    except (grpc.RpcError, SettingsError) as error:
        print(f"jackpot verify: {service}: {_reason(error)}", file=sys.stderr)
        return 2
    return _compare(service, answer, ours, root, expect)


async def _ask(target: str, seed: bytes) -> software_pb2.AttestSoftwareResponse:
    async with secure_channel(target, load(TlsSettings)) as channel:
        stub = software_pb2_grpc.SoftwareServiceStub(channel)  # type: ignore[no-untyped-call]
        request = software_pb2.AttestSoftwareRequest(seed=seed)
        answer: software_pb2.AttestSoftwareResponse = await stub.AttestSoftware(
            request, timeout=CALL_SECONDS
        )
        return answer


def _compare(
    target: str,
    answer: software_pb2.AttestSoftwareResponse,
    ours: Attestation,
    root: Path,
    expect: str,
) -> int:
    """One line: the service's answer agrees with ``root``'s (0), or how it differs (1)."""
    said = f"{answer.service or 'the service'} at {target} answers hmac-sha256:"
    said += f"{answer.hmac_sha256} over {answer.files} files"
    if (answer.hmac_sha256, answer.files) != (ours.hmac_sha256, ours.files):
        print(
            f"software not verified: {said}; {root} gives hmac-sha256:{ours.hmac_sha256} over "
            f"{ours.files} files: its installed files are not these",
            file=sys.stderr,
        )
        return 1
    if expect and answer.manifest_sha256 != expect:
        print(
            f"software not verified: {said}, but it started from manifest "
            f"sha256:{answer.manifest_sha256 or '(none)'}, not the approved sha256:{expect}",
            file=sys.stderr,
        )
        return 1
    print(f"software verified: {said}, as {root} does")
    return 0


def _reason(error: grpc.RpcError | SettingsError) -> str:
    if isinstance(error, grpc.aio.AioRpcError):
        return f"{error.code().name}: {error.details()}"
    return str(error)
