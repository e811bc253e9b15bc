"""Shopify's Toxiproxy as the WAN between a remote site and the central brokers (issue 28).

This machine's kernel has no ``netem``, so latency, jitter, connection resets and a thin link are
made by a fault proxy built for it: Toxiproxy (``make toxiproxy`` builds its server from the Go
module proxy into the cache). :class:`Toxiproxy` starts the server on a loopback API port and
drives it over its HTTP API: a proxy per path (the site's Kafka connections), then *toxics* on it
(``latency`` with ``jitter``, ``reset_peer`` on a share of the connections, ``bandwidth``), added
and removed while the floor plays. A cut is not the proxy's: the site's WAN link itself goes down
(:meth:`loadtest.netns.SiteNetwork.cut`), so packets are lost and TCP retransmits as on a real
link, rather than the proxy closing connections.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VERSION = "2.5.0"  # the Makefile's TOXIPROXY_VERSION
CACHE = Path(os.environ.get("JACKPOT_CACHE", Path.home() / ".cache" / "jackpot"))
SERVER = CACHE / f"toxiproxy-{VERSION}" / "server"
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ToxiproxyError(RuntimeError):
    """The server is missing, did not start, or refused a request (its answer says why)."""


@dataclass(frozen=True, slots=True)
class Toxic:
    """One toxic as Toxiproxy takes it: ``stream`` is ``downstream`` (toward the client, the
    site) or ``upstream`` (toward the broker); ``toxicity`` the share of connections it hits."""

    name: str
    kind: str
    stream: str
    attributes: dict[str, int]
    toxicity: float = 1.0

    def body(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.kind,
            "stream": self.stream,
            "toxicity": self.toxicity,
            "attributes": self.attributes,
        }


class Toxiproxy:
    """A Toxiproxy server of this run (its API on ``api_host:api_port``), stopped on exit."""

    def __init__(self, log: Path, api_host: str = "127.0.0.1", api_port: int = 8474) -> None:
        self.log, self.api = log, f"http://{api_host}:{api_port}"
        self.api_host, self.api_port = api_host, api_port
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, within_seconds: float = 10.0) -> None:
        if not SERVER.exists():
            raise ToxiproxyError(
                f"no {SERVER}: run `make toxiproxy` (go install, Toxiproxy {VERSION})"
            )
        with self.log.open("ab") as sink:
            command = [str(SERVER), "-host", self.api_host, "-port", str(self.api_port)]
            self._process = subprocess.Popen(
                command, stdout=sink, stderr=sink, env={**os.environ, "LOG_LEVEL": "info"}
            )
        deadline = time.monotonic() + within_seconds
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ToxiproxyError(f"toxiproxy exited at start; see {self.log}")
            try:
                self._request("GET", "/version")
                return
            except ToxiproxyError:
                time.sleep(0.1)
        self.stop()
        raise ToxiproxyError(f"toxiproxy did not answer on {self.api} in {within_seconds:g} s")

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> Toxiproxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def proxy(self, name: str, listen: str, upstream: str) -> None:
        """A proxy from ``listen`` (host:port) to ``upstream``."""
        body = {"name": name, "listen": listen, "upstream": upstream, "enabled": True}
        self._request("POST", "/proxies", body)

    def add(self, proxy: str, toxic: Toxic) -> None:
        self._request("POST", f"/proxies/{proxy}/toxics", toxic.body())

    def remove(self, proxy: str, name: str) -> None:
        self._request("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        answer = self._request("GET", f"/proxies/{proxy}/toxics")
        return list(answer) if isinstance(answer, list) else []

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.api + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with _NO_PROXY.open(request, timeout=5) as answer:
                text = answer.read().decode()
        except urllib.error.HTTPError as error:
            said = error.read().decode(errors="replace")
            raise ToxiproxyError(f"{method} {path}: {error.code} {said}") from None
        except OSError as error:
            raise ToxiproxyError(f"{method} {path}: {error}") from None
        try:
            return json.loads(text) if text.strip() else None
        except ValueError:  # /version answers plain text
            return text
