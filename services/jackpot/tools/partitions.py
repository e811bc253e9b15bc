"""A topic's partitions read side by side, one process per share of them (``--jobs``).

A pot group's entries all live on one ledger partition (the record key is the group), so the
books of a group are computed whole by whichever process reads its partition, and the shares'
results only need putting together. ``jackpot audit`` and ``jackpot report`` use it: decoding and
recomputing a ledger is CPU-bound Python, so a second process on a second core reads nearly as
much again (1.4x to 1.9x measured on two cores, where the broker takes its share too).

Workers are started with ``spawn`` (never ``fork``: the parent runs an asyncio loop and Kafka
clients a child must not inherit); each reports its own peak RSS, so what a run costs in memory
is the sum, and the tools print it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import resource
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
# Fewer records than this per process and one process reads them sooner (spawning one costs
# some 0.7 s and 60 MB here)
RECORDS_PER_PROCESS = 100_000


@dataclass(frozen=True)
class ShareResult(Generic[T]):
    """What one process computed from its partitions, and its peak RSS (MB)."""

    value: T
    rss_mb: float


def shares(records: Mapping[int, int], jobs: int) -> list[list[int]]:
    """The partitions with records to read, dealt into at most ``jobs`` shares of about as
    many records each (the largest first, each to the lightest share), and no more shares than
    ``RECORDS_PER_PROCESS`` records justify: a process costs a start and its memory."""
    todo = sorted((p for p, n in records.items() if n > 0), key=lambda p: (-records[p], p))
    total = sum(records[p] for p in todo)
    count = max(1, min(jobs, len(todo), total // RECORDS_PER_PROCESS))
    dealt: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for partition in todo:
        lightest = loads.index(min(loads))
        dealt[lightest].append(partition)
        loads[lightest] += records[partition]
    return [sorted(share) for share in dealt if share]


def cost_line(tool: str, records: int, started: float, workers_rss_mb: float) -> str:
    """What a run read and cost, for its stderr (``make bench-history`` reads the RSS)."""
    seconds = time.perf_counter() - started
    return (
        f"{tool}: {records} ledger records in {seconds:.1f} s; "
        f"workers' peak RSS {workers_rss_mb:.0f} MB in all"
    )


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measured(work: Callable[[list[int]], T], share: list[int]) -> ShareResult[T]:
    """``work(share)`` in a worker, with the worker's peak RSS (top level: picklable)."""
    return ShareResult(work(share), peak_rss_mb())


async def map_shares(
    work: Callable[[list[int]], T],
    records: Mapping[int, int],
    jobs: int,
    here: Callable[[list[int]], Awaitable[T]],
) -> list[ShareResult[T]]:
    """``work`` over each share of the partitions (``records``: partition -> records to read
    there; :func:`shares`): when there is one share, ``here`` does it in this process (on what
    the caller has open), else ``work`` runs in one spawned process per share: a picklable
    synchronous callable (a module-level function, a bound method of a picklable object or a
    ``functools.partial`` of one) that runs its own event loop."""
    dealt = shares(records, jobs)
    if len(dealt) <= 1:  # ``here``: the same work in this process, on its open reader
        return [ShareResult(await here(dealt[0] if dealt else []), 0.0)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(dealt), mp_context=context) as pool:
        loop = asyncio.get_running_loop()
        return list(
            await asyncio.gather(
                *(loop.run_in_executor(pool, measured, work, share) for share in dealt)
            )
        )
