"""Tests of the build's checks on the protobuf contracts, with buf from proto-tools/node_modules.

buf comes from the npm registry (proto-tools/package.json, ``make setup``); git from the system.
Every test here is marked ``proto`` (``make proto-test``; ``make test`` runs them).
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "proto: buf on the protobuf contracts, proto-tools/node_modules (make proto-test)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/proto/" in item.path.as_posix():
            item.add_marker(pytest.mark.proto)
