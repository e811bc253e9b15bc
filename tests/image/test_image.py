"""Smoke test of the OCI image (``make image-test``): built by ``make image`` with podman.

The image runs as uid 10001 with a read-only root filesystem, ``jackpot --help`` works, the host's
CA bundle used by the build is not in it, and a short floor runs with every service (pot, payout,
display, two gateways) in its own container on the host network against the local broker: each
serves gRPC health SERVING, the floor's books balance (rule M2: nothing lost or duplicated), and
each stops on SIGTERM with exit status 0. The simulated tables run on the host.

Every container is started through testcontainers (``DockerContainer`` of the locally built
image) on podman's Docker-compatible socket, the ``container_engine`` of tests/conftest.py
(tests/containers.py): removed when its test ends, and every container of the session at its end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from loadtest.free_ports import free_port

from jackpot.sim.floor import Floor
from jackpot.tools.demo_floor import (
    METRICS,
    PORTS,
    REPO,
    Demo,
    sim_config,
    wait_progressive_open,
)
from jackpot.tools.demo_report import report
from tests.containers import ContainerProcess, Engine, NoEngine, Ran, run_to_end

pytestmark = pytest.mark.image

IMAGE_SH = REPO / "deploy" / "image" / "image.sh"
UID = 10001
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def image_sh(command: str) -> str:
    return subprocess.run(
        [IMAGE_SH, command], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def image(container_engine: Engine) -> str:
    tag = image_sh("tag")
    try:
        container_engine.require_image(tag, "run `make image` (make image-test does)")
    except NoEngine as why:
        pytest.fail(str(why))
    return tag


def in_container(engine: Engine, image: str, *command: str, entrypoint: str = "") -> Ran:
    """``command`` run to its end in a container of ``image`` with a read-only root."""
    options = {"entrypoint": [entrypoint]} if entrypoint else {}
    return run_to_end(engine, image, *command, read_only=True, **options)


def test_jackpot_help_works(container_engine: Engine, image: str) -> None:
    helped = in_container(container_engine, image, "--help")
    assert helped.returncode == 0, helped.stderr
    for command in ("gateway", "pot", "payout", "display", "audit"):
        assert command in helped.stdout


def test_runs_as_10001_on_a_read_only_root(container_engine: Engine, image: str) -> None:
    ids = in_container(container_engine, image, entrypoint="id")
    assert ids.returncode == 0, ids.stderr
    assert ids.stdout.startswith(f"uid={UID}(jackpot) gid={UID}(jackpot) "), ids.stdout
    wrote = in_container(container_engine, image, "/opt/venv/written", entrypoint="touch")
    assert wrote.returncode != 0
    assert "Read-only file system" in wrote.stderr


def test_the_build_left_the_hosts_ca_bundle_out(container_engine: Engine, image: str) -> None:
    """The bundle was bind-mounted for pip only: the image's file is its base's, byte for byte."""
    ours = in_container(container_engine, image, CA_BUNDLE, entrypoint="sha256sum")
    theirs = in_container(container_engine, image_sh("base-tag"), CA_BUNDLE, entrypoint="sha256sum")
    assert ours.returncode == theirs.returncode
    assert ours.stdout == theirs.stdout


class ContainerDemo(Demo):
    """The demo's floor with each service in a container of the image (host network), started
    through testcontainers; ``processes`` holds each as a :class:`ContainerProcess`."""

    def __init__(
        self, engine: Engine, image: str, tables: int, state_dir: Path, run_id: str
    ) -> None:
        # Free ports, not the demo's fixed ones: other floors may be running on this machine.
        super().__init__(
            tables,
            state_dir,
            run_id,
            ports={name: free_port() for name in PORTS},
            metrics_ports={name: free_port() for name in METRICS},
            http_port=free_port(),
        )
        self.engine = engine
        self.image = image

    def issue_certificates(self) -> None:
        super().issue_certificates()
        # The services run as uid 10001: their keys, configuration and spools live here.
        for path in [self.state, *self.state.rglob("*")]:
            os.chown(path, UID, UID)

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        self._commands[name] = (args, env)
        earlier = self.processes.pop(name, None)
        if isinstance(earlier, ContainerProcess):
            earlier.remove()  # a restart: the name is taken until the old one goes
        container = (
            self.engine.container(self.image, read_only=True)
            .with_name(f"jackpot-{self.run_id}-{name}")
            .with_volume_mapping(self.state, str(self.state), "rw")
            .with_envs(**self.service_env(env))
            .with_command(args)
        )
        container.start()
        self.processes[name] = ContainerProcess(container, self.state / f"{name}.log")  # type: ignore[assignment]

    def remove_containers(self) -> None:
        """Each container's output to its log in the state folder, then the container goes."""
        for process in self.processes.values():
            if isinstance(process, ContainerProcess):
                process.remove()


def stop_each(demo: Demo, within_seconds: float = 60) -> dict[str, int | None]:
    """SIGTERM every service's container (its process 1, the service); the exit status of each."""
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
    container_engine: Engine, image: str, kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    run_id = uuid.uuid4().hex[:8]
    state = REPO / ".run" / "image-test" / run_id
    demo = ContainerDemo(container_engine, image, 5, state, run_id)
    await demo.create_topics()
    try:
        demo.start_services()
        await demo.wait_healthy(within_seconds=120)
        await demo.create_groups()
        await wait_progressive_open(demo, within_seconds=60)
        floor = Floor(sim_config(demo, rig_rate=0.2, rounds_per_minute=60))
        stats = await floor.run(8)
        books = await report(demo, stats)
    finally:
        codes = stop_each(demo)
        demo.remove_containers()
    assert stats.rounds > 0
    assert books["audit_ok"], books["audit_problems"]
    assert (books["lost"], books["duplicated"]) == (0, 0)
    assert codes == dict.fromkeys(demo.processes, 0), f"exit statuses; logs in {demo.state}"
