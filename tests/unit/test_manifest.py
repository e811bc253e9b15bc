"""R6: the software authenticates itself. A copy of the installed package with its manifest
verifies; a changed, a missing and an added file are each named, and a service started from a
tampered copy refuses to start (one line, non-zero exit, nothing served)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from jackpot import cli
from jackpot.platform.manifest import (
    MANIFEST_NAME,
    package_root,
    verify,
    write_manifest,
)
from jackpot.platform.runtime import SOFTWARE_NOT_VERIFIED_EXIT


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


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
    env = {
        **os.environ,
        "PYTHONPATH": str(installed.parent),
        "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",
        # main() opens /metrics before the runtime checks the software: a port of its own, so a
        # service of someone else's on 9102 does not decide this test
        "JACKPOT_METRICS_PORT": str(free_port()),
    }
    done = subprocess.run(
        [sys.executable, "-m", "jackpot.cli", "pot"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=installed.parent,
    )
    assert done.returncode == SOFTWARE_NOT_VERIFIED_EXIT, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("jackpot pot: software not verified:"), lines
    assert "changed pot/service.py" in lines[0]
    assert str(installed) in lines[0]  # it checked the copy it runs from
    assert "service_started" not in done.stdout + done.stderr


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
