"""A casino site in its own network namespace, with a WAN link to the central cluster to cut.

Fault 7 of the fault suite needs a table gateway that its devices still reach while the gateway
cannot reach Kafka. ``SiteNetwork`` builds that on this machine with ``ip netns`` and veth pairs
(root only), in the private ranges 10.231-10.233.<n>.0, ``n`` chosen per run::

    host (central, devices)                        netns jpsite-<run> (the site)
    central address C = 10.233.n.1/32 on jpc<run>a (a veth pair with both ends on the host,
                                                    standing in for a dummy interface)
    LAN  jpl<run>h 10.231.n.1/30  <── veth ──>  jpl<run>s 10.231.n.2/30  gateway gRPC, metrics
    WAN  jpw<run>h 10.232.n.1/30  <── veth ──>  jpw<run>s 10.232.n.2/30  route to C via the WAN

The central broker listens on C, which host processes reach locally and the site only through the
WAN veth (the site has no other route to it). ``cut()`` takes the host end of the WAN veth down:
the site end loses its carrier, so nothing passes between the gateway and the broker, while the
LAN, which the simulated devices use, is untouched; ``restore()`` brings it back up (the site's
route to C survives, since its own interface never went down). ``reachable_from_site`` and
``reachable_from_host`` let the caller verify both claims with real TCP connections.

Every run writes a record under ``/run/jackpot-chaos/netns/`` before it creates anything;
``clean_stale`` removes what a killed run left behind (its namespace, the processes still in it,
its host links, the services and the broker it started) once that run's process is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jackpot.tools.demo_supervisor import process_alive

NAMESPACE_PREFIX = "jpsite-"
RECORDS = Path("/run/jackpot-chaos/netns")  # machine-wide, like the namespaces; gone at reboot too


class NetnsUnavailable(Exception):
    """This machine cannot build the site's network (not root, no iproute2, no netns or veth)."""


def ip(*args: str, namespace: str | None = None, check: bool = True) -> str:
    command = ["ip", *args] if namespace is None else ["ip", "-n", namespace, *args]
    done = subprocess.run(command, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def unavailable_reason() -> str | None:
    """Why network namespaces cannot be used here, or None when they can."""
    if shutil.which("ip") is None:
        return "iproute2 (the ip command) is not installed"
    if os.geteuid() != 0:
        return "not root: ip netns and veth pairs need CAP_SYS_ADMIN and CAP_NET_ADMIN"
    probe = f"{NAMESPACE_PREFIX}probe-{os.getpid()}"
    added = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if added.returncode != 0:
        return f"ip netns add failed: {added.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None

    return True


def _kill_namespace_processes(namespace: str) -> None:
    """SIGKILL what still runs in the namespace (the run's own gateway, by its pid)."""
    listed = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    for pid in listed.stdout.split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def _kill_services(pids: list[int]) -> None:
    """SIGKILL a dead run's services on the host, each checked to still be one of ours."""
    for pid in pids:
        with contextlib.suppress(OSError):
            if b"jackpot.cli" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)


def _remove(namespace: str, host_links: list[str]) -> None:
    if namespace in ip("netns", "list", check=False).split():
        _kill_namespace_processes(namespace)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
    for link in host_links:  # the namespace's veth peers go with it; these are the host's own
        subprocess.run(["ip", "link", "del", link], capture_output=True)


def clean_stale(stop_broker: Callable[[dict[str, Any]], None]) -> list[str]:
    """Remove namespaces, links and brokers of runs whose process is gone; their names."""
    cleaned = []
    live = set()
    for path in sorted(RECORDS.glob("*.json")) if RECORDS.is_dir() else []:
        with contextlib.suppress(ValueError, OSError):
            record = json.loads(path.read_text())
            if process_alive(int(record["owner_pid"])):
                live.add(record["namespace"])
                continue
            _kill_services(record.get("service_pids", []))
            if record.get("broker"):
                stop_broker(record["broker"])
            _remove(record["namespace"], record["host_links"])
            path.unlink()
            cleaned.append(record["namespace"])
    # A namespace with no record cannot belong to a live run: the record is written first.
    for name in ip("netns", "list", check=False).split():
        if name.startswith(NAMESPACE_PREFIX) and name not in live and name not in cleaned:
            _remove(name, [])
            cleaned.append(name)
    return cleaned


def _addresses_in_use() -> str:
    return ip("-o", "addr", "show", check=False)


