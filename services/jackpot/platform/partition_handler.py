"""What a service plugs into the exactly-once processor (:mod:`jackpot.platform.exactly_once`):
the pure :class:`PartitionHandler` of one input partition, and the records its batches write.

A handler never speaks Kafka. The processor gives it the consumer's records and writes what it
returns, with the handler's new state and the input offset, in one transaction; a handler
rolls its memory back to its last commit when that transaction fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

from aiokafka.structs import ConsumerRecord


class OutputRecord(NamedTuple):
    """One record a transaction writes; ``partition`` pins it (changelog records do). Without
    ``headers`` it carries the transaction's trace context (jackpot.platform.tracing). A named
    tuple: a batch may write tens of thousands (a studio split, rule O4), each cheap to make and,
    holding only strings, bytes and numbers, left alone by the garbage collector."""

    topic: str
    value: bytes | None
    key: bytes | None
    partition: int | None = None
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetsOnly:
    """A transaction of the consumer group's offsets alone (no handler batch)."""

    records: tuple[OutputRecord, ...] = ()


class Batch(Protocol):
    """What a handler returns for a transaction: the records to write."""

    @property
    def records(self) -> Sequence[OutputRecord]: ...


B = TypeVar("B", bound=Batch)
H = TypeVar("H", bound="PartitionHandler[Any]")


class PartitionHandler(Protocol[B]):
    """The pure side of one input partition: its state and how records change it.

    ``next_offset`` is the input offset after the last record applied (rolled back with it).
    ``apply`` may change memory, but only ``commit`` makes it the rollback point; ``rollback``
    returns to it exactly.
    """

    @property
    def next_offset(self) -> int: ...

    def restore(self, changelog: Mapping[bytes, bytes], committed: int | None) -> int | None:
        """Rebuild from the latest changelog value per key; the offset to consume from (None:
        the beginning of the partition)."""
        ...

    def apply(self, records: Sequence[ConsumerRecord[bytes, bytes]]) -> B:
        """The batch of a prefix of ``records``, at least the first: ``next_offset`` tells how
        far it went; the processor gives the rest to the next transaction (a record that
        costs much more than others may so have a transaction of its own)."""
        ...

    def tick(self) -> B | None:
        """Periodic outputs without input (for example liveness), or None."""
        ...

    def commit(self, batch: B) -> None: ...

    def rollback(self) -> None: ...

    def close(self) -> None:
        """The partition is halted or no longer owned: forget everything (and its metrics).
        May be called twice (halted, then revoked)."""
        ...
