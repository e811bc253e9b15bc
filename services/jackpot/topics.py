"""The Kafka topics of the system: the one list that code, tests and deployment share.

Keys and ownership follow docs/architecture.md. Partition counts are defaults for a local broker;
deployments set their own in deploy/k8s.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic's name and how the broker keeps it."""

    name: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)


FOREVER = {"retention.ms": "-1", "retention.bytes": "-1"}
COMPACTED = {"cleanup.policy": "compact"}

TABLE_EVENTS = TopicSpec("jackpot.table-events.v1", 6, {"retention.ms": str(7 * 86_400_000)})
POT_UPDATES = TopicSpec("jackpot.pot-updates.v1", 6, {"retention.ms": str(86_400_000)})
AWARDS = TopicSpec("jackpot.awards.v1", 6, FOREVER)
LEDGER = TopicSpec("jackpot.ledger.v1", 6, FOREVER)
POT_STATE = TopicSpec("jackpot.pot-state.v1", 6, COMPACTED)
POT_CONFIG = TopicSpec("jackpot.pot-config.v1", 6, COMPACTED)
PAYOUTS = TopicSpec("jackpot.payouts.v1", 6, {"cleanup.policy": "compact,delete", **FOREVER})
DEAD_LETTER = TopicSpec("jackpot.dead-letter.v1", 1, FOREVER)
# One partition: the audit log is small and read whole; every chain keeps its order.
AUDIT = TopicSpec("jackpot.audit.v1", 1, FOREVER)

ALL_TOPICS: tuple[TopicSpec, ...] = (
    TABLE_EVENTS,
    POT_UPDATES,
    AWARDS,
    LEDGER,
    POT_STATE,
    POT_CONFIG,
    PAYOUTS,
    DEAD_LETTER,
    AUDIT,
)
