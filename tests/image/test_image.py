"""Smoke test of the OCI image (``make image-test``): built by ``make image`` with podman.

The image runs as uid 10001 with a read-only root filesystem, ``jackpot --help`` works, the host's
CA bundle used by the build is not in it, and a short floor runs with every service (pot, payout,
display, two gateways) in its own container on the host network against the local broker: each
serves gRPC health SERVING, the floor's books balance (rule M2: nothing lost or duplicated), and
each stops on SIGTERM with exit status 0. The simulated tables run on the host.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from loadtest.floor import Floor

from jackpot.tools.demo import (
    METRICS,
    PORTS,
    REPO,
    Demo,
    report,
    sim_config,
    wait_progressive_open,
)

pytestmark = pytest.mark.image

IMAGE_SH = REPO / "deploy" / "image" / "image.sh"
UID = 10001
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
RUN_OPTIONS = (
    "--rm",
    "--read-only",
    "--network=host",
    "--ulimit=nofile=20000:20000",
    "--ulimit=nproc=32768:32768",
)


def image_tag() -> str:
    return subprocess.run(
        [IMAGE_SH, "tag"], capture_output=True, text=True, check=True
    ).stdout.strip()


def podman(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(IMAGE_SH), "podman", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def image() -> str:
    tag = image_tag()
    if podman("image", "exists", tag).returncode != 0:
        pytest.fail(f"image {tag} is not built: run `make image` (make image-test does)")
    return tag


def in_container(image: str, entrypoint: str, *args: str) -> subprocess.CompletedProcess[str]:
    return podman("run", *RUN_OPTIONS, f"--entrypoint={entrypoint}", image, *args)


def test_jackpot_help_works(image: str) -> None:
    helped = podman("run", *RUN_OPTIONS, image, "--help")
    assert helped.returncode == 0, helped.stderr
    for command in ("gateway", "pot", "payout", "display", "audit"):
        assert command in helped.stdout


def test_runs_as_10001_on_a_read_only_root(image: str) -> None:
    ids = in_container(image, "id")
    assert ids.returncode == 0, ids.stderr
    assert ids.stdout.startswith(f"uid={UID}(jackpot) gid={UID}(jackpot) "), ids.stdout
    wrote = in_container(image, "touch", "/opt/venv/written")
    assert wrote.returncode != 0
    assert "Read-only file system" in wrote.stderr


def test_the_build_left_the_hosts_ca_bundle_out(image: str) -> None:
    """The bundle was bind-mounted for pip only: the image's file is its base's, byte for byte."""
    base = subprocess.run(
        ["sed", "-n", "s/^base=//p", str(IMAGE_SH)], capture_output=True, text=True, check=True
    ).stdout.strip()
    ours = in_container(image, "sha256sum", CA_BUNDLE)
    theirs = in_container(base, "sha256sum", CA_BUNDLE)
    assert ours.returncode == theirs.returncode
    assert ours.stdout == theirs.stdout


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class ContainerDemo(Demo):
    """The demo's floor with each service in a container of the image (host network)."""

    def __init__(self, image: str, tables: int, state_dir: Path, run_id: str) -> None:
        # Free ports, not the demo's fixed ones: other floors may be running on this machine.
        super().__init__(
            tables,
            state_dir,
            run_id,
            ports={name: free_port() for name in PORTS},
            metrics_ports={name: free_port() for name in METRICS},
            http_port=free_port(),
        )
        self.image = image

    def issue_certificates(self) -> None:
        super().issue_certificates()
        # The services run as uid 10001: their keys, configuration and spools live here.
        for path in [self.state, *self.state.rglob("*")]:
            os.chown(path, UID, UID)

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        self._commands[name] = (args, env)
        log = open(self.state / f"{name}.log", "ab")  # noqa: SIM115 (the child owns it)
        settings = [f"--env={key}={value}" for key, value in self.service_env(env).items()]
        self.processes[name] = subprocess.Popen(
            [
                str(IMAGE_SH),
                "podman",
                "run",
                *RUN_OPTIONS,
                f"--name=jackpot-{self.run_id}-{name}",
                f"--volume={self.state}:{self.state}",
                *settings,
                self.image,
                *args,
            ],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )


def stop_each(demo: Demo, within_seconds: float = 60) -> dict[str, int | None]:
    """SIGTERM every service's container (podman passes it on); the exit status of each."""
    for process in demo.processes.values():
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + within_seconds
    codes: dict[str, int | None] = {}
    for name, process in demo.processes.items():
        try:
            codes[name] = process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            codes[name] = None
            process.kill()
    return codes


async def test_a_short_floor_runs_with_every_service_in_a_container(
    image: str, kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    run_id = uuid.uuid4().hex[:8]
    demo = ContainerDemo(image, 5, REPO / ".run" / "image-test" / run_id, run_id)
    await demo.create_topics()
    demo.start_services()
    try:
        await demo.wait_healthy(within_seconds=120)
        await demo.create_groups()
        await wait_progressive_open(demo, within_seconds=60)
        floor = Floor(sim_config(demo, rig_rate=0.2, rounds_per_minute=60))
        stats = await floor.run(8)
        books = await report(demo, stats)
    finally:
        codes = stop_each(demo)
    assert stats.rounds > 0
    assert books["audit_ok"], books["audit_problems"]
    assert (books["lost"], books["duplicated"]) == (0, 0)
    assert codes == dict.fromkeys(demo.processes, 0), f"exit statuses; logs in {demo.state}"
