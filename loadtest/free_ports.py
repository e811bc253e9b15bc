"""Free loopback ports for the floors, services and brokers that tests and benchmarks start, each
handed out once per process.

The kernel may give the same free port to two ``bind(0)`` probes in a row (about one run in two
hundred for eleven probes, measured here): a floor whose two gateways got one port had a health
check pass on the wrong one and a table refused as unknown (issue 36's CI run). So a port this
process already handed out is never handed out again.
"""

from __future__ import annotations

import socket
import threading

_GIVEN: set[int] = set()
_LOCK = threading.Lock()
_TRIES = 1000


def free_port() -> int:
    """A loopback port free now and not handed out before by this process."""
    with _LOCK:
        for _ in range(_TRIES):
            port = _probe()
            if port not in _GIVEN:
                _GIVEN.add(port)
                return port
    raise RuntimeError(f"no new free port on 127.0.0.1 in {_TRIES} tries")


def free_port_pair() -> int:
    """A port ``p`` with ``p`` and ``p + 1`` free and new (a broker and its controller)."""
    with _LOCK:
        for _ in range(_TRIES):
            with socket.socket() as first:
                first.bind(("127.0.0.1", 0))
                port: int = first.getsockname()[1]
                if port in _GIVEN or port + 1 in _GIVEN:
                    continue
                with socket.socket() as second:
                    try:
                        second.bind(("127.0.0.1", port + 1))
                    except OSError:
                        continue
                _GIVEN.update((port, port + 1))
                return port
    raise RuntimeError("no two consecutive free ports on 127.0.0.1")


def _probe() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
