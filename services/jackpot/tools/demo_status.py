"""What the running demo shows: a status line every second and a summary at the end.

The status line: the time since the floor came up, rounds played, pesos of bets accepted per
second (over the last few seconds), each pot group's main amount as its sign shows it (whole
pesos), the last winner the signs announced, each service's gRPC health and the restarts so far.
It is coloured on a terminal that supports it (``isatty``, ``TERM`` not ``dumb``, ``NO_COLOR``
unset) and plain otherwise (the headless ``--duration`` mode, tests, a pipe).

The formatting functions are pure; :class:`SignWatch` and :func:`probe_health` talk to the
display service and to each service's health check.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jackpot.platform.tls import TlsSettings, secure_channel
from jackpot.v1 import display_pb2, display_pb2_grpc

# Health as the status line shows it.
OK = "ok"
DOWN = "down"
RESTARTING = "restarting"

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
DIM = "\x1b[2m"
RED = "\x1b[31m"
GREEN = "\x1b[32m"
YELLOW = "\x1b[33m"
MAGENTA = "\x1b[35m"
CYAN = "\x1b[36m"

# A health check's channel redials quickly, so a restarted service shows "ok" within a second.
HEALTH_CHANNEL_OPTIONS: list[tuple[str, object]] = [
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


def colour_enabled(stream: Any, environ: Mapping[str, str] | None = None) -> bool:
    """Colour only on a terminal that supports it (https://no-color.org)."""
    environ = os.environ if environ is None else environ
    if "NO_COLOR" in environ:
        return False
    if environ.get("TERM", "") in ("", "dumb"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, style: str, colour: bool) -> str:
    return f"{style}{text}{RESET}" if colour and style else text


def pesos(amount: int) -> str:
    """Whole pesos with thousands separators: ``$1,234,567``."""
    return f"-${-amount:,}" if amount < 0 else f"${amount:,}"


def clock(seconds: float) -> str:
    """``[mm:ss]`` since the floor came up (hours as more minutes)."""
    whole = max(0, int(seconds))
    return f"[{whole // 60:02d}:{whole % 60:02d}]"


@dataclass(frozen=True)
class Winner:
    table_id: str
    seat: int
    prize: str
    amount: int  # whole pesos


@dataclass(frozen=True)
class Status:
    elapsed: float  # seconds since the floor came up
    rounds: int
    bets_per_second: float  # pesos of bets accepted per second
    pots: Mapping[str, int | None]  # pot group -> main amount in whole pesos (None: not heard)
    winner: Winner | None
    health: Mapping[str, str]  # service -> OK, DOWN, RESTARTING or the health status's name
    restarts: Mapping[str, int]  # service -> times started again


def format_status(status: Status, colour: bool = False) -> str:
    """One line; ``colour`` adds ANSI colours, the text stays the same."""

    def health(name: str, state: str) -> str:
        style = GREEN if state == OK else YELLOW if state == RESTARTING else RED
        return f"{name} {paint(state, style, colour)}"

    pots = " ".join(
        f"{group} {paint('-' if amount is None else pesos(amount), BOLD, colour)}"
        for group, amount in status.pots.items()
    )
    if status.winner is None:
        winner = "last win -"
    else:
        w = status.winner
        winner = "last win " + paint(
            f"{w.table_id} seat {w.seat} {w.prize} {pesos(w.amount)}", MAGENTA, colour
        )
    total = sum(status.restarts.values())
    restarts = f"restarts {total}"
    if total:
        detail = ", ".join(f"{n} {c}" for n, c in status.restarts.items() if c)
        restarts = paint(f"{restarts} ({detail})", YELLOW, colour)
    parts = [
        f"rounds {paint(str(status.rounds), BOLD, colour)}",
        f"bets accepted {paint(pesos(round(status.bets_per_second)), BOLD, colour)}/s",
        pots,
        winner,
        " ".join(health(n, s) for n, s in status.health.items()),
        restarts,
    ]
    return f"{paint(clock(status.elapsed), DIM, colour)} " + " | ".join(parts)


def format_summary(result: Mapping[str, Any], colour: bool = False) -> list[str]:
    """What Ctrl-C (or the end of ``--duration``) prints, from the report's fields."""
    ok = result["audit_ok"] and result["lost"] == 0 and result["duplicated"] == 0
    awards = result.get("awards") or {}
    award_detail = ", ".join(f"{prize} {n}" for prize, n in sorted(awards.items()))
    restarts = result.get("restarts") or {}
    restarted = ", ".join(f"{name} {n}" for name, n in restarts.items() if n)
    chain = result.get("audit_chain") or {}
    problems = result.get("audit_problems") or []
    head = "OK" if result["audit_ok"] else "FAILED" + (f": {problems[0]}" if problems else "")
    detail = f"{len(result.get('pots') or {})} pot groups recomputed from the ledger"
    if chain:
        detail += f"; access log's chain {'OK' if chain.get('ok') else 'BROKEN'}"
        detail += f", {chain.get('entries', 0)} entries"
    audit = f"{head} ({detail})"
    verdict = paint(audit, GREEN if ok else RED, colour)
    return [
        paint(f"summary of demo run {result.get('run', '')}", BOLD, colour),
        f"  rounds      {result['rounds']}",
        f"  collected   {pesos(result['collected'])} of {pesos(result['bets_accepted'])} in "
        f"bets accepted (lost {result['lost']}, duplicated {result['duplicated']})",
        f"  awards      {sum(awards.values())}" + (f" ({award_detail})" if award_detail else ""),
        f"  payouts     {result['payouts_paid']} paid, {result['payouts_pending']} pending",
        f"  restarts    {sum(restarts.values())}" + (f" ({restarted})" if restarted else ""),
        f"  audit       {verdict}",
    ]


class Rate:
    """Per-second rate of a growing count over the last ``window`` seconds."""

    def __init__(self, window: float = 5.0) -> None:
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, count: int) -> float:
        self._samples.append((now, count))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self.window:
            self._samples.popleft()
        first_time, first_count = self._samples[0]
        span = now - first_time
        return (count - first_count) / span if span > 0 else 0.0


