"""A pot group's books recomputed from its ledger, its hash chain and its checkpoints (D4, M2, R2).

Pure, no I/O. :class:`GroupAudit` replays ledger entries into exact picopeso accounts and notes
every problem (a sequence gap or repeat, a pot debited by neither an award nor a reseed, a
collection whose transfers differ from its bets, a payment that matches no award). It is the one
judge of a ledger: ``jackpot audit`` (the whole ledger, or from a checkpoint it verified before),
the pot's takeover check (R14, :mod:`jackpot.pot.ledger_restore`), ``jackpot report`` and
``jackpot restore --from-ledger`` all use it.

The ledger is hash-chained: the pot service folds every entry it writes for a group into
``chain = sha256(chain || sha256(entry bytes))`` (starting from :data:`GENESIS`) and keeps the
value in the group's state. At a bounded interval it writes a ``CHECKPOINT`` entry
(:func:`checkpoint_detail`) holding the chain before it and every figure a takeover compares. An
audit that follows the chain checks each checkpoint against its own figures and chain, so a
verifier that trusted a checkpoint once can start from it (:meth:`GroupAudit.from_checkpoint`)
instead of re-reading what it already verified, and a takeover reads only the entries since the
last checkpoint. A reader that has not verified the entries before a checkpoint (``jackpot report``
reading a window) asks :func:`checkpoint_disagreement` whether the checkpoint at least agrees with
itself before it begins there.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jackpot.domain.canonical import canonical_json
from jackpot.domain.engine import PotGroup
from jackpot.domain.money import MINOR_PER_PESO, floor_pesos, format_amount
from jackpot.platform import codec
from jackpot.pot.level_books import LevelBooks
from jackpot.pot.records import award_from_dict
from jackpot.v1 import pot_pb2

RECENT_IDS = 100_000  # entry and award ids remembered to see a replay (bounded memory)
GENESIS = bytes(32)  # the chain before a group's first entry
CHECKPOINT = pot_pb2.LEDGER_ENTRY_TYPE_CHECKPOINT
BETS_COLLECTED = pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED
AWARD_TYPES = frozenset(
    {pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED, pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED}
)
# The only entries that may take money out of a pot (R2): a prize paid from it, and the S8 top-up
# that moves reserves to the main pot after a reset. There is no correction entry.
POT_DEBIT_TYPES = AWARD_TYPES | {pot_pb2.LEDGER_ENTRY_TYPE_POT_RESEEDED}
# Written by the payout service: no ledger_sequence, no transfers (the money moved at award).
# Entries that state the configuration in force: its levels and the level that pays each prize.
CONFIG_STATING_TYPES = frozenset(
    {pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED, pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED}
)
PAYOUT_TYPES = frozenset(
    {
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED,
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_AWAITING_APPROVAL,
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_APPROVED,
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID,
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_VOIDED,
    }
)
_OVERFLOW_KEY = '"overflow":'
_DECODER = json.JSONDecoder()
_sha256 = hashlib.sha256


class RecentIds:
    """The last ``limit`` ids seen, oldest first: membership and eviction in O(1).

    (A dict evicted from its front is not: ``next(iter(d))`` walks the deleted slots before the
    first live one, and an audit of a million entries slowed to a third of its speed.)"""

    def __init__(self, ids: Iterable[str] = (), limit: int = RECENT_IDS) -> None:
        if limit < 1:
            raise ValueError(f"a window of {limit} recent ids")
        self._order: deque[str] = deque(maxlen=limit)  # appending to a full one drops the oldest
        self._members: set[str] = set()
        self._limit = limit
        for key in ids:
            self.add(key)

    def __contains__(self, key: object) -> bool:
        return key in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def add(self, key: str) -> bool:
        """Remember ``key``; False when it was already among the recent ids."""
        members = self._members
        if key in members:
            return False
        order = self._order
        if len(order) == self._limit:
            members.discard(order[0])
        order.append(key)
        members.add(key)
        return True


@dataclass
class GroupAudit:
    """One pot group recomputed from its ledger."""

    group_id: str
    accounts: Counter[str] = field(default_factory=Counter)
    entries: int = 0
    last_sequence: int = 0
    overflow: int = 0
    hits: Counter[str] = field(default_factory=Counter)
    wins: Counter[str] = field(default_factory=Counter)
    # Bounded whatever the history: awards neither paid nor voided (award id -> whole pesos),
    # and a window of the most recent entry and award ids (a replayed event repeats them).
    open_awards: dict[str, int] = field(default_factory=dict)
    recent_ids: RecentIds = field(default_factory=RecentIds)
    paid_count: int = 0
    paid_pesos: int = 0
    voided_count: int = 0
    config_version: int = 0
    problems: list[str] = field(default_factory=list)
    update: pot_pb2.PotUpdate | None = None
    # The hash chain after the last entry added; None when it cannot be followed (entries added
    # without their bytes, or an audit that began mid-ledger without a checkpoint).
    chain: bytes | None = GENESIS
    checkpoints: int = 0  # checkpoint entries verified
    checkpoint_sequence: int = 0  # ledger_sequence of the last one
    # picopesos moved from bets into each account by the entries added (not saved with the
    # books: a report takes its difference over a period)
    from_bets: Counter[str] = field(default_factory=Counter)
    # The books level by level (L1-L4, V1-V3), for a group whose configuration states levels;
    # None for a one-level group, whose audit is as it was before levels existed.
    levels: LevelBooks | None = None

    @classmethod
    def from_checkpoint(cls, entry: pot_pb2.LedgerEntry, raw: bytes) -> GroupAudit:
        """The books as a checkpoint entry states them, to audit the entries after it.

        The checkpoint itself is trusted: whoever starts here verified it before (the pot wrote
        it; ``jackpot audit`` checks every one against the entries it follows)."""
        detail = json.loads(entry.detail_json)
        audit = cls(entry.pot_group_id, chain=bytes.fromhex(detail["chain"]))
        audit.accounts.update(
            {
                "bets": -int(detail["collected"]),
                "house": -int(detail["house_advances"]),
                "commission": int(detail["commission"]),
                "awards": int(detail["awarded"]),
            }
        )
        audit.accounts.update({f"pot:{k}": int(v) for k, v in detail["pots"].items()})
        audit.overflow = int(detail["overflow"])
        audit.hits.update({k: int(v) for k, v in detail["hits"].items()})
        audit.wins.update({k: int(v) for k, v in detail["wins"].items()})
        audit.last_sequence = entry.ledger_sequence - 1
        audit.levels = LevelBooks.for_config(detail["state"]["config"], audit.pots)
        audit.add(entry, raw)
        return audit

    def figures(self) -> dict[str, Any]:
        """What a checkpoint states, as this audit computed it (picopesos; hits and wins)."""
        return {
            "collected": self.collected,
            "commission": self.accounts["commission"],
            "awarded": self.accounts["awards"],
            "house_advances": self.house_advances,
            "pots": {k: v for k, v in self.pots.items() if v},
            "overflow": self.overflow,
            "hits": {k: v for k, v in sorted(self.hits.items()) if v},
            "wins": {k: v for k, v in sorted(self.wins.items()) if v},
        }

    @property
    def collected(self) -> int:
        return -self.accounts["bets"]

    @property
    def house_advances(self) -> int:
        return -self.accounts["house"]

    @property
    def pots(self) -> dict[str, int]:
        return {
            name.removeprefix("pot:"): amount
            for name, amount in sorted(self.accounts.items())
            if name.startswith("pot:")
        }

    def add(self, entry: pot_pb2.LedgerEntry, raw: bytes | None = None) -> None:
        """One entry, in ledger order; ``raw`` (its bytes as the ledger holds them) lets the
        audit follow the hash chain and verify checkpoints."""
        self.entries += 1
        kind = entry.type
        if kind in PAYOUT_TYPES:
            self._add_payout(entry)
            return
        if kind == CHECKPOINT:
            self._check_checkpoint(entry)
        chain = self.chain
        self.chain = None if raw is None or chain is None else chain_next(chain, raw)
        sequence, entry_id, last = entry.ledger_sequence, entry.entry_id, self.last_sequence
        if sequence != last + 1:
            self.problems.append(
                f"ledger_sequence {sequence} follows {last} "
                f"(entry {entry_id}): a gap or a duplicate"
            )
            sequence = max(last, sequence)
        self.last_sequence = sequence
        if not self.recent_ids.add(entry_id):
            self.problems.append(f"entry {entry_id} appears twice")
        self.config_version = entry.config_version
        transfers = entry.transfers
        moved_from_bets, moves = self._transfers(entry, kind, transfers) if transfers else (0, [])
        if kind in CONFIG_STATING_TYPES or (
            self.levels is not None and (moves or kind in AWARD_TYPES)
        ):
            self._add_levels(entry, kind, moves)
        if kind == BETS_COLLECTED:
            if moved_from_bets != entry.amount * MINOR_PER_PESO:
                self.problems.append(
                    f"entry {entry_id}: bets of {entry.amount} pesos but "
                    f"{format_amount(moved_from_bets)} moved from bets"
                )
            self.overflow += overflow_of(entry.detail_json)
        elif kind in AWARD_TYPES:
            award_id = json.loads(entry.detail_json).get("award_id", "")
            self._once(f"award:{award_id}", f"award {award_id} appears twice")
            self.open_awards[award_id] = entry.amount
            self.hits[entry.prize] += 1
            self.wins[entry.prize] += entry.amount

    def _add_levels(
        self, entry: pot_pb2.LedgerEntry, kind: int, moves: list[tuple[str, str, int]]
    ) -> None:
        """The entry in the books per level (L1-L4): a configuration it states, its transfers."""
        try:
            detail = json.loads(entry.detail_json)
        except ValueError as error:
            self.problems.append(f"entry {entry.entry_id}: detail unreadable ({error})")
            return
        if kind in CONFIG_STATING_TYPES and isinstance(detail.get("config"), dict):
            before = Counter(self.accounts)  # the levels begin before this entry's moves
            for source, target, amount in moves:
                before[source] += amount
                before[target] -= amount
            pots = {k.removeprefix("pot:"): v for k, v in before.items() if k.startswith("pot:")}
            if self.levels is None:
                self.levels = LevelBooks.for_config(detail["config"], pots)
            else:
                self.levels.reconfigure(detail["config"], pots)
        if self.levels is not None and (moves or kind in AWARD_TYPES):
            self.levels.add(entry.entry_id, detail, moves)
            self.problems += self.levels.problems
            self.levels.problems.clear()

    def _transfers(
        self, entry: pot_pb2.LedgerEntry, kind: int, transfers: Iterable[pot_pb2.Transfer]
    ) -> tuple[int, list[tuple[str, str, int]]]:
        """The entry's transfers into the accounts; the picopesos it moved from ``bets``, and
        the transfers read (source, target, picopesos)."""
        moved_from_bets = 0
        moves: list[tuple[str, str, int]] = []
        accounts, from_bets = self.accounts, self.from_bets
        debits_pots = kind in POT_DEBIT_TYPES
        for transfer in transfers:
            exact = transfer.amount
            if exact.denominator == 1:  # whole pesos, as the pot writes them (codec.minor_units)
                amount = exact.numerator * MINOR_PER_PESO
            else:
                try:
                    amount = codec.minor_units(exact)
                except ValueError as error:
                    self.problems.append(f"entry {entry.entry_id}: {error}")
                    continue
            source, target = transfer.source, transfer.target
            if amount <= 0:
                self.problems.append(f"entry {entry.entry_id}: transfer of {amount} minor units")
            if source == "bets":  # most transfers: a collection's
                moved_from_bets += amount
                from_bets[target] += amount
            elif not debits_pots and source.startswith("pot:"):
                self.problems.append(
                    f"R2: {source} decreased by {format_amount(amount)} in entry "
                    f"{entry.entry_id} ({pot_pb2.LedgerEntryType.Name(kind)}), which is "
                    "neither an award nor a reseed"
                )
            accounts[source] -= amount
            accounts[target] += amount
            moves.append((source, target, amount))
        return moved_from_bets, moves

    def _check_checkpoint(self, entry: pot_pb2.LedgerEntry) -> None:
        """A checkpoint must state exactly this audit's figures and the chain before it."""
        if entry.transfers:
            self.problems.append(f"checkpoint {entry.entry_id} moves money")
        try:
            detail = json.loads(entry.detail_json)
            stated = {name: detail[name] for name in self.figures()}
            stated_chain = str(detail["chain"])
        except (ValueError, KeyError, TypeError) as error:
            self.problems.append(f"checkpoint {entry.entry_id} is unreadable: {error!r}")
            return
        mine = self.figures()
        wrong = [
            f"{name} {stated[name]} != {mine[name]}" for name in mine if stated[name] != mine[name]
        ]
        if wrong:
            self.problems.append(
                f"checkpoint at ledger entry {entry.ledger_sequence} disagrees with the entries "
                f"before it (checkpoint != ledger): {'; '.join(wrong)}"
            )
        if self.chain is not None and stated_chain != self.chain.hex():
            self.problems.append(
                f"checkpoint at ledger entry {entry.ledger_sequence}: the hash chain of the "
                f"entries before it is {self.chain.hex()[:16]}..., the checkpoint states "
                f"{stated_chain[:16]}... (an entry was altered, removed or added)"
            )
        self.checkpoints += 1
        self.checkpoint_sequence = entry.ledger_sequence

    def _once(self, key: str, problem: str) -> None:
        """A duplicate within the last RECENT_IDS ids is a problem (a replayed event)."""
        if not self.recent_ids.add(key):
            self.problems.append(problem)

    def _add_payout(self, entry: pot_pb2.LedgerEntry) -> None:
        """A payout lifecycle step: it moves no money; a payment or a void settles exactly one
        open award, and a payment must equal its amount."""
        self._once(entry.entry_id, f"entry {entry.entry_id} appears twice")
        if entry.transfers or entry.ledger_sequence:
            self.problems.append(f"payout entry {entry.entry_id} moves money or is sequenced")
        award_id = entry.source_event_id
        if entry.type not in (
            pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID,
            pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_VOIDED,
        ):
            return
        awarded = self.open_awards.pop(award_id, None)
        if entry.type == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_VOIDED:
            self.voided_count += 1
            if awarded is None:
                self.problems.append(f"award {award_id} voided, but it is not open")
            return
        self.paid_count += 1
        self.paid_pesos += entry.amount
        if awarded is None:
            self.problems.append(
                f"payment of {entry.amount} for award {award_id}, which is not open "
                "(never awarded, already paid or voided): paid twice?"
            )
        elif awarded != entry.amount:
            self.problems.append(
                f"payment of {entry.amount} for award {award_id}, which awarded {awarded}"
            )

    def finish(self) -> None:
        """The checks that need the whole ledger and the latest pot update."""
        pots = self.pots
        commission = self.accounts["commission"]
        awarded = self.accounts["awards"]
        left = self.collected + self.house_advances
        right = commission + sum(pots.values()) + awarded
        if left != right:
            self.problems.append(
                f"M2 broken: collected {format_amount(self.collected)} + house "
                f"{format_amount(self.house_advances)} != commission {format_amount(commission)} "
                f"+ pots {format_amount(sum(pots.values()))} + awarded {format_amount(awarded)}"
            )
        unknown = (
            set(self.accounts)
            - {"bets", "house", "commission", "awards"}
            - {f"pot:{name}" for name in pots}
        )
        if unknown:
            self.problems.append(f"transfers name unknown accounts {sorted(unknown)}")
        for name, balance in pots.items():
            if balance < 0:
                self.problems.append(f"pot {name} is negative: {format_amount(balance)}")
        if self.levels is not None:
            self.problems += self.levels.finish(pots)
        if awarded != sum(self.wins.values()) * MINOR_PER_PESO:
            self.problems.append(
                f"awards account {format_amount(awarded)} != prizes awarded "
                f"{sum(self.wins.values())}"
            )
        if self.update is None:
            self.problems.append("no pot update found for the group")
            return
        shown = {p.name: codec.minor_units(p.balance) for p in self.update.pots}
        if any(pots.get(name, 0) != shown.get(name, 0) for name in {*pots, *shown}):
            self.problems.append(
                f"balances differ from the latest pot update #{self.update.update_sequence}: "
                f"ledger { {k: format_amount(v) for k, v in pots.items()} }, "
                f"update { {k: format_amount(v) for k, v in shown.items()} }"
            )
        if self.update.sign_value != floor_pesos(pots.get("main", 0)):
            self.problems.append(
                f"sign value {self.update.sign_value} is not the main pot floored (M3)"
            )


