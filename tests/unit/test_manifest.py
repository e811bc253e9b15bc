"""R6: the software authenticates itself. A copy of the installed package with its manifest
verifies; a changed, a missing and an added file are each named, and a service started from a
tampered copy refuses to start (one line, non-zero exit, nothing served). A manifest recorded
again over a tampered copy is refused by the digest the regulator approved; and the field check,
the HMAC of every installed file under an inspector's seed, equals one computed here with
nothing of the product (``hmac`` over the files as they lie on disk)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from loadtest.free_ports import free_port

from jackpot import cli
from jackpot.platform.manifest import (
    MANIFEST_NAME,
    attest,
    package_root,
    verify,
    write_manifest,
)
from jackpot.platform.runtime import SOFTWARE_NOT_VERIFIED_EXIT

SEED = bytes(range(32))  # an inspector's seed (in the field: 32 random bytes of their own)


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """A copy of the installed ``jackpot`` package with its manifest recorded."""
    copy = tmp_path / "site" / "jackpot"
    shutil.copytree(package_root(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    write_manifest(copy)
    return copy


def test_R6_a_changed_missing_or_added_file_is_refused(installed: Path) -> None:
    clean = verify(installed)
    assert clean.ok, clean.describe()
    assert len(clean.digest) == 64
    (installed / "domain" / "money.py").write_text("MINOR_PER_PESO = 1\n")
    (installed / "tools" / "resolve.py").unlink()
    (installed / "domain" / "backdoor.py").write_text("print('hi')\n")
    (installed / "__pycache__").mkdir()  # compiled caches are not the software
    (installed / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    tampered = verify(installed)
    assert not tampered.ok
    assert tampered.changed == ["domain/money.py"]
    assert tampered.missing == ["tools/resolve.py"]
    assert tampered.added == ["domain/backdoor.py"]
    assert "changed domain/money.py; missing tools/resolve.py; added domain/backdoor.py" in (
        tampered.describe()
    )
    (installed / MANIFEST_NAME).unlink()
    assert "no manifest" in verify(installed).describe()


def test_R6_jackpot_verify_checks_an_installation_by_hand(
    installed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["verify", str(installed)]) == 0
    assert "software verified" in capsys.readouterr().out
    (installed / "cli.py").write_text("")
    assert cli.main(["verify", str(installed)]) == 1
    assert "changed cli.py" in capsys.readouterr().err


def test_R6_a_service_with_a_tampered_installation_refuses_to_start(installed: Path) -> None:
    """R6, R4: the pot service started from the tampered copy exits before it composes anything
    (no Kafka, no gRPC port, so its health is never SERVING), with one line naming the file."""
    (installed / "pot" / "service.py").write_text(
        (installed / "pot" / "service.py").read_text() + "\n# altered\n"
    )
    done = start_pot(installed)
    assert done.returncode == SOFTWARE_NOT_VERIFIED_EXIT, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("jackpot pot: software not verified:"), lines
    assert "changed pot/service.py" in lines[0]
    assert str(installed) in lines[0]  # it checked the copy it runs from
    assert "service_started" not in done.stdout + done.stderr


def start_pot(installed: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """``jackpot pot`` run from ``installed`` with ``variables``; what it did."""
    env = {
        **os.environ,
        "PYTHONPATH": str(installed.parent),
        "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",
        # main() opens /metrics before the runtime checks the software: a port of its own, so a
        # service of someone else's on 9102 does not decide this test
        "JACKPOT_METRICS_PORT": str(free_port()),
        **variables,
    }
    return subprocess.run(
        [sys.executable, "-m", "jackpot.cli", "pot"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=installed.parent,
    )


def rerecorded_tampering(installed: Path) -> str:
    """The copy tampered with and its manifest recorded again over it, as someone who can write
    to the installation would: it matches its own manifest. The digest the build approved."""
    approved = verify(installed).digest
    service = installed / "pot" / "service.py"
    service.write_text(service.read_text() + "\n# not the approved build\n")
    write_manifest(installed)
    assert verify(installed).ok
    return approved


def test_R6_a_manifest_recorded_again_over_tampered_files_is_not_the_approved_one(
    installed: Path,
) -> None:
    approved = verify(installed).digest
    assert verify(installed, approved).ok
    assert "(the approved digest)" in verify(installed, approved).describe()
    rerecorded_tampering(installed)
    refused = verify(installed, approved)
    assert not refused.ok
    assert refused.describe() == (
        f"software not verified: {installed} its manifest is sha256:{refused.digest}, not the "
        f"approved sha256:{approved}"
    )


def test_R6_a_service_whose_manifest_is_not_the_approved_one_never_starts(
    installed: Path,
) -> None:
    """R6, R4: JACKPOT_APPROVED_SOFTWARE_DIGEST holds what the regulator approved; the pot
    service on a copy whose manifest was recorded again exits 3 with one line, before anything
    (a bad digest setting is a bad setting: exit 2, one line naming it)."""
    approved = rerecorded_tampering(installed)
    done = start_pot(installed, JACKPOT_APPROVED_SOFTWARE_DIGEST=f"sha256:{approved}")
    assert done.returncode == SOFTWARE_NOT_VERIFIED_EXIT, done.stdout + done.stderr
    first, *logged = done.stderr.strip().splitlines()
    assert first.startswith("jackpot pot: software not verified:"), first
    assert f"not the approved sha256:{approved}" in first
    assert [json.loads(line)["event"] for line in logged] == ["software_not_verified"]
    assert "service_started" not in done.stdout + done.stderr
    bad = start_pot(installed, JACKPOT_APPROVED_SOFTWARE_DIGEST="sha256:1234")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "jackpot pot: bad setting: JACKPOT_APPROVED_SOFTWARE_DIGEST='sha256:1234': expected a "
        "SHA-256 digest: 64 hex digits, optionally after 'sha256:'"
    ]


def test_R6_jackpot_verify_expect_says_the_same_by_hand(
    installed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    approved = verify(installed).digest
    assert cli.main(["verify", "--expect", f"sha256:{approved.upper()}", str(installed)]) == 0
    assert "(the approved digest)" in capsys.readouterr().out
    rerecorded_tampering(installed)
    assert cli.main(["verify", str(installed)]) == 0  # its own manifest: no help here
    capsys.readouterr()
    assert cli.main(["verify", "--expect", approved, str(installed)]) == 1
    assert f"not the approved sha256:{approved}" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        cli.main(["verify", "--expect", "md5:abc", str(installed)])
    assert usage.value.code == 2


def independent_hmac(root: Path, seed: bytes) -> tuple[str, int]:
    """The field check as the inspector's own tool computes it, from the files alone (the
    format of protos/jackpot/v1/software.proto): nothing of jackpot.platform.manifest."""
    files: list[tuple[bytes, bytes]] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            path = Path(folder, name)
            files.append((path.relative_to(root).as_posix().encode(), path.read_bytes()))
    message = b"".join(
        name + b"\0" + str(len(data)).encode() + b"\0" + data for name, data in sorted(files)
    )
    return hmac.new(seed, message, hashlib.sha256).hexdigest(), len(files)


def test_R6_the_seeded_answer_is_the_hmac_of_every_installed_file(
    installed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """R6: the HMAC under the inspector's seed of every file, the manifest included, equals the
    one computed here; another seed gives another answer (a recorded one is no use), and so does
    one byte changed in one file, even with its manifest recorded again."""
    (installed / "__pycache__").mkdir()  # compiled caches are not the software
    (installed / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    expected, files = independent_hmac(installed, SEED)
    answer = attest(installed, SEED)
    assert (answer.hmac_sha256, answer.files) == (expected, files)
    manifest_lines = (installed / MANIFEST_NAME).read_text().splitlines()
    assert files == len(manifest_lines) + 1  # every file the manifest lists, and the manifest
    assert cli.main(["verify", "--seed", SEED.hex(), str(installed)]) == 0
    assert capsys.readouterr().out == f"hmac-sha256:{expected} over {files} files of {installed}\n"
    assert attest(installed, bytes(reversed(SEED))).hmac_sha256 != expected
    rerecorded_tampering(installed)
    assert attest(installed, SEED).hmac_sha256 not in (expected, answer.hmac_sha256)
    assert attest(installed, SEED).hmac_sha256 == independent_hmac(installed, SEED)[0]
    for short in (b"", b"x" * 15, b"x" * 65):
        with pytest.raises(ValueError, match="16 to 64 bytes"):
            attest(installed, short)
    with pytest.raises(SystemExit):
        cli.main(["verify", "--seed", "00" * 8, str(installed)])


def test_R6_an_installed_package_is_never_re_recorded(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a development tree gets its manifest recorded again before services start from it;
    a package under site-packages keeps the build's, so a tampered one stays refused."""
    from jackpot.platform import manifest

    site = tmp_path / "venv" / "lib" / "site-packages" / "jackpot"
    shutil.copytree(installed, site)
    (site / "cli.py").write_text("")
    monkeypatch.setattr(manifest, "package_root", lambda: site)
    assert manifest.record_for_working_tree() is False
    assert verify(site).changed == ["cli.py"]
    monkeypatch.setattr(manifest, "package_root", lambda: installed)
    (installed / "cli.py").write_text("")
    assert manifest.record_for_working_tree() is True
    assert verify(installed).ok
