"""A consumer-group assignor that gives every partition to one member: active and standbys.

The payout service serves dealer terminals, and a terminal can only pay a prize on the instance
that owns the prize's awards partition. Spreading the partitions over instances (as the pot does)
would leave a terminal on the wrong instance for some of its table's prizes, and a Kubernetes
Service cannot route by table. Prizes are rare (a few a minute on a busy floor), so one active
instance owns every partition and the others stand by, ready to fence and restore in seconds.

Every member sends, with its subscription, the address its clients can reach it at and when it
took its current ownership (``claimed_at_ms``, 0 if it owns nothing). The group leader gives
everything to the member with the latest claim: an instance that froze (SIGSTOP, a long GC, a
stalled VM) and was evicted comes back with an older claim than its successor's and gets nothing,
so a rejoining zombie never takes the partitions back. Among members with no claim the smallest
member id wins. Each member's assignment carries the owner's address, so a standby can send
terminals to the owner (rule D3: the dealer must see the prizes to pay).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import structlog
from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

log = structlog.get_logger("jackpot.assignors")


@dataclass(frozen=True, slots=True)
class Claim:
    """What a member says of itself when it joins: where it serves, since when it owns."""

    address: str
    claimed_at_ms: int

    def encode(self) -> bytes:
        return json.dumps({"address": self.address, "claimed_at_ms": self.claimed_at_ms}).encode()

    @classmethod
    def decode(cls, data: bytes | None) -> Claim:
        """A member's claim; one that cannot be read claims nothing (it may be another version)."""
        try:
            fields = json.loads(data or b"{}")
            return cls(str(fields.get("address", "")), int(fields.get("claimed_at_ms", 0)))
        except (ValueError, TypeError, AttributeError):
            return cls("", 0)


def choose_owner(claims: Mapping[str, Claim]) -> str:
    """The member that owns everything: the latest claim, else the smallest member id."""
    return min(claims, key=lambda member: (-claims[member].claimed_at_ms, member))


class SingleOwnerAssignor:
    """Every partition of the subscribed topics to one member (sticky to the latest owner).

    An instance, not a class: it remembers this member's claim and the owner it was told of.
    """

    name = "jackpot-single-owner"
    version = 0

    def __init__(self, address: str) -> None:
        self.address = address
        self.claimed_at_ms = 0
        self.owner_address = ""

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        # (Re)joining: who will own is not known until the assignment; naming the last owner
        # would send clients to an instance that may be the one leaving.
        self.owner_address = ""
        claim = Claim(self.address, self.claimed_at_ms)
        return ConsumerProtocolMemberMetadata(self.version, sorted(topics), claim.encode())

    def assign(
        self, cluster: ClusterMetadata, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        claims = {member: Claim.decode(meta.user_data) for member, meta in members.items()}
        owner = choose_owner(claims)
        topics = sorted({topic for meta in members.values() for topic in meta.subscription})
        everything = [
            ConsumerProtocolMemberAssignment.Assignment(
                topic, sorted(cluster.partitions_for_topic(topic) or ())
            )
            for topic in topics
        ]
        told = Claim(claims[owner].address, claims[owner].claimed_at_ms).encode()
        log.info("single_owner_assigned", owner=owner, members=len(members))
        return {
            member: ConsumerProtocolMemberAssignment(
                self.version, everything if member == owner else [], told
            )
            for member in members
        }

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        self.owner_address = Claim.decode(assignment.user_data).address
        if not assignment.partitions():
            self.claimed_at_ms = 0
        elif self.claimed_at_ms == 0:
            self.claimed_at_ms = time.time_ns() // 1_000_000
