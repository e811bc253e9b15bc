"""Which container engine the tests take (tests/containers.py), with fakes for the machine.

The order: DOCKER_HOST, Docker's socket, a podman socket, podman's service started on a private
socket, nothing. A socket that is there but does not answer is passed over, and said so.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.containers import (
    DOCKER_SOCKET,
    PODMAN_ROOT_SOCKET,
    NoEngine,
    choose_engine,
    open_engine,
)


@dataclass
class FakeService:
    ready_after: int  # answers after this many pings; -1: never
    dies: bool = False
    stopped: bool = False

    def alive(self) -> bool:
        return not (self.dies or self.stopped)

    def stop(self) -> None:
        self.stopped = True


@dataclass
class FakeMachine:
    """Sockets that are there, URLs that answer, podman on the PATH or not."""

    sockets: set[str] = field(default_factory=set)
    answering: set[str] = field(default_factory=set)
    podman_path: str | None = None
    service: FakeService | None = None
    started: list[str] = field(default_factory=list)
    pings: int = 0

    def answers(self, url: str) -> bool:
        if self.started and url == self.started[-1] and self.service is not None:
            self.pings += 1
            return self.service.ready_after >= 0 and self.pings > self.service.ready_after
        return url in self.answering

    def exists(self, path: str) -> bool:
        return path in self.sockets

    def podman(self) -> str | None:
        return self.podman_path

    def start_service(self, podman: str, url: str, folder: Path) -> FakeService:
        assert folder.is_dir()
        assert url == f"unix://{folder}/podman.sock"
        self.started.append(url)
        assert self.service is not None
        return self.service


PODMAN = "/usr/bin/podman"


def test_a_docker_engine_that_answers_is_taken_before_podman() -> None:
    machine = FakeMachine(
        sockets={DOCKER_SOCKET, PODMAN_ROOT_SOCKET},
        answering={f"unix://{DOCKER_SOCKET}", f"unix://{PODMAN_ROOT_SOCKET}"},
        podman_path=PODMAN,
    )
    choice = choose_engine({}, machine)
    assert (choice.kind, choice.url) == ("docker", f"unix://{DOCKER_SOCKET}")


def test_docker_host_comes_first_and_is_passed_over_when_it_does_not_answer() -> None:
    machine = FakeMachine(
        sockets={DOCKER_SOCKET}, answering={"tcp://127.0.0.1:2375", f"unix://{DOCKER_SOCKET}"}
    )
    choice = choose_engine({"DOCKER_HOST": "tcp://127.0.0.1:2375"}, machine)
    assert (choice.kind, choice.url) == ("DOCKER_HOST", "tcp://127.0.0.1:2375")
    choice = choose_engine({"DOCKER_HOST": "unix:///gone.sock"}, machine)
    assert choice.kind == "docker"
    assert "DOCKER_HOST=unix:///gone.sock does not answer" in choice.tried


def test_a_podman_socket_that_answers_is_taken_when_docker_does_not_answer() -> None:
    machine = FakeMachine(
        sockets={DOCKER_SOCKET, PODMAN_ROOT_SOCKET},
        answering={f"unix://{PODMAN_ROOT_SOCKET}"},
        podman_path=PODMAN,
    )
    choice = choose_engine({}, machine)
    assert (choice.kind, choice.url) == ("podman", f"unix://{PODMAN_ROOT_SOCKET}")
    assert f"{DOCKER_SOCKET} does not answer" in choice.tried
    assert machine.started == []


def test_a_rootless_podman_socket_is_found_in_the_runtime_dir() -> None:
    rootless = "/run/user/1000/podman/podman.sock"
    machine = FakeMachine(sockets={rootless}, answering={f"unix://{rootless}"})
    choice = choose_engine({"XDG_RUNTIME_DIR": "/run/user/1000"}, machine)
    assert (choice.kind, choice.url) == ("podman", f"unix://{rootless}")


def test_a_socket_that_is_there_but_dead_is_not_taken_and_podman_is_started() -> None:
    machine = FakeMachine(sockets={PODMAN_ROOT_SOCKET}, podman_path=PODMAN)
    choice = choose_engine({}, machine)
    assert (choice.kind, choice.url, choice.podman) == ("podman service", None, PODMAN)
    assert choice.tried == (f"no {DOCKER_SOCKET}", f"{PODMAN_ROOT_SOCKET} does not answer")


def test_nothing_to_take_names_everything_tried() -> None:
    machine = FakeMachine()
    with pytest.raises(NoEngine) as raised:
        open_engine({"DOCKER_HOST": "unix:///x.sock"}, machine)
    said = str(raised.value)
    for part in ("DOCKER_HOST=unix:///x.sock", DOCKER_SOCKET, PODMAN_ROOT_SOCKET, "no podman"):
        assert part in said


def test_an_engine_that_answers_is_used_as_it_is_and_testcontainers_pointed_at_it() -> None:
    machine = FakeMachine(sockets={DOCKER_SOCKET}, answering={f"unix://{DOCKER_SOCKET}"})
    environ: dict[str, str] = {"DOCKER_HOST": "unix:///elsewhere.sock"}
    machine.answering.add("unix:///elsewhere.sock")
    engine = open_engine(environ, machine)
    assert (engine.kind, engine.url, engine.service) == (
        "DOCKER_HOST",
        "unix:///elsewhere.sock",
        None,
    )
    assert environ["TESTCONTAINERS_RYUK_DISABLED"] == "true"
    from testcontainers.core.config import testcontainers_config

    assert testcontainers_config.ryuk_disabled


def test_podman_started_on_a_private_socket_is_used_once_it_answers_and_stopped_at_close() -> None:
    machine = FakeMachine(podman_path=PODMAN, service=FakeService(ready_after=3))
    environ: dict[str, str] = {"TESTCONTAINERS_RYUK_DISABLED": "false"}
    engine = open_engine(environ, machine)
    assert engine.kind == "podman service"
    assert engine.url == machine.started[0]
    assert machine.pings == 4
    assert environ == {"DOCKER_HOST": engine.url, "TESTCONTAINERS_RYUK_DISABLED": "true"}
    service = machine.service
    assert service is not None
    removals: list[bool] = []  # whether the service still ran when the containers were removed

    def remove() -> list[str]:
        removals.append(service.alive())
        return []

    engine._remove_ours = remove  # type: ignore[method-assign]
    assert engine.folder is not None
    assert engine.folder.is_dir()
    engine.close()
    assert machine.service is not None
    assert machine.service.stopped
    assert removals == [True]  # before the service stopped: it serves the removal
    assert not engine.folder.exists()
    assert environ == {"TESTCONTAINERS_RYUK_DISABLED": "false"}  # as it was


def test_the_service_is_stopped_even_when_removing_the_containers_fails() -> None:
    machine = FakeMachine(podman_path=PODMAN, service=FakeService(ready_after=0))
    environ: dict[str, str] = {}
    engine = open_engine(environ, machine)

    def broken() -> list[str]:
        raise ConnectionError("engine gone")

    engine._remove_ours = broken  # type: ignore[method-assign]
    with pytest.raises(ConnectionError):
        engine.close()
    assert machine.service is not None
    assert machine.service.stopped
    assert environ == {}


@pytest.mark.parametrize("service", [FakeService(ready_after=-1, dies=True), FakeService(-1)])
def test_a_started_service_that_never_answers_is_stopped_and_said(service: FakeService) -> None:
    machine = FakeMachine(podman_path=PODMAN, service=service)
    environ: dict[str, str] = {}
    with pytest.raises(NoEngine, match="did not answer"):
        open_engine(environ, machine, start_within=0.2)
    assert service.stopped
    assert environ == {}  # testcontainers is not pointed at it
    assert not Path(machine.started[0].removeprefix("unix://")).parent.exists()


def test_the_folder_of_a_service_whose_test_process_is_gone_is_removed_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ended = subprocess.Popen(["true"])
    ended.wait()
    for name, pid in (("jackpot-podman-ended", ended.pid), ("jackpot-podman-alive", os.getpid())):
        (tmp_path / name).mkdir()
        (tmp_path / name / "owner").write_text(f"{pid}\n")
    machine = FakeMachine(podman_path=PODMAN, service=FakeService(ready_after=0))
    engine = open_engine({}, machine)
    assert engine.folder is not None
    assert (engine.folder / "owner").read_text() == f"{os.getpid()}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["jackpot-podman-alive", engine.folder.name]
    )
