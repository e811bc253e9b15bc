"""Containers for the tests through testcontainers, on whichever Docker-compatible engine answers.

No Docker engine runs on this project's machines; Debian's podman (``make image-tools``) serves
the same API (``podman system service``). :func:`open_engine` takes, in this order:

1. ``DOCKER_HOST``, if set and it answers;
2. Docker's socket ``/var/run/docker.sock``, if there and it answers;
3. a podman socket that is there and answers (rootful ``/run/podman/podman.sock``, rootless
   ``$XDG_RUNTIME_DIR/podman/podman.sock``);
4. podman on the PATH: ``podman system service`` started on a private socket in a new temporary
   folder, stopped when the engine closes (and with the test process, should that die first;
   the folder of a process that is gone is removed by the next start);
5. nothing: :class:`NoEngine`, naming what was tried.

An open engine has set ``DOCKER_HOST`` for testcontainers and disabled its reaper (Ryuk: its
image would be pulled from a registry, and none is reachable here), so it cleans up itself: every
container made by :meth:`Engine.container` carries the session's labels, :meth:`Engine.close`
removes them all, running or exited, whatever the tests did, and
:meth:`Engine.remove_orphans` removes those of an earlier session whose process is gone (killed
before its teardown). Containers run on the host network (podman then adds no firewall rules)
with explicit ulimits (podman's defaults exceed this machine's hard limits).

Images come from this machine, never from a registry: ``make image`` builds the services' image
(``deploy/image/image.sh``); :func:`kafka_image` builds the broker's image from the Kafka jars the
project installs for its local broker (``deploy/image/kafka-image.sh``), and :func:`start_kafka`
starts it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from loadtest.free_ports import free_port_pair

from jackpot.tools.demo_supervisor import process_alive

if TYPE_CHECKING:
    import docker
    from testcontainers.core.container import DockerContainer

REPO = Path(__file__).resolve().parent.parent
KAFKA_IMAGE_SH = REPO / "deploy" / "image" / "kafka-image.sh"
DOCKER_SOCKET = "/var/run/docker.sock"
PODMAN_ROOT_SOCKET = "/run/podman/podman.sock"
ULIMITS = {"nofile": 20_000, "nproc": 32_768}  # as deploy/image/image.sh runs podman
SESSION_LABEL = "io.github.jackpot.tests.session"
PID_LABEL = "io.github.jackpot.tests.pid"
HOST_LABEL = "io.github.jackpot.tests.host"
FOLDER_PREFIX = "jackpot-podman-"  # a started service's socket, log and owner pid


class NoEngine(RuntimeError):
    """No Docker-compatible engine answers and none can be started (the message says why)."""


class Service(Protocol):
    """An engine this module started (``podman system service``)."""

    def alive(self) -> bool: ...

    def stop(self) -> None: ...


class Probes(Protocol):
    """What engine detection asks of the machine (real: :class:`MachineProbes`; the unit tests
    pass fakes)."""

    def answers(self, url: str) -> bool:
        """Whether a Docker API at ``url`` (``unix://...``, ``tcp://...``) answers a ping."""
        ...

    def exists(self, path: str) -> bool: ...

    def podman(self) -> str | None:
        """The podman program, or None."""
        ...

    def start_service(self, podman: str, url: str, folder: Path) -> Service:
        """Start ``podman system service`` on ``url`` (a socket in ``folder``)."""
        ...


def podman_sockets(environ: Mapping[str, str]) -> list[str]:
    sockets = [PODMAN_ROOT_SOCKET]
    runtime_dir = environ.get("XDG_RUNTIME_DIR")
    if runtime_dir:
        sockets.append(f"{runtime_dir}/podman/podman.sock")
    return sockets


@dataclass(frozen=True)
class Choice:
    """Which engine to use: ``url`` answers already, or (``url`` None) ``podman`` is to be started
    as a service. ``kind`` names the path taken; ``tried`` what was passed over, and why."""

    kind: str
    url: str | None = None
    podman: str | None = None
    tried: tuple[str, ...] = ()


def choose_engine(environ: Mapping[str, str], probes: Probes) -> Choice:
    """The first engine of the order in the module docstring; kind ``none`` if there is none."""
    tried: list[str] = []
    docker_host = environ.get("DOCKER_HOST")
    if docker_host:
        if probes.answers(docker_host):
            return Choice("DOCKER_HOST", docker_host, tried=tuple(tried))
        tried.append(f"DOCKER_HOST={docker_host} does not answer")
    candidates = [("docker", DOCKER_SOCKET)]
    candidates += [("podman", path) for path in podman_sockets(environ)]
    for kind, path in candidates:
        if not probes.exists(path):
            tried.append(f"no {path}")
            continue
        url = f"unix://{path}"
        if probes.answers(url):
            return Choice(kind, url, tried=tuple(tried))
        tried.append(f"{path} does not answer")
    podman = probes.podman()
    if podman:
        return Choice("podman service", podman=podman, tried=tuple(tried))
    tried.append("no podman on the PATH (make image-tools installs it)")
    return Choice("none", tried=tuple(tried))


def open_engine(
    environ: MutableMapping[str, str] | None = None,
    probes: Probes | None = None,
    start_within: float = 30.0,
) -> Engine:
    """The engine :func:`choose_engine` picks, started if it is podman's service, and made the
    one testcontainers uses (``DOCKER_HOST`` in ``environ``, default ``os.environ``; the reaper
    off). Raises :class:`NoEngine`."""
    environ = os.environ if environ is None else environ
    probes = MachineProbes() if probes is None else probes
    choice = choose_engine(environ, probes)
    if choice.kind == "none":
        raise NoEngine("; ".join(choice.tried))
    if choice.url is not None:
        return Engine(choice.kind, choice.url, environ).activate()
    assert choice.podman is not None
    remove_ended_folders()
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
    (folder / "owner").write_text(f"{os.getpid()}\n")
    url = f"unix://{folder}/podman.sock"
    service = probes.start_service(choice.podman, url, folder)
    deadline = time.monotonic() + start_within
    while not probes.answers(url):
        if not service.alive() or time.monotonic() > deadline:
            service.stop()
            log = folder / "service.log"
            said = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            shutil.rmtree(folder, ignore_errors=True)
            raise NoEngine(f"podman system service on {url} did not answer: {said.strip()}")
        time.sleep(0.05)
    return Engine(choice.kind, url, environ, service, folder).activate()


@dataclass
class Engine:
    """A Docker-compatible API that testcontainers uses for this session (module docstring)."""

    kind: str
    url: str
    environ: MutableMapping[str, str] = field(default_factory=lambda: os.environ)
    service: Service | None = None  # what open_engine started, stopped by close
    folder: Path | None = None  # the started service's socket and log
    session: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    _saved: dict[str, str | None] = field(default_factory=dict)

    def activate(self) -> Engine:
        settings = {"DOCKER_HOST": self.url, "TESTCONTAINERS_RYUK_DISABLED": "true"}
        for key, value in settings.items():
            self._saved.setdefault(key, self.environ.get(key))
            self.environ[key] = value
        from testcontainers.core.config import testcontainers_config

        testcontainers_config.ryuk_disabled = True  # read once; the variable may come too late
        return self

    def labels(self) -> dict[str, str]:
        return {SESSION_LABEL: self.session, PID_LABEL: str(os.getpid()), HOST_LABEL: host()}

    def client(self) -> docker.DockerClient:
        import docker

        return docker.DockerClient(base_url=self.url, timeout=120)

    def require_image(self, tag: str, how: str = "make image") -> None:
        """Fail naming ``how`` to build ``tag`` if this machine has no such image (testcontainers
        would try to pull it)."""
        import docker

        client = self.client()
        try:
            client.images.get(tag)
        except docker.errors.ImageNotFound:
            raise NoEngine(f"image {tag} is not built here: {how}") from None
        finally:
            client.close()

    def container(self, image: str, **options: Any) -> DockerContainer:
        """A testcontainers container of the local ``image``: host network, the ulimits, this
        session's labels; ``options`` are docker-py's ``containers.create`` keywords."""
        from docker.types import Ulimit
        from testcontainers.core.container import DockerContainer

        kwargs: dict[str, Any] = {
            "network_mode": "host",
            "ulimits": [Ulimit(name=n, soft=v, hard=v) for n, v in ULIMITS.items()],
            **options,
            "labels": {**options.get("labels", {}), **self.labels()},
        }
        client_options = {"environment": {"DOCKER_HOST": self.url}}
        return DockerContainer(image, docker_client_kw=client_options, **kwargs)

    def ours(self, client: docker.DockerClient) -> list[Any]:
        return list(
            client.containers.list(all=True, filters={"label": f"{SESSION_LABEL}={self.session}"})
        )

    def remove_orphans(self) -> list[str]:
        """Remove containers of this module's earlier sessions on this host whose test process
        is gone; their names."""
        client = self.client()
        try:
            ended = [
                container
                for container in client.containers.list(all=True, filters={"label": PID_LABEL})
                if container.labels.get(HOST_LABEL) == host()
                and not process_alive(int(container.labels[PID_LABEL]))
            ]
            return remove_containers(ended)
        finally:
            client.close()

    def _remove_ours(self) -> list[str]:
        client = self.client()
        try:
            return remove_containers(self.ours(client))
        finally:
            client.close()

    def close(self) -> list[str]:
        """Remove every container of this session, stop the service if this module started
        it, restore the environment; the names of the containers removed here."""
        removed: list[str] = []
        try:
            removed = self._remove_ours()
        finally:
            if self.service is not None:
                self.service.stop()
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)
            for key, value in self._saved.items():
                if value is None:
                    self.environ.pop(key, None)
                else:
                    self.environ[key] = value
        return removed


