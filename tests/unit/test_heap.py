"""The heap a service holds for good, frozen out of the full collections' scans
(jackpot.platform.heap), and those collections' pauses measured."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from jackpot.platform import heap


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    """Whatever a test froze is the collector's again after it."""
    yield
    gc.unfreeze()


class Node:
    """A container in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_settle_freezes_what_is_alive_so_a_full_collection_walks_only_what_came_after() -> None:
    held = [Node() for _ in range(1_000)]
    heap.settle()
    frozen = gc.get_freeze_count()
    assert frozen >= len(held)
    assert not any(gc.is_tracked(node) and node in gc.get_objects(2) for node in held[:3])
    after = [Node() for _ in range(10)]
    assert gc.get_freeze_count() == frozen  # what came after is the collector's
    assert all(gc.is_tracked(node) for node in after)


def test_cyclic_garbage_frozen_once_is_collected_by_the_next_settle() -> None:
    node = Node()
    gone = weakref.ref(node)
    heap.settle()  # frozen while alive
    del node
    gc.collect()
    assert gone() is not None  # a frozen cycle: a plain collection never reaches it
    heap.settle()
    assert gone() is None


def test_every_collection_is_timed_by_its_generation() -> None:
    registry = CollectorRegistry()
    probe = heap._PauseProbe(registry)
    gc.callbacks.append(probe)
    try:
        gc.collect(0)
        gc.collect(2)
    finally:
        gc.callbacks.remove(probe)
    for generation in ("0", "2"):
        count = registry.get_sample_value(
            "jackpot_gc_pause_seconds_count", {"generation": generation}
        )
        assert count is not None
        assert count >= 1