def overflow_of(detail_json: str) -> int:
    """The picopesos a collection's detail says overflowed a capped pot (``"overflow"``: a list
    of [from, to, amount]); only that list is parsed (canonical JSON: usually ``[]``)."""
    at = detail_json.find(_OVERFLOW_KEY)
    if at < 0:
        return 0
    at += len(_OVERFLOW_KEY)
    while detail_json[at : at + 1] in (" ", "\n", "\t", "\r"):
        at += 1
    if detail_json.startswith("[]", at):
        return 0
    moves, _ = _DECODER.raw_decode(detail_json, at)
    total = 0
    for _, _, amount in moves:
        total += int(amount)
    return total


def chain_next(chain: bytes, raw_entry: bytes) -> bytes:
    """The hash chain after one more entry (its serialized bytes, as written to the ledger)."""
    return _sha256(chain + _sha256(raw_entry).digest()).digest()


def checkpoint_detail(
    group: PotGroup, chain: bytes, previous_sequence: int, table_sequences: Mapping[str, int]
) -> dict[str, Any]:
    """A checkpoint's detail_json: the group's figures, the chain of every entry before it, the
    previous checkpoint's sequence, the group's public state (no mystery trigger, X2) and the
    highest table-event sequence applied per table (a restore rebuilds idempotency from it)."""
    return {
        "type": "Checkpoint",
        "chain": chain.hex(),
        "previous_sequence": previous_sequence,
        "collected": group.collected,
        "commission": group.commission,
        "awarded": group.awarded,
        "house_advances": group.house_advance,
        "pots": {k: v for k, v in sorted(group.balances.items()) if v},
        "overflow": group.overflow,
        "hits": {k: v for k, v in sorted(group.hits.items()) if v},
        "wins": {k: v for k, v in sorted(group.wins.items()) if v},
        "state": json.loads(group.snapshot(public=True)),
        "table_sequences": dict(sorted(table_sequences.items())),
    }


