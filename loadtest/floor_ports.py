"""The ports a fault suite's floor listens on: the demo's, moved by ``JACKPOT_CHAOS_PORT_OFFSET``.

A second floor on the same machine (a campaign beside a test run, the fault suite beside a
campaign) needs ports of its own: every floor the suites start (``loadtest.chaos.ChaosDemo``,
``loadtest.site_cutoff.SiteDemo``) takes its gRPC, /metrics and sign ports from here. A second
instance of a paused service keeps the demo's twin ports.
"""

from __future__ import annotations

import os
from typing import TypedDict

from jackpot.tools.demo_floor import (
    HTTP_PORT,
    METRICS,
    PORTS,
)

PORT_OFFSET_ENV = "JACKPOT_CHAOS_PORT_OFFSET"


class DemoPorts(TypedDict):
    """The port arguments of ``jackpot.tools.demo_floor.Demo``."""

    ports: dict[str, int]
    metrics_ports: dict[str, int]
    http_port: int


def port_offset() -> int:
    """How far the floor's ports are moved from the demo's own (default 0)."""
    text = os.environ.get(PORT_OFFSET_ENV, "") or "0"
    try:
        return int(text)
    except ValueError:
        raise SystemExit(f"{PORT_OFFSET_ENV}={text!r}: a whole number of ports") from None


def offset_ports() -> DemoPorts:
    """The keyword arguments of ``jackpot.tools.demo_floor.Demo`` that put a floor at the offset."""
    offset = port_offset()
    return {
        "ports": {name: port + offset for name, port in PORTS.items()},
        "metrics_ports": {name: port + offset for name, port in METRICS.items()},
        "http_port": HTTP_PORT + offset,
    }


def floor_ports() -> list[int]:
    """Every port a floor of the suites listens on (at the offset)."""
    offset = port_offset()
    return sorted(p + offset for p in {*PORTS.values(), *METRICS.values(), HTTP_PORT})