def remove_ended_folders() -> None:
    """The folders of services started by test processes that are gone (a killed session's
    service ends with it, its folder stays)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*"):
        with contextlib.suppress(OSError, ValueError):
            if not process_alive(int((folder / "owner").read_text())):
                shutil.rmtree(folder, ignore_errors=True)


def remove_containers(containers: Iterable[Any]) -> list[str]:
    """Remove each container (one already gone is no error); the names of those removed."""
    names = []
    for container in containers:
        with contextlib.suppress(Exception):
            container.remove(force=True)
            names.append(container.name)
    return names


def host() -> str:
    return socket.gethostname()


def _die_with_parent() -> None:  # pragma: no cover (runs in the child)
    """The started service gets SIGTERM when the test process ends, even by SIGKILL."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class PodmanService:
    """``podman system service --time=0`` on a private socket, logging to ``folder``."""

    def __init__(self, podman: str, url: str, folder: Path) -> None:
        # runc, as deploy/image/image.sh: crun refuses this machine's hybrid cgroup layout
        runtime = ["--runtime", "runc"] if shutil.which("runc") else []
        with open(folder / "service.log", "ab") as log:
            self.process = subprocess.Popen(
                [podman, *runtime, "system", "service", "--time=0", url],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # a Ctrl-C of the tests reaches it only through close()
                preexec_fn=_die_with_parent,
            )

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class MachineProbes:
    """The real probes: a ping with docker-py, the file system, the PATH."""

    def answers(self, url: str) -> bool:
        try:
            import docker

            client = docker.DockerClient(base_url=url, timeout=3)
            try:
                return bool(client.ping())
            finally:
                client.close()
        except Exception:
            return False

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def podman(self) -> str | None:
        return shutil.which("podman")

    def start_service(self, podman: str, url: str, folder: Path) -> Service:
        return PodmanService(podman, url, folder)


