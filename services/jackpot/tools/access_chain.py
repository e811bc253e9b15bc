"""`jackpot audit --chain`: verify the hash-chained access log and name the first tampered entry.

    jackpot audit --chain                         # the audit topic (jackpot.audit.v1)
    jackpot audit --chain --export-chain a.jsonl  # ... and keep a copy, one JSON entry per line
    jackpot audit --chain-file a.jsonl            # an exported copy, offline
    jackpot audit --chain --anchors heads.json    # ... and check heads recorded earlier
    jackpot audit --chain --save-anchors heads.json   # record today's heads (keep it elsewhere)

Every writer's chain must run 1, 2, 3 ... with each entry's hash matching its content and linking
to the entry before it (:mod:`jackpot.domain.access_chain`). A chain alone cannot show that its
last entries were rewritten or cut off: keep the printed heads (``--save-anchors``) somewhere the
writers cannot reach, and pass them back (``--anchors``). Exit status 0 when every chain holds,
1 at the first entry that does not (printed: chain, sequence, position, what is wrong), 2 when
the log cannot be read.

The log is verified as it is read (:class:`jackpot.domain.access_chain.ChainVerifier`): memory is
one entry per chain, whatever the length of the history; an export is written as it is read.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from aiokafka.errors import KafkaError

from jackpot.domain.access_chain import AccessEntry, Anchor, Break, ChainReport, ChainVerifier
from jackpot.domain.canonical import canonical_json
from jackpot.platform.access_log import read_entries
from jackpot.platform.kafka import KafkaConnection


def entry_to_json(entry: AccessEntry) -> str:
    return canonical_json(dataclasses.asdict(entry), utf8=True)


def entry_from_json(line: str) -> AccessEntry:
    data = json.loads(line)
    data["roles"] = tuple(data["roles"])
    return AccessEntry(**data)


class _Verification:
    """One pass over (position, entry): verified as they come, exported if asked, an unreadable
    record being the break it is."""

    def __init__(self, anchors: Mapping[str, Anchor] | None, export: TextIO | None) -> None:
        self.verifier = ChainVerifier(anchors)
        self.export = export

    def add(self, position: int, entry: AccessEntry | None) -> bool:
        """False once nothing more needs reading (broken, and nothing to export)."""
        if entry is not None and self.export is not None:
            self.export.write(entry_to_json(entry) + "\n")
        if self.verifier.broken:
            return self.export is not None
        if entry is None:
            self.verifier.report.first_break = Break(
                position, "?", 0, "the record is not an audit entry"
            )
        else:
            self.verifier.add(position, entry)
        return self.export is not None or not self.verifier.broken

    def finish(self) -> ChainReport:
        return self.verifier.finish()


def verify_positions(
    positions: Iterable[tuple[int, AccessEntry | None]],
    anchors: Mapping[str, Anchor] | None = None,
    export: TextIO | None = None,
) -> ChainReport:
    """Verify, treating an unreadable record as the break it is (streamed: any iterable)."""
    verification = _Verification(anchors, export)
    for position, entry in positions:
        if not verification.add(position, entry):
            break
    return verification.finish()


async def verify_stream(
    positions: AsyncIterable[tuple[int, AccessEntry | None]],
    anchors: Mapping[str, Anchor] | None = None,
    export: TextIO | None = None,
) -> ChainReport:
    """:func:`verify_positions` of an async stream
    (:func:`jackpot.platform.access_log.read_entries`); a stream left at a break is closed (its
    reader with it)."""
    verification = _Verification(anchors, export)
    try:
        async for position, entry in positions:
            if not verification.add(position, entry):
                break
    finally:
        aclose = getattr(positions, "aclose", None)
        if aclose is not None:
            await aclose()
    return verification.finish()


def load_anchors(path: Path) -> dict[str, Anchor]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {str(chain): (int(head["sequence"]), str(head["hash"])) for chain, head in data.items()}


def save_anchors(path: Path, report: ChainReport) -> None:
    heads = {
        chain: {"sequence": sequence, "hash": report.heads[chain]}
        for chain, sequence in sorted(report.chains.items())
    }
    path.write_text(json.dumps(heads, indent=2) + "\n", encoding="utf-8")


def read_file(path: Path) -> Iterator[tuple[int, AccessEntry | None]]:
    """(line number, entry) for each non-empty line of an export, read line by line."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield number, entry_from_json(line)
            except (ValueError, TypeError, KeyError):
                yield number, None


def render(report: ChainReport, where: str) -> str:
    lines = [
        f"access log's chain of {where}: {report.entries} entries in {len(report.chains)} chains"
    ]
    for chain, last in sorted(report.chains.items()):
        lines.append(f"  {chain:40} entries 1..{last:<6} head {report.heads[chain]}")
    if report.redelivered:
        lines.append(f"  {report.redelivered} exact re-deliveries of an entry (producer retries)")
    if report.first_break is None:
        lines.append("OK: every chain holds")
    else:
        lines.append(f"TAMPERED: {report.first_break.describe()}")
    return "\n".join(lines)


def run(
    client_options: Mapping[str, Any],
    topic: str,
    chain_file: str | None = None,
    export: str | None = None,
    anchors: str | None = None,
    save: str | None = None,
) -> int:
    """``client_options``: the Kafka options with the bootstrap servers (``kafka_options()``)."""
    anchored = load_anchors(Path(anchors)) if anchors else None
    with _export_file(export) as out:
        if chain_file:
            report = verify_positions(read_file(Path(chain_file)), anchored, out)
            where = chain_file
        else:
            reading = read_entries(KafkaConnection(dict(client_options)), topic)
            try:
                report = asyncio.run(verify_stream(reading, anchored, out))
            except KafkaError as error:
                print(f"cannot read {topic}: {error!r}")
                return 2
            where = topic
    print(render(report, where))
    if save and report.ok:
        save_anchors(Path(save), report)
    return 0 if report.ok else 1


def _export_file(export: str | None) -> contextlib.AbstractContextManager[TextIO | None]:
    if export:
        return Path(export).open("w", encoding="utf-8")
    return contextlib.nullcontext()
