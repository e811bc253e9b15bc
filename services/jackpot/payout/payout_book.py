"""The payouts an instance serves (:class:`PayoutBook`): those of the awards partitions it owns,
at their latest state, by award id, and who listens to a table's changes (its dealer terminals'
streams). The payout metrics read the book: pending and the oldest at each scrape, unattended by
table (D3) for the tables a change touched, so that a change costs what it changed, not what is
open (a studio round's 10,000 prizes, O9). The payout service (:mod:`jackpot.payout.service`)
fills it in as its transactions commit and empties a partition it loses."""

from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Callable, Iterable

from jackpot.domain.payout import (
    OPEN,
    PAYABLE,
    Payout,
    PayoutState,
    WalletRound,
    payment_order,
    wallet_rounds,
)
from jackpot.payout import metrics

Listener = Callable[[str], None]  # told the table whose payouts changed


class PayoutBook:
    """The payouts of the partitions this instance owns, and who listens to a table's changes."""

    def __init__(self) -> None:
        self.payouts: dict[str, Payout] = {}
        self.partition_of: dict[str, int] = {}
        # Views of the same payouts, kept by one pair (_index, _unindex), so that each reader
        # costs what it reads, not what is open (a studio round's thousands of prizes, O9):
        self._open: dict[str, Payout] = {}  # the metrics, ListPayouts' pending ones
        self._awaiting: dict[str, Payout] = {}  # what a supervisor decides (D3, O9)
        self._at_terminals: dict[str, dict[str, Payout]] = {}  # by table: what its terminal acts on
        self._to_wallets: dict[str, dict[str, Payout]] = {}  # by studio table: its rounds' counts
        self._payable_to_wallets: dict[str, Payout] = {}  # what the wallet payer scans
        self._listeners: list[Listener] = []
        self._terminals: Counter[str] = Counter()  # connected dealer terminals by table
        self.changes = 0  # how many times the book changed: a reader rescans only after one
        metrics.PENDING.set_function(lambda: len(self._open))
        metrics.OLDEST_PENDING.set_function(self._oldest_pending_seconds)

    def put(self, partition: int, payout: Payout) -> None:
        self.put_many(partition, [payout])

    def put_many(self, partition: int, payouts: Iterable[Payout]) -> None:
        """Payouts of ``partition`` at their latest state, the tables told once."""
        tables = set()
        for payout in payouts:
            self._unindex(self.payouts.get(payout.award_id))
            self.payouts[payout.award_id] = payout
            self.partition_of[payout.award_id] = partition
            self._index(payout)
            tables.add(payout.table_id)
        self._notify(tables)

    def drop(self, award_ids: Iterable[str]) -> None:
        """Settled payouts past their keep time: no longer in the book."""
        tables = set()
        for award_id in award_ids:
            payout = self.payouts.pop(award_id, None)
            self.partition_of.pop(award_id, None)
            if payout is not None:
                self._unindex(payout)
                tables.add(payout.table_id)
        self._notify(tables)

    def forget(self, partition: int) -> None:
        """The partition moved to another instance: its payouts are no longer ours to show."""
        gone = [a for a, p in self.partition_of.items() if p == partition]
        tables = {self.payouts[a].table_id for a in gone}
        for award_id in gone:
            self._unindex(self.payouts.pop(award_id))
            del self.partition_of[award_id]
        self._notify(tables)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def attend(self, table_id: str) -> None:
        """A dealer terminal of ``table_id`` is connected and shown its payouts."""
        self._terminals[table_id] += 1
        self._refresh_unattended({table_id})

    def leave(self, table_id: str) -> None:
        self._terminals[table_id] -= 1
        if self._terminals[table_id] <= 0:
            del self._terminals[table_id]
        self._refresh_unattended({table_id})

    def unsubscribe(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    def open_for(self, table_id: str) -> list[Payout]:
        """A table's payouts its terminal acts on, in payment order (rule S5): every open one
        of a land table's; of a studio table's (paid to wallets, O9) only those awaiting a
        supervisor's approval."""
        return sorted(self._at_terminals.get(table_id, {}).values(), key=payment_order)

    def payable_to_wallets(self) -> list[Payout]:
        """The studio prizes a wallet may be credited now (O9): ordered, or approved."""
        return list(self._payable_to_wallets.values())

    def wallet_rounds_of(self, table_id: str) -> list[WalletRound]:
        """A studio table's rounds of prizes to wallets (O9), counted for its terminal."""
        return wallet_rounds(self._to_wallets.get(table_id, {}).values())

    def _index(self, payout: Payout) -> None:
        """``payout`` into each view its state and table put it in."""
        award_id, table_id, state = payout.award_id, payout.table_id, payout.state
        if state in OPEN:
            self._open[award_id] = payout
            if not payout.to_wallet or state is PayoutState.AWAITING_APPROVAL:
                self._at_terminals.setdefault(table_id, {})[award_id] = payout
        if state is PayoutState.AWAITING_APPROVAL:
            self._awaiting[award_id] = payout
        if payout.to_wallet:
            self._to_wallets.setdefault(table_id, {})[award_id] = payout
            if state in PAYABLE:
                self._payable_to_wallets[award_id] = payout

    def _unindex(self, payout: Payout | None) -> None:
        """``payout`` (as it was indexed) out of every view."""
        if payout is None:
            return
        award_id, table_id = payout.award_id, payout.table_id
        self._open.pop(award_id, None)
        self._awaiting.pop(award_id, None)
        self._payable_to_wallets.pop(award_id, None)
        for view in (self._at_terminals, self._to_wallets):
            prizes = view.get(table_id)
            if prizes is not None:
                prizes.pop(award_id, None)
                if not prizes:
                    del view[table_id]

    def listing(
        self,
        pending_only: bool,
        after: tuple[int, str] | None = None,
        limit: int | None = None,
        awaiting_approval_only: bool = False,
    ) -> list[Payout]:
        """In payment order (S5): those after ``after`` (a payout's order and award id), at most
        ``limit`` of them; all the book holds, the open ones (``pending_only``), or those
        awaiting a supervisor (``awaiting_approval_only``). A page costs what its view holds,
        not a sort of it."""
        chosen: Iterable[Payout] = (
            self._awaiting.values()
            if awaiting_approval_only
            else self._open.values()
            if pending_only
            else self.payouts.values()
        )
        if after is not None:
            chosen = (p for p in chosen if payment_order(p) > after)
        if limit is None:
            return sorted(chosen, key=payment_order)
        return heapq.nsmallest(limit, chosen, key=payment_order)

    def _notify(self, tables: set[str]) -> None:
        self.changes += 1
        for table_id in tables:
            for listener in list(self._listeners):
                listener(table_id)
        self._refresh_unattended(tables)

    def _refresh_unattended(self, tables: Iterable[str]) -> None:
        """Rule D3: a prize is payable only where its table's terminal shows it. A table with a
        terminal connected shows 0 (the series exists while all is well); a table with neither a
        terminal nor a prize owed has no series."""
        for table_id in tables:
            if table_id in self._terminals:
                metrics.UNATTENDED.labels(table=table_id).set(0)
            elif owed := self._owed(table_id):
                metrics.UNATTENDED.labels(table=table_id).set(owed)
            else:  # a series never set is no error to remove (prometheus-client >= 0.26)
                metrics.UNATTENDED.remove(table_id)

    def _owed(self, table_id: str) -> int:
        """The open prizes a table's terminal pays: a studio prize is paid to its player's
        wallet, at no terminal (O9), so it is never owed."""
        return sum(not p.to_wallet for p in self._at_terminals.get(table_id, {}).values())

    def _oldest_pending_seconds(self) -> float:
        """At a scrape: how long ago the oldest open payout was ordered (0 with none)."""
        oldest = min((p.ordered_at_ns for p in self._open.values()), default=None)
        return 0.0 if oldest is None else (time.time_ns() - oldest) / 1e9
