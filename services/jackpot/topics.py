"""The Kafka topics of the system: the one list that code, tests and deployment share.

Keys and ownership follow docs/architecture.md. Partition counts are defaults for a local broker;
deployments set their own in deploy/k8s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic's name and how the broker keeps it."""

    name: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)


FOREVER = {"retention.ms": "-1", "retention.bytes": "-1"}
COMPACTED = {"cleanup.policy": "compact"}

# The broker compresses what the producers send uncompressed: zstd keeps the ledger and a
# pot-state in about a third of the disk, for the broker CPU `make bench` row 6 prints
# (docs/capacity.md). Every reader needs aiokafka's zstd codec (its "zstd" extra, pyproject.toml).
ZSTD = {"compression.type": "zstd"}
# Kafka deletes whole segments, and a partition of these rolls long before 1 GiB: a segment a day
# (an hour) keeps 7-8 days (a day) on disk, not the 14 (8) of Kafka's weekly roll.
TABLE_EVENTS = TopicSpec(
    "jackpot.table-events.v1",
    6,
    {"retention.ms": str(7 * 86_400_000), "segment.ms": str(86_400_000)},
)
POT_UPDATES = TopicSpec(
    "jackpot.pot-updates.v1", 6, {"retention.ms": str(86_400_000), "segment.ms": str(3_600_000)}
)
AWARDS = TopicSpec("jackpot.awards.v1", 6, FOREVER)
LEDGER = TopicSpec("jackpot.ledger.v1", 6, {**FOREVER, **ZSTD})
# A takeover reads its pot-state partition whole (read_compacted), and the cleaner never compacts
# the active segment: segments roll every 10 minutes or 64 MiB and are cleaned once a tenth is
# dirty, so a takeover reads about the last segment's snapshots, not a week of them (every batch
# writes one per group changed: 12-18 KB, docs/capacity.md).
POT_STATE = TopicSpec(
    "jackpot.pot-state.v1",
    6,
    {
        **COMPACTED,
        "segment.ms": str(10 * 60_000),
        "segment.bytes": str(64 * 2**20),
        "min.cleanable.dirty.ratio": "0.1",
        **ZSTD,
    },
)
POT_CONFIG = TopicSpec("jackpot.pot-config.v1", 6, COMPACTED)
PAYOUTS = TopicSpec("jackpot.payouts.v1", 6, {"cleanup.policy": "compact,delete", **FOREVER})
# What is open of PAYOUTS (same partitions, same transactions; key award id, tombstone once
# settled): what the payout service and the display start from. The log cleaner must remove
# settled records promptly, as a restore reads the whole topic: a segment rolls after 10 min (the
# active one is never cleaned), the cleaner runs once a tenth of the log is dirty, and a
# tombstone is kept 10 min after cleaning, far longer than a restore may take (120 s), so a
# reader in the middle of the topic never loses a deletion.
OPEN_PAYOUTS = TopicSpec(
    "jackpot.open-payouts.v1",
    6,
    {
        "cleanup.policy": "compact",
        "segment.ms": str(10 * 60_000),
        "min.cleanable.dirty.ratio": "0.1",
        "delete.retention.ms": str(10 * 60_000),
    },
)
# The key of each partition's OpenPayoutsMark on OPEN_PAYOUTS (payout.proto); never an award id,
# which has four "/".
OPEN_PAYOUTS_MARK_KEY = b"#mark"
# On every changelog of the exactly-once processor (pot-state, open-payouts), each partition's
# next input offset, written in every transaction that consumed input
# (jackpot.platform.exactly_once): a takeover resumes from it. Not UTF-8, so never a pot group's
# or an award's key; readers of those topics skip it.
CHANGELOG_OFFSET_KEY = b"\xfeinput-offset"
# On POT_STATE, the prefix of a group's update-sequence mark (jackpot.pot.pot_book): 0xFF never
# occurs in UTF-8, so it cannot collide with a group id's key.
SEQUENCE_MARK_PREFIX = b"\xff"
# On POT_STATE, the prefix of a large locked round written apart from its group's snapshot
# (jackpot.pot.state_records): not a group's snapshot, so 0xFE as the offset record's key
LOCKED_ROUND_PREFIX = b"\xfelocked-round:"