class Console:
    """The demo's live output: status lines and messages (exits, restarts), flushed at once."""

    def __init__(self, out: TextIO, colour: bool, started: float | None = None) -> None:
        self.out = out
        self.colour = colour
        self.started = time.monotonic() if started is None else started

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def say(self, message: str, style: str = "") -> None:
        """A timestamped message between the status lines."""
        self.line(
            f"{paint(clock(self.elapsed()), DIM, self.colour)} {paint(message, style, self.colour)}"
        )


@dataclass
class SignWatch:
    """Follows the display service's sign stream: each group's amount and the last winner."""

    target: str
    tls: TlsSettings
    groups: Sequence[str]
    amounts: dict[str, int] = field(default_factory=dict)
    winner: Winner | None = None
    _seen: set[str] = field(default_factory=set)

    def on_sign(self, sign: display_pb2.SignState) -> None:
        self.amounts[sign.pot_group_id] = sign.amount
        if sign.HasField("winner") and sign.winner.award_id not in self._seen:
            self._seen.add(sign.winner.award_id)
            w = sign.winner
            self.winner = Winner(w.table_id, w.seat, w.prize, w.amount)

    def pots(self) -> dict[str, int | None]:
        groups = list(self.groups) + sorted(set(self.amounts) - set(self.groups))
        return {g: self.amounts.get(g) for g in groups}

    async def run(self) -> None:
        """Until cancelled; dials again whenever the display service goes away."""
        while True:
            with contextlib.suppress(grpc.aio.AioRpcError):
                async with secure_channel(self.target, self.tls) as channel:
                    stub = display_pb2_grpc.SignServiceStub(channel)  # type: ignore[no-untyped-call]
                    async for message in stub.WatchSigns(display_pb2.WatchSignsRequest()):
                        self.on_sign(message.sign)
            await asyncio.sleep(0.5)


class HealthProbe:
    """The gRPC health check of one service (as the demo's ``wait_serving`` asks it)."""

    def __init__(self, target: str, tls: TlsSettings) -> None:
        self.channel = secure_channel(target, tls, options=HEALTH_CHANNEL_OPTIONS)
        self.stub = health_pb2_grpc.HealthStub(self.channel)

    async def check(self, within_seconds: float = 0.8) -> str:
        try:
            answer = await self.stub.Check(health_pb2.HealthCheckRequest(), timeout=within_seconds)
        except grpc.aio.AioRpcError:
            return DOWN
        if answer.status == health_pb2.HealthCheckResponse.SERVING:
            return OK
        name: str = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
        return name.lower().replace("_", " ")

    async def close(self) -> None:
        await self.channel.close()


async def probe_health(
    probes: Mapping[str, HealthProbe], within_seconds: float = 0.8
) -> dict[str, str]:
    """Every service's health at once (each check waits at most ``within_seconds``)."""
    answers = await asyncio.gather(*(p.check(within_seconds) for p in probes.values()))
    return dict(zip(probes, answers, strict=True))
