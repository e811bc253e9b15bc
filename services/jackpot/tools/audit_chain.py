"""`jackpot audit --chain`: verify the hash-chained audit log and name the first tampered entry.

    jackpot audit --chain                         # the audit topic (jackpot.audit.v1)
    jackpot audit --chain --export-chain a.jsonl  # ... and keep a copy, one JSON entry per line
    jackpot audit --chain-file a.jsonl            # an exported copy, offline
    jackpot audit --chain --anchors heads.json    # ... and check heads recorded earlier
    jackpot audit --chain --save-anchors heads.json   # record today's heads (keep it elsewhere)

Every writer's chain must run 1, 2, 3 ... with each entry's hash matching its content and linking
to the entry before it (:mod:`jackpot.domain.auditchain`). A chain alone cannot show that its
last entries were rewritten or cut off: keep the printed heads (``--save-anchors``) somewhere the
writers cannot reach, and pass them back (``--anchors``). Exit status 0 when every chain holds,
1 at the first entry that does not (printed: chain, sequence, position, what is wrong), 2 when
the log cannot be read.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from aiokafka.errors import KafkaError

from jackpot.domain.auditchain import Anchor, AuditEntry, Break, ChainReport, verify
from jackpot.platform.audit import read_entries


def entry_to_json(entry: AuditEntry) -> str:
    return json.dumps(dataclasses.asdict(entry), sort_keys=True, ensure_ascii=False)


def entry_from_json(line: str) -> AuditEntry:
    data = json.loads(line)
    data["roles"] = tuple(data["roles"])
    return AuditEntry(**data)


def verify_positions(
    positions: Iterable[tuple[int, AuditEntry | None]], anchors: Mapping[str, Anchor] | None = None
) -> ChainReport:
    """Verify, treating an unreadable record as the break it is."""
    readable: list[tuple[int, AuditEntry]] = []
    for position, entry in positions:
        if entry is None:
            report = verify(readable)
            if report.ok:
                report.first_break = Break(position, "?", 0, "the record is not an audit entry")
            return report
        readable.append((position, entry))
    return verify(readable, anchors)


def load_anchors(path: Path) -> dict[str, Anchor]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {str(chain): (int(head["sequence"]), str(head["hash"])) for chain, head in data.items()}


def save_anchors(path: Path, report: ChainReport) -> None:
    heads = {
        chain: {"sequence": sequence, "hash": report.heads[chain]}
        for chain, sequence in sorted(report.chains.items())
    }
    path.write_text(json.dumps(heads, indent=2) + "\n", encoding="utf-8")


def read_file(path: Path) -> list[tuple[int, AuditEntry | None]]:
    """(line number, entry) for each non-empty line of an export."""
    positions: list[tuple[int, AuditEntry | None]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            positions.append((number, entry_from_json(line)))
        except (ValueError, TypeError, KeyError):
            positions.append((number, None))
    return positions


def render(report: ChainReport, where: str) -> str:
    lines = [f"audit chain of {where}: {report.entries} entries in {len(report.chains)} chains"]
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
    if chain_file:
        positions = read_file(Path(chain_file))
        where = chain_file
    else:
        options = dict(client_options)
        bootstrap = options.pop("bootstrap_servers")
        try:
            positions = asyncio.run(read_entries(bootstrap, topic, options))
        except KafkaError as error:
            print(f"cannot read {topic}: {error!r}")
            return 2
        where = topic
    if export:
        with Path(export).open("w", encoding="utf-8") as out:
            for _, entry in positions:
                if entry is not None:
                    out.write(entry_to_json(entry) + "\n")
    report = verify_positions(positions, load_anchors(Path(anchors)) if anchors else None)
    print(render(report, where))
    if save and report.ok:
        save_anchors(Path(save), report)
    return 0 if report.ok else 1