def is_bookkeeping_key(key: bytes | None) -> bool:
    """A changelog record of the writers' own bookkeeping (the processor's offset record, a pot
    group's update-sequence mark, a locked round its snapshot was written without), not a pot
    group's snapshot or an award: its key starts with a byte no UTF-8 text starts with (0xFE,
    0xFF), so no pot group's or award's key is one, whatever its name. Every reader of POT_STATE
    and OPEN_PAYOUTS passes over these, but for the ones it reads (the pot's own restore, the pot
    view's locked rounds). OPEN_PAYOUTS_MARK_KEY is UTF-8 and not one of them: its readers read
    the mark."""
    return key is not None and key[:1] >= b"\xfe"


DEAD_LETTER = TopicSpec("jackpot.dead-letter.v1", 1, FOREVER)
# One partition: every chain keeps its order, and a chain head's offset needs no partition.
AUDIT = TopicSpec("jackpot.audit.v1", 1, FOREVER)
# Each audit writer's chain head (key: chain id), so a restart resumes without reading AUDIT whole.
# Segments roll hourly: the cleaner compacts only rolled ones, so the topic stays near one record
# per chain plus the last hour's head writes (read whole at every writer's start).
AUDIT_HEADS = TopicSpec("jackpot.audit-heads.v1", 1, {**COMPACTED, "segment.ms": str(3_600_000)})

ALL_TOPICS: tuple[TopicSpec, ...] = (
    TABLE_EVENTS,
    POT_UPDATES,
    AWARDS,
    LEDGER,
    POT_STATE,
    POT_CONFIG,
    PAYOUTS,
    OPEN_PAYOUTS,
    DEAD_LETTER,
    AUDIT,
    AUDIT_HEADS,
)


def renamed(spec: TopicSpec, name: str, partitions: int = 0) -> TopicSpec:
    """``spec`` under the name a service's settings give it (a deployment's or a test's), with
    ``partitions`` when given, unless the topic has a single partition: dead letters and the
    access log keep theirs, for their order."""
    if partitions and spec.partitions > 1:
        return replace(spec, name=name, partitions=partitions)
    return replace(spec, name=name)


def named_topics(*named: tuple[TopicSpec, str], partitions: int = 0) -> list[TopicSpec]:
    """The topics a service creates at start: each spec under its configured name
    (:func:`renamed`). Every service's settings build theirs with it (``topic_specs()``)."""
    return [renamed(spec, name, partitions) for spec, name in named]


def audit_heads_topic(audit_topic: str) -> str:
    """The chain-heads topic that goes with an audit topic: "-heads" before a ".v<N>" suffix,
    else at the end (jackpot.audit.v1 -> jackpot.audit-heads.v1, demo-1.audit ->
    demo-1.audit-heads), so every audit topic a service is pointed at (JACKPOT_AUDIT_TOPIC) has
    its own."""
    base, dot, version = audit_topic.rpartition(".")
    if dot and version[:1] == "v" and version[1:].isdigit():
        return f"{base}-heads.{version}"
    return f"{audit_topic}-heads"


def open_payouts_topic(payouts_topic: str) -> str:
    """The open-payouts topic that goes with a payouts topic: its name with the last "payouts"
    made "open-payouts" (jackpot.payouts.v1 -> jackpot.open-payouts.v1), so the payout service
    and the display, given one payouts topic, agree on it."""
    head, found, tail = payouts_topic.rpartition("payouts")
    return f"{head}open-payouts{tail}" if found else f"{payouts_topic}.open"
