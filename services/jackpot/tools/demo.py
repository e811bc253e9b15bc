"""`jackpot demo`: the whole floor on this machine, and a headless run with a report.

The command around the local floor harness (:mod:`jackpot.tools.demo_floor`, which starts Kafka,
the services and the gateways as real processes and creates the pot groups) playing the demo's
floor (:mod:`jackpot.tools.demo_tables`: `scl-poker` with five levels and an envy bonus, and
`scl-blackjack`, about 20 tables of mixed games; and a studio table of 2,000 online players in
`scl-studio`, whose prizes the reference wallet is paid, rules O1-O9) with the floor simulator.

Interactive (`make demo`): prints the URLs of the signs, the gRPC endpoints and the metrics, then a
status line every second (``demo_status``); starts a service again when its process exits
(``demo_supervisor``); stops everything on Ctrl-C with a summary. Headless (`--duration S
--report FILE`): plays for S seconds, lets the pipeline drain, audits the ledger and writes a JSON
report (:mod:`jackpot.tools.demo_report`) with the floor's books (``books``: those of the fault
suite, which the floor simulator keeps); the exit status is 0 only when they pass: the audit and
its chain hold, no bet was lost or duplicated (bet by bet, per pot group), every award has exactly
one payout, paid at most once, and every award is what the rules give for the cards dealt (the
round oracle).
`--print-commands` prints, per service of the last run, the shell command line that starts it
again by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from jackpot.tools.demo_floor import DEMO_TERMINALS, STATE, Demo, sim_config, wait_progressive_open
from jackpot.tools.demo_report import judged_report
from jackpot.tools.demo_status import (
    GREEN,
    RED,
    RESTARTING,
    YELLOW,
    Console,
    HealthProbe,
    Rate,
    SignWatch,
    Status,
    colour_enabled,
    format_status,
    format_summary,
    probe_health,
)
from jackpot.tools.demo_studio import add_studios
from jackpot.tools.demo_supervisor import (
    Supervisor,
    mark_stopped,
    write_pids,
)
from jackpot.tools.demo_tables import (
    BLACKJACK_GROUP,
    LEVELS_POKER_CONFIG,
    POKER_GROUP,
    STUDIO_GROUP,
    STUDIO_PLAYERS,
    studio_tables,
)

# How the console shows the supervisor's messages.
STYLES = {"exit": RED, "restart": YELLOW, "ok": GREEN}


async def show_status(
    demo: Demo,
    stats: Any,
    supervisor: Supervisor,
    console: Console,
    signs: SignWatch,
    interval: float = 1.0,
) -> None:
    """A status line every ``interval`` seconds until cancelled."""
    probes = {name: HealthProbe(demo.target(name), demo.tls("operator")) for name in demo.ports}
    rate = Rate()
    loop = asyncio.get_running_loop()
    started = loop.time()
    ticks = 0
    try:
        while True:
            health = await probe_health(probes)
            restarting = supervisor.restarting()
            for name, state in health.items():
                if name in restarting:
                    health[name] = RESTARTING
                elif state == "ok":
                    supervisor.serving(name)
            status = Status(
                elapsed=console.elapsed(),
                rounds=stats.rounds,
                bets_per_second=rate.add(time.monotonic(), stats.bets_accepted),
                pots=signs.pots(),
                winner=signs.winner,
                health=health,
                restarts=dict(supervisor.restarts),
            )
            console.line(format_status(status, console.colour))
            ticks += 1
            await asyncio.sleep(max(0.0, started + ticks * interval - loop.time()))
    finally:
        for probe in probes.values():
            await probe.close()


async def run_demo(
    duration: float | None,
    report_path: str | None,
    tables: int,
    rig_rate: float,
    rounds_per_minute: float,
    device_protocol: str = "round",
    studio_players: int = STUDIO_PLAYERS,
) -> int:
    """Start the floor, play it (for ``duration`` seconds, or until Ctrl-C), report on its books,
    stop everything; 0 when the books pass. ``studio_players``: the online players of the
    floor's studio table (0: none)."""
    from jackpot.sim.floor import Floor

    run_id = uuid.uuid4().hex[:8]
    demo = Demo(tables, STATE / "demo" / run_id, run_id)
    demo.terminal_tables = demo.played_tables()[:DEMO_TERMINALS]
    demo.group_configs[POKER_GROUP] = LEVELS_POKER_CONFIG  # five levels and envy on the floor
    if studio_players:
        add_studios(demo, studio_tables(1, studio_players, STUDIO_GROUP))
    demo.start_kafka()
    await demo.create_topics()
    demo.start_services()
    demo.write_service_files()
    console = Console(sys.stdout, colour_enabled(sys.stdout))
    supervisor: Supervisor | None = None
    background: list[asyncio.Task[None]] = []
    try:
        await demo.wait_healthy()
        console.started = time.monotonic()
        supervisor = _supervisor(demo, console)
        background.append(asyncio.create_task(supervisor.run()))
        await demo.create_groups()
        await wait_progressive_open(demo)
        _show_floor(demo, console)
        floor = Floor(sim_config(demo, rig_rate, rounds_per_minute, device_protocol))
        groups = sorted({POKER_GROUP, BLACKJACK_GROUP, *(s.group for s in demo.studio_tables)})
        signs = SignWatch(demo.target("display"), demo.tls("sign"), tuple(groups))
        background.append(asyncio.create_task(signs.run()))
        stats = await _play(demo, floor, duration, supervisor, console, signs)
        console.say("the floor stopped; the pipeline drains, then the ledger is audited")
        result = await judged_report(demo, floor, stats)
        result["restarts"] = dict(supervisor.restarts)
        result["service_exits"] = _service_exits(supervisor)
        return await _publish(result, report_path, console)
    finally:
        await _shut_down(demo, supervisor, background)


