"""The tests' container engine on this machine, for real (tests/containers.py; the choice of
engine is unit-tested in tests/unit/test_containers.py with fakes).

With nothing answering, podman's service is started on a private socket; closing the engine
removes the containers it made, even one a failed test left running, and stops the service.
Containers of a session whose process is gone are removed by the next session.
"""

from __future__ import annotations

import contextlib
import os
import subprocess

import docker
import pytest

from tests.conftest import unavailable
from tests.containers import (
    HOST_LABEL,
    PID_LABEL,
    SESSION_LABEL,
    Engine,
    MachineProbes,
    NoEngine,
    host,
    kafka_image,
    open_engine,
    run_to_end,
)

pytestmark = pytest.mark.integration


class NoSharedSocket(MachineProbes):
    """The machine as it is, but with no Docker or podman socket to find: the path that starts
    podman's service is taken wherever the test runs."""

    def exists(self, path: str) -> bool:
        return False


@pytest.fixture(scope="module")
def image(container_engine: Engine) -> str:
    """Any local image will do: the broker's (built here first if it is not)."""
    try:
        return kafka_image()
    except NoEngine as why:
        unavailable(str(why))


def test_a_started_service_removes_what_a_failed_test_left_and_stops(
    container_engine: Engine, image: str
) -> None:
    # Nothing set and no shared socket (as on this machine, and made so whatever the machine):
    # podman's own service is started.
    environ = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    engine = open_engine(environ, NoSharedSocket())
    try:
        assert engine.kind == "podman service"
        assert engine.service is not None
        assert engine.folder is not None
        assert environ["DOCKER_HOST"] == engine.url
        assert run_to_end(engine, image, "hello", entrypoint=["echo"]).stdout == "hello\n"
        left = engine.container(image, entrypoint=["sleep"]).with_command(["300"])
        left.start()  # and never stopped: the test "failed"
        name = left.get_wrapped_container().name
    except BaseException:
        engine.close()
        raise
    assert engine.close() == [name]
    assert not engine.service.alive()
    assert not engine.folder.exists()
    assert "DOCKER_HOST" not in environ
    client = container_engine.client()
    try:
        assert client.containers.list(all=True, filters={"name": name}) == []
    finally:
        client.close()


def test_containers_of_an_ended_session_are_removed_by_the_next(
    container_engine: Engine, image: str
) -> None:
    ended = subprocess.Popen(["true"])
    ended.wait()
    client = container_engine.client()
    try:
        orphan = client.containers.create(
            image,
            ["300"],
            entrypoint=["sleep"],
            network_mode="host",
            labels={SESSION_LABEL: "ended", PID_LABEL: str(ended.pid), HOST_LABEL: host()},
        )
        alive = client.containers.create(
            image,
            ["300"],
            entrypoint=["sleep"],
            network_mode="host",
            labels={SESSION_LABEL: "alive", PID_LABEL: str(os.getpid()), HOST_LABEL: host()},
        )
        try:
            removed = container_engine.remove_orphans()
            assert orphan.name in removed
            assert alive.name not in removed
            names = {c.name for c in client.containers.list(all=True)}
            assert orphan.name not in names
            assert alive.name in names
        finally:
            for container in (orphan, alive):
                with contextlib.suppress(docker.errors.NotFound):
                    container.remove(force=True)
    finally:
        client.close()
