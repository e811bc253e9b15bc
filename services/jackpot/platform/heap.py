"""What a service holds for good kept out of the cyclic garbage collector's full scans, and
those scans' pauses measured.

CPython's oldest-generation collection walks every container object the process holds and
stops the event loop while it does. A service's modules, its clients and its restored state are
a hundred thousand or more such objects that live as long as the process; a studio round's
10,000 bets and prizes made the pot run such a collection at every round, and it held the
group's partition, and every land table's lock, for 40-250 ms (issue 39 item 6, measured in
the load test with a ``gc.callbacks`` probe). :func:`settle` moves what is alive into the
permanent generation (``gc.freeze``), so a full collection walks only what came after: once the
service is composed and after each takeover, when what it holds for good has just been built.
Anything frozen that later dies is still freed by its reference count; cyclic garbage among it
waits for the next :func:`settle`, which collects before it freezes again.

:func:`measure_pauses` exports each collection's pause (``jackpot_gc_pause_seconds``, by
generation), so the effect is watched in production, not assumed.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Histogram

from jackpot.platform.metrics import gc_pauses


def settle() -> None:
    """Collect, then freeze what survives: later full collections skip it."""
    gc.unfreeze()  # what was frozen before and has died since (in cycles) is collected now
    gc.collect()
    gc.freeze()


class _PauseProbe:
    """A ``gc.callbacks`` entry timing each collection into a histogram."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.pauses = gc_pauses(registry)
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            elapsed = time.perf_counter() - self._started
            self.pauses.labels(generation=str(info["generation"])).observe(elapsed)


_probe: _PauseProbe | None = None


def measure_pauses(registry: CollectorRegistry = REGISTRY) -> Histogram:
    """Time every collection from now on (once per process); the histogram."""
    global _probe
    if _probe is None:
        _probe = _PauseProbe(registry)
        gc.callbacks.append(_probe)
    return _probe.pauses