@dataclass
class SiteNetwork:
    run_id: str
    slot: int = 0  # n of the 10.23x.n.0 ranges; chosen by create()

    @property
    def namespace(self) -> str:
        return f"{NAMESPACE_PREFIX}{self.run_id}"

    def _link(self, kind: str, end: str) -> str:
        return f"jp{kind}{self.run_id[:8]}{end}"  # at most 15 characters, the kernel's limit

    @property
    def host_links(self) -> list[str]:
        return [self._link("c", "a"), self._link("l", "h"), self._link("w", "h")]

    @property
    def central(self) -> str:
        """The central cluster's address (the broker listens here)."""
        return f"10.233.{self.slot}.1"

    @property
    def site_lan(self) -> str:
        """The site gateway's address on the site LAN (devices connect here)."""
        return f"10.231.{self.slot}.2"

    @property
    def record_path(self) -> Path:
        return RECORDS / f"{self.namespace}.json"

    def record(self, **extra: Any) -> None:
        RECORDS.mkdir(parents=True, exist_ok=True)
        data = {
            "owner_pid": os.getpid(),
            "namespace": self.namespace,
            "host_links": self.host_links,
            "slot": self.slot,
            **extra,
        }
        self.record_path.write_text(json.dumps(data, indent=2) + "\n")

    def create(self) -> None:
        """Build the namespace and links; NetnsUnavailable (with everything removed) on failure."""
        in_use = _addresses_in_use()
        self.slot = int(self.run_id[:6], 16) % 250 + 1
        while any(f"10.23{k}.{self.slot}." in in_use for k in (1, 2, 3)):
            self.slot = self.slot % 250 + 1
        self.record()
        n = self.slot
        central_a, lan_host, wan_host = self.host_links
        central_b, lan_site, wan_site = (
            self._link("c", "b"),
            self._link("l", "s"),
            self._link("w", "s"),
        )
        try:
            ip("netns", "add", self.namespace)
            ip("link", "set", "lo", "up", namespace=self.namespace)
            ip("link", "add", central_a, "type", "veth", "peer", "name", central_b)
            ip("addr", "add", f"{self.central}/32", "dev", central_a)
            for link in (central_a, central_b):
                ip("link", "set", link, "up")
            for host_end, site_end, subnet in (
                (lan_host, lan_site, 231),
                (wan_host, wan_site, 232),
            ):
                ip("link", "add", host_end, "type", "veth", "peer", "name", site_end)
                ip("link", "set", site_end, "netns", self.namespace)
                ip("addr", "add", f"10.{subnet}.{n}.1/30", "dev", host_end)
                ip(
                    "addr",
                    "add",
                    f"10.{subnet}.{n}.2/30",
                    "dev",
                    site_end,
                    namespace=self.namespace,
                )
                ip("link", "set", host_end, "up")
                ip("link", "set", site_end, "up", namespace=self.namespace)
            ip(
                "route",
                "add",
                f"{self.central}/32",
                "via",
                f"10.232.{n}.1",
                "dev",
                wan_site,
                namespace=self.namespace,
            )
        except RuntimeError as error:
            self.destroy()
            raise NetnsUnavailable(str(error)) from error

    def command(self, *argv: str) -> list[str]:
        """``argv`` to run inside the site's namespace."""
        return ["ip", "netns", "exec", self.namespace, *argv]

    def cut(self) -> None:
        """The site's WAN link down: the site's gateway and the central broker lose each other."""
        ip("link", "set", self.host_links[2], "down")

    def restore(self) -> None:
        ip("link", "set", self.host_links[2], "up")

    def reachable_from_site(self, host: str, port: int, timeout: float = 1.5) -> bool:
        """Whether a TCP connection from inside the site to ``host:port`` opens in time."""
        probe = (
            "import socket,sys\n"
            "try:\n"
            f"    socket.create_connection(({host!r}, {port}), timeout={timeout}).close()\n"
            "except OSError:\n"
            "    sys.exit(1)\n"
        )
        done = subprocess.run(
            self.command(sys.executable, "-c", probe), capture_output=True, timeout=timeout + 10
        )
        return done.returncode == 0

    @staticmethod
    def reachable_from_host(host: str, port: int, timeout: float = 1.5) -> bool:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError:
            return False
        return True

    def destroy(self) -> None:
        """Remove the namespace (and whatever still runs in it), the host links and the record."""
        _remove(self.namespace, self.host_links)
        with contextlib.suppress(FileNotFoundError):
            self.record_path.unlink()