def _supervisor(demo: Demo, console: Console) -> Supervisor:
    """Starts a service again when its process exits, and says so on the console."""

    def restart(name: str) -> None:
        demo.restart(name)
        write_pids(demo.state, demo.processes)

    return Supervisor(
        demo.processes, restart, lambda message, kind: console.say(message, STYLES[kind])
    )


def _show_floor(demo: Demo, console: Console) -> None:
    console.line("jackpot demo is running:")
    for line in demo.urls():
        console.line("  " + line)
    console.line("  by hand             jackpot demo --print-commands (a command per service)")


async def _play(
    demo: Demo,
    floor: Any,
    duration: float | None,
    supervisor: Supervisor,
    console: Console,
    signs: SignWatch,
) -> Any:
    """Play the floor for ``duration`` seconds (None: until Ctrl-C or SIGTERM, each table then
    finishing its round) with a status line every second; the floor's stats."""
    if duration is None:
        console.line("Ctrl-C stops everything.")

        def interrupt() -> None:
            console.say("stopping: each table finishes its round")
            floor.stop()

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, interrupt)
    ticker = asyncio.create_task(show_status(demo, floor.stats, supervisor, console, signs))
    try:
        return await floor.run(duration)
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker


def _service_exits(supervisor: Supervisor) -> list[dict[str, Any]]:
    return [
        {
            "service": e.service,
            "pid": e.pid,
            "how": e.describe(),
            "returncode": e.returncode,
            "after_seconds": round(e.after_seconds, 2),
        }
        for e in supervisor.exits
    ]


async def _publish(result: dict[str, Any], report_path: str | None, console: Console) -> int:
    """Write the JSON report (if asked), print the summary; 0 when the books pass."""
    text = json.dumps(result, indent=2)
    if report_path:
        await asyncio.to_thread(Path(report_path).write_text, text + "\n")
    for line in format_summary(result, console.colour):
        console.line(line)
    return 0 if result["books"]["books_ok"] else 1


async def _shut_down(
    demo: Demo, supervisor: Supervisor | None, background: list[asyncio.Task[None]]
) -> None:
    """Stop the supervisor (so no service starts again), the background tasks, every service."""
    if supervisor is not None:
        supervisor.stop()
    for task in background:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    demo.stop_services()
    mark_stopped(demo.state)


def print_commands(run: str | None = None) -> int:
    """``jackpot demo --print-commands [RUN]``: a shell command line per service of the run."""
    from jackpot.tools.demo_supervisor import print_commands as print_run_commands

    return print_run_commands(STATE / "demo", run)


def main(
    duration: float | None,
    report_path: str | None,
    tables: int = 20,
    rig_rate: float = 0.02,
    rounds_per_minute: float = 30,
    device_protocol: str = "round",
    studio_players: int = STUDIO_PLAYERS,
) -> int:
    return asyncio.run(
        run_demo(
            duration,
            report_path,
            tables,
            rig_rate,
            rounds_per_minute,
            device_protocol,
            studio_players,
        )
    )
