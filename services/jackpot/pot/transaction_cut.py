"""Where the pot's next transaction ends: before a record that locks or settles a studio round.

The records of a group's partition are applied in order, and a batch commits as one
transaction. A studio round's lock (10,000 contributions, O1) or result (10,000 prizes, O4) takes
the pot's book a hundred milliseconds and more, and the land tables' records fetched before it in
the same batch waited for it, and for its megabytes' transaction, before they committed (issue 39
item 6). So such a record starts a transaction: :func:`transaction_size` says how many of a
fetch's records the next one applies (the exactly-once processor gives the rest to the one
after, :mod:`jackpot.platform.partition_task`). The records after it go with it: they have
waited for it anyway, and a transaction of their own would only add its cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jackpot.domain.errors import DomainError
from jackpot.pot import table_event_reading as reading
from jackpot.pot.group_runtime import LARGE_ROUND_BETS, GroupRuntime
from jackpot.pot.table_event_reading import ConsumedRecord


def transaction_size(records: Sequence[ConsumedRecord], groups: Mapping[str, GroupRuntime]) -> int:
    """How many of ``records`` (at least one) the next transaction applies: all, but none from
    a record that locks or settles a round of :data:`LARGE_ROUND_BETS` bets or more on
    (``groups``: the partition's, as the records before it leave them or a lock among them)."""
    costly_rounds: set[tuple[str, str]] = set()  # (group, table) locked costly in ``records``
    for index, record in enumerate(records):
        try:
            event = reading.decode(record)
        except DomainError:
            continue  # its refusal is cheap
        key = (event.pot_group_id, event.table_id)
        payload = event.WhichOneof("payload")
        if payload == "round_locked":
            costly = len(event.round_locked.bets) >= LARGE_ROUND_BETS
            if costly:
                costly_rounds.add(key)
        elif payload in ("round_result", "round_voided"):
            costly = key in costly_rounds or _locked_bets(groups, *key) >= LARGE_ROUND_BETS
        else:
            costly = False
        if costly and index:
            return index
    return len(records)


def _locked_bets(groups: Mapping[str, GroupRuntime], group_id: str, table_id: str) -> int:
    runtime = groups.get(group_id)
    locked = runtime.group.locked.get(table_id) if runtime is not None else None
    return len(locked.bets) if locked is not None else 0
