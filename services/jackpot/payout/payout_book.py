"""The payouts an instance serves (:class:`PayoutBook`): those of the awards partitions it owns,
at their latest state, by award id, and who listens to a table's changes (its dealer terminals'
streams). The payout metrics read the book: pending and the oldest at each scrape, unattended by
table (D3) for the tables a change touched, so that a change costs what it changed, not what is
open (a studio round's 10,000 prizes, O9). The payout service (:mod:`jackpot.payout.service`)
fills it in as its transactions commit and empties a partition it loses."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable

from jackpot.domain.payout import (
    OPEN,
    PAYABLE,
    Payout,
    PayoutState,
    WalletRound,
    wallet_rounds,
)
from jackpot.payout import metrics

Listener = Callable[[str], None]  # told the table whose payouts changed


class PayoutBook:
    """The payouts of the partitions this instance owns, and who listens to a table's changes."""

    def __init__(self) -> None:
        self.payouts: dict[str, Payout] = {}
        self.partition_of: dict[str, int] = {}
        # the open ones among them: what the metrics and the terminals' lists read, so their
        # cost is what is open, not what was paid within the keep time (a studio round's
        # thousands of prizes, O9)
        self._open: dict[str, Payout] = {}
        # a studio table's prizes to wallets (O9), by table: what its terminal's rounds count,
        # so that a land table's push reads none of them
        self._to_wallets: dict[str, dict[str, Payout]] = {}
        self._listeners: list[Listener] = []
        self._terminals: Counter[str] = Counter()  # connected dealer terminals by table
        self._owed: Counter[str] = Counter()  # open prizes a table's terminal pays, by table
        self._payable_to_wallets: dict[str, Payout] = {}  # what the wallet payer scans (O9)
        self.changes = 0  # how many times the book changed: a reader rescans only after one
        metrics.PENDING.set_function(lambda: len(self._open))
        metrics.OLDEST_PENDING.set_function(self._oldest_pending_seconds)

    def put(self, partition: int, payout: Payout) -> None:
        self.put_many(partition, [payout])

    def put_many(self, partition: int, payouts: Iterable[Payout]) -> None:
        """Payouts of ``partition`` at their latest state, the tables told once."""
        tables = set()
        for payout in payouts:
            self._unowe(self.payouts.get(payout.award_id))
            self.payouts[payout.award_id] = payout
            self.partition_of[payout.award_id] = partition
            if _owed(payout):
                self._owed[payout.table_id] += 1
            if payout.state in OPEN:
                self._open[payout.award_id] = payout
            else:
                self._open.pop(payout.award_id, None)
            if payout.to_wallet:
                self._to_wallets.setdefault(payout.table_id, {})[payout.award_id] = payout
                if payout.state in PAYABLE:
                    self._payable_to_wallets[payout.award_id] = payout
                else:
                    self._payable_to_wallets.pop(payout.award_id, None)
            tables.add(payout.table_id)
        self._notify(tables)

    def drop(self, award_ids: Iterable[str]) -> None:
        """Settled payouts past their keep time: no longer in the book."""
        tables = set()
        for award_id in award_ids:
            payout = self.payouts.pop(award_id, None)
            self.partition_of.pop(award_id, None)
            self._open.pop(award_id, None)
            self._unowe(payout)
            if payout is not None:
                self._unindex(payout)
                tables.add(payout.table_id)
        self._notify(tables)

    def forget(self, partition: int) -> None:
        """The partition moved to another instance: its payouts are no longer ours to show."""
        gone = [a for a, p in self.partition_of.items() if p == partition]
        tables = {self.payouts[a].table_id for a in gone}
        for award_id in gone:
            payout = self.payouts.pop(award_id)
            self._unowe(payout)
            self._unindex(payout)
            del self.partition_of[award_id]
            self._open.pop(award_id, None)
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
        return sorted(
            (
                p
                for p in self._open.values()
                if p.table_id == table_id
                and (not p.to_wallet or p.state is PayoutState.AWAITING_APPROVAL)
            ),
            key=lambda p: (p.order, p.award_id),
        )

    def payable_to_wallets(self) -> list[Payout]:
        """The studio prizes a wallet may be credited now (O9): ordered, or approved."""
        return list(self._payable_to_wallets.values())

    def wallet_rounds_of(self, table_id: str) -> list[WalletRound]:
        """A studio table's rounds of prizes to wallets (O9), counted for its terminal."""
        return wallet_rounds(self._to_wallets.get(table_id, {}).values())

    def _unindex(self, payout: Payout) -> None:
        self._payable_to_wallets.pop(payout.award_id, None)
        prizes = self._to_wallets.get(payout.table_id)
        if prizes is not None:
            prizes.pop(payout.award_id, None)
            if not prizes:
                del self._to_wallets[payout.table_id]

    def listing(
        self, pending_only: bool, after: tuple[int, str] | None = None, limit: int | None = None
    ) -> list[Payout]:
        """In payment order (S5): those after ``after`` (a payout's order and award id), at most
        ``limit`` of them."""
        chosen: Iterable[Payout] = self._open.values() if pending_only else self.payouts.values()
        if after is not None:
            chosen = [p for p in chosen if (p.order, p.award_id) > after]
        return sorted(chosen, key=lambda p: (p.order, p.award_id))[:limit]

    def _notify(self, tables: set[str]) -> None:
        self.changes += 1
        for table_id in tables:
            for listener in list(self._listeners):
                listener(table_id)
        self._refresh_unattended(tables)

    def _unowe(self, payout: Payout | None) -> None:
        if payout is not None and _owed(payout):
            self._owed[payout.table_id] -= 1
            if self._owed[payout.table_id] <= 0:
                del self._owed[payout.table_id]

    def _refresh_unattended(self, tables: Iterable[str]) -> None:
        """Rule D3: a prize is payable only where its table's terminal shows it. A table with a
        terminal connected shows 0 (the series exists while all is well); a table with neither a
        terminal nor a prize owed has no series."""
        for table_id in tables:
            if table_id in self._terminals:
                metrics.UNATTENDED.labels(table=table_id).set(0)
            elif self._owed[table_id] > 0:
                metrics.UNATTENDED.labels(table=table_id).set(self._owed[table_id])
            else:  # a series never set is no error to remove (prometheus-client >= 0.26)
                metrics.UNATTENDED.remove(table_id)

    def _oldest_pending_seconds(self) -> float:
        """At a scrape: how long ago the oldest open payout was ordered (0 with none)."""
        oldest = min((p.ordered_at_ns for p in self._open.values()), default=None)
        return 0.0 if oldest is None else (time.time_ns() - oldest) / 1e9


def _owed(payout: Payout) -> bool:
    """Open, and paid at its table's terminal: a studio prize is paid to its player's wallet,
    at no terminal (O9), so it is never unattended."""
    return payout.state in OPEN and not payout.to_wallet
