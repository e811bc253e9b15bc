"""The single-owner assignor (issue 19): one member owns every partition, sticky to the latest
claim, so a frozen instance that comes back never takes the payouts back from its successor."""

from __future__ import annotations

from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

from jackpot.platform.assignors import Claim, SingleOwnerAssignor, choose_owner


class Cluster:
    """The part of aiokafka's ClusterMetadata the assignor reads."""

    def __init__(self, partitions: dict[str, set[int]]) -> None:
        self._partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._partitions.get(topic)


def join(assignor: SingleOwnerAssignor) -> object:
    return assignor.metadata(["awards"])


def test_the_latest_claim_owns_everything_and_every_member_is_told_its_address() -> None:
    zombie, successor, fresh = (SingleOwnerAssignor(a) for a in ("a:1", "b:2", "c:3"))
    zombie.claimed_at_ms, successor.claimed_at_ms = 1_000, 2_000  # evicted, then taken over
    members = {"m-zombie": join(zombie), "m-successor": join(successor), "m-fresh": join(fresh)}
    assigned = fresh.assign(Cluster({"awards": {0, 1, 2}}), members)  # type: ignore[arg-type]
    assert [tp.partition for tp in assigned["m-successor"].partitions()] == [0, 1, 2]
    assert assigned["m-zombie"].partitions() == []
    assert assigned["m-fresh"].partitions() == []
    for assignment in assigned.values():
        assert Claim.decode(assignment.user_data).address == "b:2"


def test_without_claims_the_smallest_member_id_owns_and_a_bad_claim_claims_nothing() -> None:
    claims = {"m-2": Claim("x", 0), "m-1": Claim("y", 0), "m-3": Claim.decode(b"not json")}
    assert choose_owner(claims) == "m-1"
    assert Claim.decode(b"not json") == Claim("", 0)
    assert Claim.decode(b'{"claimed_at_ms": "soon"}') == Claim("", 0)


def test_a_member_claims_when_it_is_given_partitions_keeps_its_claim_and_drops_it_when_not() -> (
    None
):
    assignor = SingleOwnerAssignor("me:1")
    told = Claim("me:1", 0).encode()
    given = ConsumerProtocolMemberAssignment(0, [("awards", [0, 1])], told)
    assignor.on_assignment(given)
    first_claim = assignor.claimed_at_ms
    assert first_claim > 0
    assert assignor.owner_address == "me:1"
    assignor.on_assignment(given)  # a rebalance that leaves it the owner keeps the first claim
    assert assignor.claimed_at_ms == first_claim
    other = ConsumerProtocolMemberAssignment(0, [], Claim("other:2", 5).encode())
    assignor.on_assignment(other)
    assert assignor.claimed_at_ms == 0
    assert assignor.owner_address == "other:2"
    assert Claim.decode(join(assignor).user_data) == Claim("me:1", 0)  # type: ignore[attr-defined]
    assert assignor.owner_address == ""  # rejoining: the owner is not known until assigned