# ------------------------------------------------------------------ containers as processes


class ContainerProcess:
    """A started container seen as a process (``poll``, ``wait``, ``send_signal``,
    ``terminate``, ``kill``, ``returncode``), for code written for ``subprocess.Popen`` (the
    demo's services); ``remove`` writes its output to ``log`` and removes it."""

    def __init__(self, container: DockerContainer, log: Path | None = None) -> None:
        self.container = container
        self.log = log
        self.returncode: int | None = None
        self.args = container.image

    @property
    def pid(self) -> int:
        wrapped = self.container.get_wrapped_container()
        wrapped.reload()
        return int(wrapped.attrs["State"]["Pid"])

    def poll(self) -> int | None:
        if self.returncode is None:
            wrapped = self.container.get_wrapped_container()
            wrapped.reload()
            if wrapped.status in ("exited", "dead", "stopped"):
                self.returncode = int(wrapped.attrs["State"]["ExitCode"])
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.1)
        return code

    def send_signal(self, sig: int) -> None:
        import docker

        if self.poll() is None:
            with contextlib.suppress(docker.errors.APIError):  # it ended meanwhile
                self.container.get_wrapped_container().kill(signal=signal.Signals(sig).name)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def remove(self) -> None:
        with contextlib.suppress(Exception):
            if self.log is not None:
                output = self.container.get_wrapped_container().logs(stdout=True, stderr=True)
                with open(self.log, "ab") as log:
                    log.write(output)
        with contextlib.suppress(Exception):
            self.container.stop()  # removes it, running or not


