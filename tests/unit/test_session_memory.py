"""`make bench-history`'s peak memory of a tool (issue 37 item 7): all its processes at once
(itself, its `--jobs` workers, the browser printing its PDF), not one process's peak plus the
workers' peaks summed as if they all ran at once, nor the largest process alone; each process
counted by its proportional set size, so pages the processes share count once."""

from __future__ import annotations

import asyncio
import sys

import pytest
from loadtest.cost import SessionPeak, session_resident_mb

from tests.polling import eventually

pytestmark = pytest.mark.unit

# A session leader with two children, each holding 80 MB (touched) until its stdin closes.
HOLD = (
    "import sys; x = bytearray(80 * 2**20); x[::4096] = b'1' * len(x[::4096]); "
    "print('held', flush=True); sys.stdin.read()"
)
FAMILY = f"""
import subprocess, sys
hold = {HOLD!r}
pipe = subprocess.PIPE
children = [
    subprocess.Popen([sys.executable, "-c", hold], stdin=pipe, stdout=pipe) for _ in range(2)
]
for child in children:
    child.stdout.readline()
print("ready", flush=True)
sys.stdin.read()
for child in children:
    child.stdin.close()
    child.wait()
"""


async def test_the_peak_is_of_every_process_of_the_session_at_once() -> None:
    leader = await asyncio.create_subprocess_exec(
        *(sys.executable, "-c", FAMILY),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert leader.stdin is not None
    assert leader.stdout is not None
    try:
        with SessionPeak(leader.pid, interval=0.01) as peak:
            assert await leader.stdout.readline() == b"ready\n"
            now = session_resident_mb(leader.pid)
            assert now >= 160, now  # both children's 80 MB, and the leader
            await eventually(lambda: peak.mb >= 160, "the sampler saw the two children at once")
            assert session_resident_mb(0x7FFFFFF0) == 0  # no such session
            leader.stdin.close()
            await asyncio.wait_for(leader.wait(), 30)
    finally:
        if leader.returncode is None:
            leader.kill()
    assert peak.mb >= 160  # kept after the children are gone
