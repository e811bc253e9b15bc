"""Many ledger entries, or many awards, of one table event written as a few Kafka records.

A studio round shared among 10,000 winning bets (rule O4) is 10,000 prize entries and 10,000
awards. Written one record each, the pot's one transaction for it held 20,005 records, and the
transactional producer's cost per record held the group's partition, and with it every land
table of the group, for over a second (issue 39 item 6). So a run of :data:`BUNDLE_FROM` or more
consecutive ledger entries (or awards) of one table event in one group is written as bundles: a
``LedgerEntry`` of type ``LEDGER_ENTRY_TYPE_BUNDLE`` (an ``Award`` with only the group and the
source event set) whose ``bundled`` field holds each entry's (award's) own bytes, up to
:data:`BUNDLE_BYTES` in a bundle, well under the producer's one-megabyte request.

Nothing else changes. Every entry keeps its sequence and entry id, and the group's hash chain
folds the very bytes it folded before (the bundle carries them, it does not rebuild them), so the
books, a checkpoint and a takeover see the same entries whether they were bundled or not: every
reader of the ledger reads through :func:`ledger_entries`, every reader of the awards through
:func:`awards_of`. A bundle whose element belongs to another group, or is a bundle itself, is
refused as unreadable (:class:`BundleError`), as a record that does not decode is.

The payout service writes its lifecycle entries (unsequenced, one per payout moved) the same
way: the 10,000 payouts a studio split orders at once, or a moment's wallet confirmations, are
one transaction's run of one group, bundled under the payout's name (the third of the 30,000
records that transaction held one each).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from google.protobuf.message import DecodeError

from jackpot.v1 import pot_pb2

BUNDLE = pot_pb2.LEDGER_ENTRY_TYPE_BUNDLE
# Below this many, a table event's records are written one each (a land round's few prizes):
# the bundle pays off only where the per-record cost adds up.
BUNDLE_FROM = 64
# The bytes of the elements in one bundle at most: half the producer's max_request_size (1 MiB),
# so a bundle with its envelope always fits one request.
BUNDLE_BYTES = 512 * 1024


class BundleError(DecodeError):
    """A bundle that cannot be read as the entries (awards) of its group."""


def ledger_entries(raw: bytes) -> list[tuple[pot_pb2.LedgerEntry, bytes]]:
    """The entries one ledger record holds, each with its own bytes (those its group's hash
    chain folds): the record's entry, or a bundle's. DecodeError if a part does not decode."""
    entry = pot_pb2.LedgerEntry.FromString(raw)
    if entry.type != BUNDLE:
        return [(entry, raw)]
    if not entry.bundled:
        raise BundleError(f"ledger bundle {entry.source_event_id!r} holds no entry")
    entries = [(pot_pb2.LedgerEntry.FromString(element), element) for element in entry.bundled]
    for inner, _ in entries:
        if inner.type == BUNDLE or inner.pot_group_id != entry.pot_group_id:
            raise BundleError(
                f"ledger bundle of group {entry.pot_group_id!r} holds entry {inner.entry_id!r} "
                f"of group {inner.pot_group_id!r}, type {inner.type}"
            )
    return entries


def awards_of(raw: bytes) -> list[pot_pb2.Award]:
    """The awards one awards record holds: the record's award, or a bundle's. DecodeError if a
    part does not decode."""
    award = pot_pb2.Award.FromString(raw)
    if not award.bundled:
        return [award]
    awards = [pot_pb2.Award.FromString(element) for element in award.bundled]
    for inner in awards:
        if inner.bundled or inner.pot_group_id != award.pot_group_id:
            raise BundleError(
                f"awards bundle of group {award.pot_group_id!r} holds award "
                f"{inner.award_id!r} of group {inner.pot_group_id!r}"
            )
    return awards


def _runs(keys: Sequence[tuple[str, str]]) -> Iterator[tuple[int, int]]:
    """The [start, end) index ranges of equal consecutive keys."""
    start = 0
    for index in range(1, len(keys) + 1):
        if index == len(keys) or keys[index] != keys[start]:
            yield start, index
            start = index


def _chunks(values: Sequence[bytes], start: int, end: int) -> Iterator[list[bytes]]:
    """``values[start:end]`` cut into lists of at most :data:`BUNDLE_BYTES` (at least one)."""
    chunk: list[bytes] = []
    size = 0
    for value in values[start:end]:
        if chunk and size + len(value) > BUNDLE_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(value)
        size += len(value)
    if chunk:
        yield chunk


def bundle_ledger(
    entries: Sequence[pot_pb2.LedgerEntry], raws: Sequence[bytes], source: str = ""
) -> list[tuple[str, bytes]]:
    """The records that write ``entries`` (``raws``: their bytes as chained), in order, each
    with its group: one each, but a run of :data:`BUNDLE_FROM` or more of one table event in one
    group bundled; a bundle carries its last entry's sequence. With ``source`` (the payout's
    lifecycle entries of one transaction, each of its own award), a run is of one group alone
    and its bundles carry ``source`` as their event."""

    def envelope(group_id: str, source: str, chunk: list[bytes], last: int) -> bytes:
        sequence = entries[last].ledger_sequence
        return pot_pb2.LedgerEntry(
            pot_group_id=group_id,
            type=BUNDLE,
            ledger_sequence=sequence,
            source_event_id=source,
            bundled=chunk,
        ).SerializeToString()

    keys = [(entry.pot_group_id, source or entry.source_event_id) for entry in entries]
    return _bundled(keys, raws, envelope)


def bundle_awards(awards: Sequence[pot_pb2.Award]) -> list[tuple[str, bytes]]:
    """The records that write ``awards``, in order, each with its group: one each, but a run
    of :data:`BUNDLE_FROM` or more of one table event in one group bundled."""

    def envelope(group_id: str, source: str, chunk: list[bytes], last: int) -> bytes:
        return pot_pb2.Award(
            pot_group_id=group_id, source_event_id=source, bundled=chunk
        ).SerializeToString()

    keys = [(award.pot_group_id, award.source_event_id) for award in awards]
    return _bundled(keys, [award.SerializeToString() for award in awards], envelope)


Envelope = Callable[[str, str, list[bytes], int], bytes]  # group, event, elements, last index


def _bundled(
    keys: Sequence[tuple[str, str]], raws: Sequence[bytes], envelope: Envelope
) -> list[tuple[str, bytes]]:
    """``raws`` as (group, record) pairs in order: a run of fewer than :data:`BUNDLE_FROM`
    equal (group, table event) keys one record each, a longer run in bundles made by
    ``envelope`` (its group, its event, its elements, the index of its last one)."""
    records: list[tuple[str, bytes]] = []
    for start, end in _runs(keys):
        group_id, source = keys[start]
        if end - start < BUNDLE_FROM:
            records += [(group_id, raw) for raw in raws[start:end]]
            continue
        at = start
        for chunk in _chunks(raws, start, end):
            at += len(chunk)
            records.append((group_id, envelope(group_id, source, chunk, at - 1)))
    return records