@dataclass(frozen=True)
class Ran:
    """A command run to its end in a container."""

    returncode: int
    stdout: str
    stderr: str


def run_to_end(
    engine: Engine, image: str, *command: str, timeout: float = 120, **options: Any
) -> Ran:
    """Run ``command`` in a new container of ``image`` (``options`` as :meth:`Engine.container`,
    e.g. ``entrypoint``, ``read_only``) until it exits; the container is removed."""
    container = engine.container(image, **options).with_command(list(command))
    container.start()
    try:
        code = ContainerProcess(container).wait(timeout)
        out, err = container.get_logs()
        return Ran(code, out.decode(errors="replace"), err.decode(errors="replace"))
    finally:
        container.stop()


# -------------------------------------------------------------------------------- Kafka


def kafka_image() -> str:
    """The tag of the broker's image, built first unless built (seconds when it is)."""
    built = subprocess.run(
        [str(KAFKA_IMAGE_SH), "build"], capture_output=True, text=True, timeout=600
    )
    if built.returncode != 0:
        raise NoEngine(f"the Kafka image did not build: {built.stderr.strip()[-2000:]}")
    return built.stdout.strip().splitlines()[-1]


@dataclass
class KafkaBroker:
    """One Kafka node in a container of the locally built image (host network)."""

    container: DockerContainer
    bootstrap: str
    started_in: float  # seconds from create to "Kafka Server started"

    def stop(self) -> None:
        self.container.stop()


def start_kafka(engine: Engine, within: float = 90, attempts: int = 3) -> KafkaBroker:
    """A broker of :func:`kafka_image` on free ports, ready when it has logged that it started
    (a port taken meanwhile by someone else: new ports, up to ``attempts`` times)."""
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    image = kafka_image()
    for attempt in range(1, attempts + 1):
        port = free_port_pair()
        container = (
            engine.container(image)
            .with_name(f"jackpot-kafka-{engine.session}-{port}")
            .with_env("KAFKA_PORT", str(port))
            .waiting_for(
                LogMessageWaitStrategy("Kafka Server started")
                .with_startup_timeout(within)
                .with_poll_interval(0.2)
            )
        )
        began = time.monotonic()
        try:
            container.start()
        except Exception:
            said = ""
            with contextlib.suppress(Exception):
                said = b"".join(container.get_logs()).decode(errors="replace")
            container.stop()
            if "Address already in use" in said and attempt < attempts:
                continue
            raise
        return KafkaBroker(container, f"127.0.0.1:{port}", time.monotonic() - began)
    raise AssertionError("unreachable")