def checkpoint_state(entry: pot_pb2.LedgerEntry) -> bytes:
    """The public engine snapshot a checkpoint holds (``PotGroup.from_ledger(start=...)``)."""
    return canonical_json(json.loads(entry.detail_json)["state"]).encode()


def audit_to_dict(audit: GroupAudit) -> dict[str, Any]:
    """Everything an audit needs to go on from here later (``jackpot audit --state``)."""
    return {
        "group_id": audit.group_id,
        "accounts": dict(audit.accounts),
        "entries": audit.entries,
        "last_sequence": audit.last_sequence,
        "overflow": audit.overflow,
        "hits": dict(audit.hits),
        "wins": dict(audit.wins),
        "open_awards": audit.open_awards,
        "recent_ids": list(audit.recent_ids),
        "paid_count": audit.paid_count,
        "paid_pesos": audit.paid_pesos,
        "voided_count": audit.voided_count,
        "config_version": audit.config_version,
        "chain": None if audit.chain is None else audit.chain.hex(),
        "checkpoints": audit.checkpoints,
        "checkpoint_sequence": audit.checkpoint_sequence,
        "levels": None if audit.levels is None else audit.levels.to_dict(),
    }


def audit_from_dict(data: dict[str, Any]) -> GroupAudit:
    """An audit saved by :func:`audit_to_dict`, to add the entries after it."""
    chain = data["chain"]
    levels = data.get("levels")  # an audit state saved before levels existed has none
    return GroupAudit(
        group_id=str(data["group_id"]),
        accounts=Counter({k: int(v) for k, v in data["accounts"].items()}),
        entries=int(data["entries"]),
        last_sequence=int(data["last_sequence"]),
        overflow=int(data["overflow"]),
        hits=Counter({k: int(v) for k, v in data["hits"].items()}),
        wins=Counter({k: int(v) for k, v in data["wins"].items()}),
        open_awards={k: int(v) for k, v in data["open_awards"].items()},
        recent_ids=RecentIds(str(i) for i in data["recent_ids"]),
        paid_count=int(data["paid_count"]),
        paid_pesos=int(data["paid_pesos"]),
        voided_count=int(data["voided_count"]),
        config_version=int(data["config_version"]),
        chain=None if chain is None else bytes.fromhex(chain),
        checkpoints=int(data["checkpoints"]),
        checkpoint_sequence=int(data["checkpoint_sequence"]),
        levels=None if levels is None else LevelBooks.from_dict(levels),
    )


