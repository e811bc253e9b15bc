"""'Floor whole' held to the end of a fault run, not seen at one instant (issue 36 item 5).

A fault's recovery is measured up to the moment the floor is whole again; that moment says
nothing of the next minute (a pot that dies a second later). :class:`FloorGuard` keeps looking:
while it is armed (from the floor's start, between one fault's recovery and the next fault, and
from the last recovery to the end of play) it asks, every ``interval`` seconds, what is not
whole (``problems``: a mapping of condition -> what was seen, empty when the floor is whole:
loadtest.chaos asks that every pot group's updates are heard, every service answers SERVING and
no gateway counts a table closed). A condition that stays wrong for more than ``grace`` seconds
in a row is a lapse, reported with its start (seconds since the guard started), how long it
lasted and what was seen; ``loadtest.verdicts.judge_floor_held`` fails the run on any lapse.
The grace absorbs one slow probe on a loaded machine, not an outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

GRACE_SECONDS = 2.0
CHECK_SECONDS = 0.5

Problems = Callable[[], Awaitable[Mapping[str, str]]]


@dataclass(slots=True)
class Lapse:
    condition: str
    since_seconds: float  # since the guard started
    seconds: float  # how long it lasted (to the end of the run, or of the armed span)
    seen: str  # what the last check saw

    def describe(self) -> str:
        return (
            f"{self.condition}: {self.seen} ({self.seconds:.1f} s from {self.since_seconds:.1f} s)"
        )


class FloorGuard:
    """Checks the floor while armed; lapses of more than ``grace`` seconds are recorded."""

    def __init__(
        self,
        problems: Problems,
        grace: float = GRACE_SECONDS,
        interval: float = CHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.problems = problems
        self.grace = grace
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.lapses: list[Lapse] = []
        self.checks = 0
        self.armed_seconds = 0.0
        self._armed_at: float | None = None
        self._open: dict[str, tuple[float, str]] = {}  # condition -> (first seen wrong, seen)

    @property
    def armed(self) -> bool:
        return self._armed_at is not None

    def arm(self) -> None:
        if self._armed_at is None:
            self._armed_at = self.clock()

    def disarm(self) -> None:
        """A fault begins (or the run ends): close what is open, stop checking."""
        if self._armed_at is None:
            return
        now = self.clock()
        self.armed_seconds += now - self._armed_at
        self._armed_at = None
        for condition in list(self._open):
            self._close(condition, now)

    @contextlib.asynccontextmanager
    async def fault(self) -> AsyncIterator[None]:
        """Disarmed while a fault is injected and recovered from; armed again after."""
        self.disarm()
        try:
            yield
        finally:
            self.arm()

    def _close(self, condition: str, now: float) -> None:
        first, seen = self._open.pop(condition)
        if now - first > self.grace:
            self.lapses.append(
                Lapse(condition, round(first - self.started, 2), round(now - first, 2), seen)
            )

    def observe(self, found: Mapping[str, str]) -> None:
        """One check's answer (only counted while armed)."""
        if self._armed_at is None:
            return
        self.checks += 1
        now = self.clock()
        for condition in list(self._open):
            if condition not in found:
                self._close(condition, now)
        for condition, seen in found.items():
            first = self._open.get(condition, (now, seen))[0]
            self._open[condition] = (first, seen)

    async def check(self) -> None:
        if self._armed_at is None:
            return
        found = await self.problems()
        self.observe(found)

    async def run(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self.interval)

    def report(self) -> dict[str, Any]:
        return {
            "grace_seconds": self.grace,
            "checks": self.checks,
            "armed_seconds": round(self.armed_seconds, 1),
            "lapses": [asdict(lapse) for lapse in self.lapses],
        }
