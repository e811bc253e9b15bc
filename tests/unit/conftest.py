"""Fixtures for the unit tier."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import structlog


def _drop(*_: object) -> Any:
    raise structlog.DropEvent


@pytest.fixture(scope="module")
def quiet_logs() -> Iterator[None]:
    """Thousands of refusals would flood the output: drop log events while a module fuzzes."""
    saved = structlog.get_config()
    structlog.configure(processors=[_drop])
    try:
        yield
    finally:
        structlog.configure(**saved)