def checkpoint_disagreement(entry: pot_pb2.LedgerEntry) -> str:
    """Why a checkpoint cannot begin a group's books ('' when it can): it must be readable, its
    figures must conserve (M2) and equal those of the engine state it holds, for the group and
    configuration version the entry names. (That they equal the entries before it is what
    `jackpot audit` verifies, and what a later checkpoint read states.)"""
    where = f"checkpoint at ledger entry {entry.ledger_sequence}"
    try:
        detail = json.loads(entry.detail_json)
        bytes.fromhex(str(detail["chain"]))
        stated = _figures(detail, detail["house_advances"], detail["pots"])
        state = detail["state"]
        held = _figures(state, state["house_advance"], state["balances"])
        versions = [int(state["config"]["version"])]
        versions += [int(config["version"]) for config, _, _ in state["pending"]]
        for award in state["last_awards"]:
            award_from_dict(award)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        return f"{where} is unreadable ({error!r})"
    wrong = [f"{k} {stated[k]} != {held[k]}" for k in stated if stated[k] != held[k]]
    if wrong:
        return f"{where} disagrees with the state it holds: {'; '.join(wrong)}"
    left = stated["collected"] + stated["house_advances"]
    right = stated["commission"] + stated["awarded"] + sum(stated["pots"].values())
    if left != right:
        return (
            f"{where} does not conserve (M2): collected + house advances {format_amount(left)} "
            f"!= commission + awarded + pots {format_amount(right)}"
        )
    if state.get("group_id") != entry.pot_group_id or versions[0] != entry.config_version:
        return f"{where} holds the state of {state.get('group_id')} v{versions[0]}"
    return ""


def _figures(source: Mapping[str, Any], house: Any, pots: Mapping[str, Any]) -> dict[str, Any]:
    """The figures a checkpoint states twice (as its own and in its state), to compare."""

    def nonzero(values: Mapping[str, Any]) -> dict[str, int]:
        return {str(k): int(v) for k, v in sorted(values.items()) if int(v)}

    return {
        "collected": int(source["collected"]),
        "commission": int(source["commission"]),
        "awarded": int(source["awarded"]),
        "house_advances": int(house),
        "pots": nonzero(pots),
        "overflow": int(source["overflow"]),
        "hits": nonzero(source["hits"]),
        "wins": nonzero(source["wins"]),
    }
