"""`make bench` row 6: what zstd on the ledger and the pot state costs the broker and saves on disk.

``jackpot.topics`` sets ``compression.type: zstd`` on the ledger and pot-state topics; the
services' producers send uncompressed batches, so the broker compresses every batch it appends.
This measures both sides of that trade in one run, on one broker, on the pot's own records:

- the records are a synthesized floor's (``loadtest.history_synth``: the real ``PotBook`` on
  the gateway's own table events), each transaction's ledger entries and state snapshots sent as
  one batch per topic, as the pot's transaction sends them (a transaction here is a group's
  minute, the history's window);
- the same batches go to a pair of topics with ``jackpot.topics``' settings and to a pair with
  the same settings but no ``compression.type`` (the broker keeps what it gets), alternated in
  slices so the broker's background work falls on both alike;
- the broker's CPU is its process's user + system time (``/proc/<pid>/stat``) over each codec's
  slices; the disk is the bytes of the topics' segment files when all is written.

It prints bytes a round and broker CPU ms a round for each, their ratios, and the year's ledger of
a 300-table floor (a round a minute each, docs/capacity.md) with and without zstd.

    python -m loadtest.bench_compression --broker-dir .run/kafka/single-9092 [--tables 24]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from jackpot.platform.kafka import KafkaConnection, ensure_topics, stop_client
from jackpot.platform.logging import configure_logging
from jackpot.pot.group_runtime import Outputs
from jackpot.topics import LEDGER, POT_STATE, TopicSpec
from loadtest.history_kafka import Writer
from loadtest.history_synth import GroupHistory, Plan, Record, group_plans, state_key

KINDS = {"ledger": LEDGER, "pot-state": POT_STATE}
ROUNDS_A_YEAR_300_TABLES = 300 * 1_440 * 365  # a round a minute per table (docs/capacity.md)
SLICE_BATCHES = 50  # batches per codec before the other codec's turn
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


class _Transactions(GroupHistory):
    """A group's history whose every processor output is kept as one transaction's records of
    the ledger and of pot-state (every snapshot, not only the latest a cleaner would keep)."""

    def __init__(self, plan: Plan, group: Any) -> None:
        super().__init__(plan, group)
        self.transactions: list[list[Record]] = []

    def _output(self, outputs: Outputs) -> None:
        start = len(self.chunk.records)
        super()._output(outputs)
        p, ms = self.group.partition, self.clock.now_ns // 1_000_000
        records = [r for r in self.chunk.records[start:] if r.kind == "ledger"]
        for group_id, state in outputs.snapshots.items():
            records.append(Record("pot-state", p, state_key(group_id), state, ms))
        if records:
            self.transactions.append(records)


def transactions(tables: int, hours: float) -> tuple[list[list[Record]], int]:
    """Every transaction's ledger and pot-state records of ``tables`` tables over ``hours``, in
    the order of their groups; and the rounds played."""
    plan = Plan(tables=tables, days=hours / 24, end_ns=time.time_ns())
    made: list[list[Record]] = []
    rounds = 0
    for group in group_plans(tables):
        history = _Transactions(plan, group)
        for chunk in history.chunks():
            rounds += chunk.rounds
        made += history.transactions
    return made, rounds


def broker_cpu_seconds(pid: int) -> float:
    """The broker process's user + system CPU time so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND


def segment_bytes(data_dir: Path, topic: str) -> int:
    """Bytes of a topic's segment files (``*.log``) in a broker's data directory."""
    return sum(f.stat().st_size for d in data_dir.glob(f"{topic}-*") for f in d.glob("*.log"))


def _slices(batches: Sequence[list[Record]]) -> Iterator[Sequence[list[Record]]]:
    for start in range(0, len(batches), SLICE_BATCHES):
        yield batches[start : start + SLICE_BATCHES]


