"""The ports tests and benchmarks take: never the same one twice in a process (a floor's two
gateways on one port made a table look unknown in issue 36's CI run)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from loadtest import free_ports


def test_a_port_the_kernel_offers_twice_is_handed_out_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    offers: Iterator[int] = iter([40001, 40001, 40001, 40002])
    monkeypatch.setattr(free_ports, "_GIVEN", set())
    monkeypatch.setattr(free_ports, "_probe", lambda: next(offers))
    assert [free_ports.free_port(), free_ports.free_port()] == [40001, 40002]


def test_the_ports_of_a_floor_are_distinct_and_free() -> None:
    ports = [free_ports.free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", ports[-1]))


def test_a_pair_is_two_new_consecutive_ports() -> None:
    port = free_ports.free_port_pair()
    with socket.socket() as first, socket.socket() as second:
        first.bind(("127.0.0.1", port))
        second.bind(("127.0.0.1", port + 1))
    assert free_ports.free_port() not in (port, port + 1)
