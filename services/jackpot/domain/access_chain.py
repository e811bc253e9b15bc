"""The hash-chained access log: configuration changes, approvals, voids, refusals and faults.

Each writer (one service instance) keeps one *chain*: entries numbered 1, 2, 3, ... where every
entry carries the SHA-256 of the entry before it (:data:`GENESIS` for the first) and its own hash
over a canonical JSON of all its fields. Changing, removing, inserting or reordering an entry
breaks the chain at that entry, and :func:`verify` names the first entry that does not hold.

Canonical form: JSON with sorted keys, no whitespace, UTF-8, integers as integers, the roles sorted;
the hash is lowercase hex. Any implementation that writes the same bytes verifies the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from jackpot.domain.canonical import canonical_json

GENESIS = "0" * 64

OUTCOMES = frozenset({"allowed", "refused", "applied", "fault", "recovered"})


@dataclass(frozen=True, slots=True)
class AccessEntry:
    """One audited fact; ``entry_hash`` is filled by :meth:`ChainHead.append`."""

    chain: str
    sequence: int
    time_ns: int
    principal: str
    roles: tuple[str, ...]
    action: str
    outcome: str
    target: str
    detail: str
    prev_hash: str
    entry_hash: str = ""

    def canonical(self) -> bytes:
        """The bytes the hash covers: every field but the hash itself."""
        body = {
            "chain": self.chain,
            "sequence": self.sequence,
            "time_ns": self.time_ns,
            "principal": self.principal,
            "roles": sorted(self.roles),
            "action": self.action,
            "outcome": self.outcome,
            "target": self.target,
            "detail": self.detail,
            "prev_hash": self.prev_hash,
        }
        return canonical_json(body, utf8=True).encode()

    def computed_hash(self) -> str:
        return hashlib.sha256(self.canonical()).hexdigest()


@dataclass(frozen=True, slots=True)
class ChainHead:
    """Where a writer's chain stands: the last sequence and hash (a new chain: 0 and GENESIS)."""

    chain: str
    sequence: int = 0
    last_hash: str = GENESIS

    def append(
        self,
        *,
        time_ns: int,
        principal: str,
        roles: Iterable[str],
        action: str,
        outcome: str,
        target: str = "",
        detail: str = "",
    ) -> tuple[ChainHead, AccessEntry]:
        """The next entry of this chain and the head after it (nothing is mutated)."""
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown audit outcome {outcome!r}")
        entry = AccessEntry(
            chain=self.chain,
            sequence=self.sequence + 1,
            time_ns=time_ns,
            principal=principal,
            roles=tuple(sorted(roles)),
            action=action,
            outcome=outcome,
            target=target,
            detail=detail,
            prev_hash=self.last_hash,
        )
        entry = replace(entry, entry_hash=entry.computed_hash())
        return ChainHead(self.chain, entry.sequence, entry.entry_hash), entry

    def advanced(self, entry: AccessEntry) -> ChainHead:
        """The head after an entry read back from the log (restoring a writer's position)."""
        return ChainHead(self.chain, entry.sequence, entry.entry_hash)


@dataclass(frozen=True, slots=True)
class Break:
    """The first entry at which a chain does not hold."""

    position: int  # index in the order the entries were read (the log offset, for a topic)
    chain: str
    sequence: int
    problem: str

    def describe(self) -> str:
        return (
            f"chain {self.chain!r} breaks at entry {self.sequence} (position {self.position}): "
            f"{self.problem}"
        )


@dataclass(slots=True)
class ChainReport:
    entries: int = 0
    chains: dict[str, int] = field(default_factory=dict)  # chain -> last good sequence
    heads: dict[str, str] = field(default_factory=dict)  # chain -> hash of that last entry
    redelivered: int = 0  # exact copies of an entry already seen (a producer retry), not tampering
    first_break: Break | None = None

    @property
    def ok(self) -> bool:
        return self.first_break is None


Anchor = tuple[int, str]
"""A chain's (sequence, hash) recorded outside the log earlier: ``jackpot audit --chain`` prints
every chain's head; kept elsewhere, it proves later that nothing up to it was rewritten or cut."""


class ChainVerifier:
    """:func:`verify` one entry at a time, for a log read as a stream: it keeps one entry per
    chain (each chain's last), never the log. ``add`` each entry in order, then ``finish``."""

    def __init__(self, anchors: Mapping[str, Anchor] | None = None) -> None:
        self.report = ChainReport()
        self._heads: dict[str, AccessEntry] = {}
        self._anchors = dict(anchors or {})

    @property
    def broken(self) -> bool:
        return self.report.first_break is not None

    def add(self, position: int, entry: AccessEntry) -> bool:
        """Check the next entry; False once the log is broken (later entries are not checked)."""
        if self.broken:
            return False
        report = self.report
        report.entries += 1
        previous = self._heads.get(entry.chain)
        expected = (previous.sequence if previous else 0) + 1
        anchor = self._anchors.get(entry.chain)
        if entry.computed_hash() != entry.entry_hash:
            problem = "its content does not match its hash (the entry was altered)"
        elif previous is not None and entry == previous:
            report.redelivered += 1
            return True
        elif entry.sequence != expected:
            problem = (
                f"sequence {entry.sequence} where {expected} was expected "
                "(an entry was removed, inserted or replayed)"
            )
        elif entry.prev_hash != (previous.entry_hash if previous else GENESIS):
            problem = "it does not link to the entry before it (the chain was rewritten)"
        elif anchor is not None and anchor[0] == entry.sequence and anchor[1] != entry.entry_hash:
            problem = "it differs from the anchored hash recorded earlier (the chain was rewritten)"
        else:
            self._heads[entry.chain] = entry
            report.chains[entry.chain] = entry.sequence
            report.heads[entry.chain] = entry.entry_hash
            return True
        report.first_break = Break(position, entry.chain, entry.sequence, problem)
        return False

    def finish(self) -> ChainReport:
        """The report, after checking that no anchored entry is missing from a chain's end."""
        if self.broken:
            return self.report
        for name, (sequence, _) in sorted(self._anchors.items()):
            last = self.report.chains.get(name, 0)
            if last < sequence:
                self.report.first_break = Break(
                    -1,
                    name,
                    last + 1,
                    f"the chain ends at entry {last} but entry {sequence} was anchored "
                    "(entries were removed from the end)",
                )
                break
        return self.report


def verify(
    entries: Iterable[tuple[int, AccessEntry]], anchors: Mapping[str, Anchor] | None = None
) -> ChainReport:
    """Check every chain in ``(position, entry)`` order; stop at the first break.

    A chain alone cannot tell whether its *last* entries were rewritten (hashes recomputed) or
    cut off; ``anchors`` close that gap: each anchored entry must still be there, unchanged.
    """
    verifier = ChainVerifier(anchors)
    for position, entry in entries:
        if not verifier.add(position, entry):
            break
    return verifier.finish()