async def compression_ab(
    bootstrap: str, broker_dir: Path, tables: int = 24, hours: float = 3.0
) -> dict[str, Any]:
    """The figures (see the module docstring), zstd as ``jackpot.topics`` sets it against none."""
    batches, rounds = transactions(tables, hours)
    pid = int((broker_dir / "kafka.pid").read_text())
    unique = uuid.uuid4().hex[:8]
    names = {
        codec: {kind: f"bench.{kind}.{codec}.{unique}" for kind in KINDS}
        for codec in ("zstd", "none")
    }
    specs = []
    for codec, named in names.items():
        for kind, spec in KINDS.items():
            config = dict(spec.config)
            if codec == "none":
                config.pop("compression.type")
            specs.append(TopicSpec(named[kind], spec.partitions, config))
    await ensure_topics(bootstrap, specs)
    client = KafkaConnection({"bootstrap_servers": bootstrap}).producer(
        max_batch_size=4 * 2**20, max_request_size=16 * 2**20
    )
    await client.start()
    # one batch per topic and partition for each transaction, as the pot's transaction sends it
    writers = {codec: Writer(client, named) for codec, named in names.items()}
    cpu = {"zstd": 0.0, "none": 0.0}
    try:
        for part in _slices(batches):
            for codec in ("zstd", "none"):
                before = broker_cpu_seconds(pid)
                for transaction in part:
                    await writers[codec].write(transaction)
                cpu[codec] += broker_cpu_seconds(pid) - before
    finally:
        await stop_client(client)
    return _figures(broker_dir / "data", names, cpu, rounds, len(batches))


def _figures(
    data_dir: Path, names: dict[str, dict[str, str]], cpu: dict[str, float], rounds: int, sent: int
) -> dict[str, Any]:
    out: dict[str, Any] = {"rounds": rounds, "transactions": sent}
    for codec, named in names.items():
        for kind, topic in named.items():
            out[f"{kind}_{codec}_bytes_per_round"] = segment_bytes(data_dir, topic) / rounds
        out[f"broker_cpu_{codec}_ms_per_round"] = 1000 * cpu[codec] / rounds
    for kind in KINDS:
        out[f"{kind}_ratio"] = out[f"{kind}_none_bytes_per_round"] / max(
            out[f"{kind}_zstd_bytes_per_round"], 1e-9
        )
    for codec in ("zstd", "none"):  # kept forever; pot-state is compacted, so written only
        yearly = out[f"ledger_{codec}_bytes_per_round"] * ROUNDS_A_YEAR_300_TABLES
        out[f"ledger_{codec}_gb_a_year_300_tables"] = yearly / 1e9
    out["broker_cpu_ratio"] = out["broker_cpu_zstd_ms_per_round"] / max(
        out["broker_cpu_none_ms_per_round"], 1e-9
    )
    return out


def rows(figures: dict[str, Any]) -> list[tuple[str, float, float | None]]:
    """`make bench` rows: (label, zstd, without compression)."""
    return [
        ("6 ledger bytes a round, zstd vs none", figures["ledger_zstd_bytes_per_round"],
         figures["ledger_none_bytes_per_round"]),
        ("6 pot-state bytes written a round, zstd vs none",
         figures["pot-state_zstd_bytes_per_round"], figures["pot-state_none_bytes_per_round"]),
        ("6 broker CPU ms a round, zstd vs none", figures["broker_cpu_zstd_ms_per_round"],
         figures["broker_cpu_none_ms_per_round"]),
        ("6 ledger GB a year, 300 tables, zstd vs none",
         figures["ledger_zstd_gb_a_year_300_tables"], figures["ledger_none_gb_a_year_300_tables"]),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    parser.add_argument(
        "--broker-dir",
        type=Path,
        default=Path(".run/kafka/single-9092"),
        help="the broker's kafka.sh directory (its kafka.pid and data/)",
    )
    parser.add_argument("--tables", type=int, default=24)
    parser.add_argument("--hours", type=float, default=3.0)
    args = parser.parse_args()
    configure_logging("WARNING", json=False)
    figures = asyncio.run(
        compression_ab(args.bootstrap_servers, args.broker_dir, args.tables, args.hours)
    )
    for label, value, baseline in rows(figures):
        print(f"{label:<50} {value:>10.2f} {baseline:>10.2f}  ratio {value / baseline:.2f}")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
