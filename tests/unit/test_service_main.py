"""One entry point for every service: each ``main()`` loads its settings and calls
``jackpot.platform.runtime.service_main`` (logging, /metrics, the software check, the runtime),
never the steps one by one; and the topics a service creates come from one helper."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from aiokafka.errors import KafkaError

from jackpot.platform import kafka
from jackpot.topics import TopicSpec

pytestmark = pytest.mark.unit

PACKAGE = Path(kafka.__file__).resolve().parents[1]
MAINS = sorted(PACKAGE.glob("*/main.py"))
# what service_main does; a main() doing any of it itself is a second way
STEPS = {"run_service", "configure_logging", "serve_metrics", "ensure_topics"}


def calls(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            func = call.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def test_every_service_main_goes_through_service_main() -> None:
    assert {p.parent.name for p in MAINS} >= {"pot", "payout", "display", "gateway", "terminal"}
    for path in MAINS:
        tree = ast.parse(path.read_text())
        (main,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
        assert "service_main" in calls(main), f"{path}: main() does not call service_main"
        assert not calls(tree) & STEPS, f"{path}: calls {sorted(calls(tree) & STEPS)} itself"


class Owner:
    """Settings of a service that creates its topics, pointed at a port nothing listens on."""

    create_topics = True

    def topic_specs(self) -> list[TopicSpec]:
        return [TopicSpec("never.created", 1)]

    def kafka_options(self) -> dict[str, object]:
        return {"bootstrap_servers": "127.0.0.1:1", "request_timeout_ms": 1000}


def test_a_service_that_works_without_brokers_starts_when_its_topics_cannot_be_made() -> None:
    asyncio.run(kafka.ensure_service_topics(Owner(), within_seconds=0.5))  # logged, not raised


def test_a_service_that_needs_its_topics_fails_when_they_cannot_be_made() -> None:
    async def needed() -> None:
        await asyncio.wait_for(kafka.ensure_service_topics(Owner()), 5)

    with pytest.raises((KafkaError, TimeoutError)):  # no broker there, or not within the deadline
        asyncio.run(needed())


def test_settings_that_create_no_topics_make_none() -> None:
    owner = Owner()
    owner.create_topics = False  # type: ignore[misc]
    asyncio.run(asyncio.wait_for(kafka.ensure_service_topics(owner), 0.1))
