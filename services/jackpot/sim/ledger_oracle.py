"""The round oracle against a ledger: every award the ledger holds compared with the rules' own.

:class:`LedgerOracle` follows a pot ledger entry by entry (the balances before each round come
from the ledger's own transfers; checkpoints and the payout service's entries move no money and
are skipped) and compares every award with what the rules model (:mod:`jackpot.sim.oracle`)
gives for the round as the floor dealt it (:class:`~jackpot.sim.oracle.Dealt`);
``jackpot.sim.books.judge`` reports what disagrees, award by award. Like the model, it shares no
code with ``jackpot.domain``: it reads only the ledger's message types.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from jackpot.sim.oracle import (
    Config,
    Dealt,
    Funding,
    Outcome,
    Refused,
    RoundKey,
    collect,
    money_text,
    mystery_commitment,
    read_config,
    resolve,
)
from jackpot.sim.oracle_cards import RULES_PAYTABLES
from jackpot.v1 import pot_pb2

EXAMPLES = 20  # mismatches listed by name, per kind

CHECKPOINT = pot_pb2.LEDGER_ENTRY_TYPE_CHECKPOINT
# Entries that move no money and are not the pot's own: checkpoints, the payout service's.
SKIPPED = frozenset(
    {
        CHECKPOINT,
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_ORDERED,
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_AWAITING_APPROVAL,
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_APPROVED,
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID,
        pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_VOIDED,
    }
)


def funding(entry: pot_pb2.LedgerEntry) -> Funding:
    """An entry's transfers as (source, exact pesos), in order."""
    return tuple(
        (t.source, Fraction(t.amount.numerator, t.amount.denominator or 1)) for t in entry.transfers
    )


@dataclass(frozen=True, slots=True)
class LedgerAward:
    award_id: str
    seat: int
    prize: str
    amounts: frozenset[int]  # the entry's amount and its detail's: one value in a sound ledger
    funded: Funding
    level: str = ""  # L4: the level the ledger says paid it
    table: str = ""  # V2: the other table it was paid at ("": the settled round's own)
    hit: int | None = None  # V1: for an envy bonus, the winning seat it names

    @property
    def key(self) -> tuple[str, int, str, int | None]:
        return (self.table, self.seat, self.prize, self.hit)


@dataclass
class RoundInLedger:
    """A round being settled in the ledger: the balances and configuration before it, its awards."""

    before: dict[str, Fraction]
    config: Config
    pending: tuple[Config, ...]
    awards: list[LedgerAward] = field(default_factory=list)
    refills: dict[str, Funding] = field(default_factory=dict)  # by level as the ledger names it


def compare_round(
    where: str, predicted: Outcome, awards: Sequence[LedgerAward], refills: Mapping[str, Funding]
) -> list[tuple[str, str, str]]:
    """(kind, award id, what differs) for every award of the ledger that is not the rules' one,
    every award the rules give that the ledger lacks, and a refill that is not the rules'."""
    found: list[tuple[str, str, str]] = []
    ledger = {a.key: a for a in awards}
    for award in predicted.awards:
        name = f"{where}/{award.seat}/{award.prize}"
        got = ledger.get((award.table, award.seat, award.prize, award.hit))
        if got is None:
            found.append(("missing", name, f"the rules give {award.amount} ({award.why})"))
        elif got.amounts != {award.amount}:
            amounts = "/".join(str(n) for n in sorted(got.amounts))
            text = f"ledger {amounts}, the rules {award.amount} ({award.why})"
            found.append(("amount", got.award_id, text))
        elif got.funded != award.funded:
            text = f"paid from {_funds(got.funded)}, the rules: from {_funds(award.funded)} (S7)"
            found.append(("funding", got.award_id, text))
        elif got.level != award.level:
            text = f"paid by level {got.level!r}, the rules: by {award.level!r} (L2, L4)"
            found.append(("funding", got.award_id, text))
    expected = [(a.table, a.seat, a.prize, a.hit) for a in predicted.awards]
    for paid_award in awards:
        if paid_award.key not in expected:
            amounts = "/".join(str(n) for n in sorted(paid_award.amounts))
            found.append(("unexpected", paid_award.award_id, f"{amounts}; the rules: nothing"))
    paid = [a.key for a in awards]
    if sorted(paid, key=str) == sorted(expected, key=str) and paid != expected:  # S1, S2, S5, V3
        found.append(("order", where, f"paid in the order {paid}, the rules' order {expected}"))
    for level in sorted(refills.keys() | predicted.refills.keys()):
        got_refill, wanted = refills.get(level, ()), predicted.refills.get(level, ())
        if got_refill != wanted:
            text = f"refilled from {_funds(got_refill)}, the rules: from {_funds(wanted)} (S8, L3)"
            found.append(("refill", f"{where}/{level}" if level else where, text))
    return found


def _funds(funded: Funding) -> str:
    return ", ".join(f"{source} {money_text(amount)}" for source, amount in funded) or "nothing"


@dataclass
class GroupInLedger:
    """One pot group as the oracle follows its ledger."""

    balances: dict[str, Fraction] = field(default_factory=dict)
    config: Config | None = None
    pending: list[Config] = field(default_factory=list)
    commitment: str = ""  # X2: the commitment of the hidden trigger in force
    locked_in_cycle: bool = False  # the last lock since that commitment had a bet
    cycle_peak: Fraction | None = None  # the mystery pot after the cycle's locks that paid nothing
    lock: tuple[dict[str, Fraction], dict[int, int]] | None = None  # the last lock: before, bets
    rounds: dict[RoundKey, RoundInLedger] = field(default_factory=dict)
    # V2: each table's locked round as the ledger shows it: (round, bets, forfeited seats)
    locked: dict[str, tuple[str, dict[int, int], set[int]]] = field(default_factory=dict)

    def pots(self) -> dict[str, Fraction]:
        """Each pot's balance by name (``balances`` holds every account, ``pot:<name>`` too)."""
        return {k.removeprefix("pot:"): v for k, v in self.balances.items() if k.startswith("pot:")}


class LedgerOracle:
    """Follows a ledger entry by entry (per pot group, in ledger order) and compares every award
    with what the rules give for the round as the floor dealt it (``dealt``, by round key).

    A lock's collection is checked against C2, C3, C5; a mystery prize against its revealed
    trigger (X2: the amount, the commitment published before the hit, the seat whose bet crossed
    it, no earlier lock of the cycle reaching it); a settled round's awards, their order, their
    funding and the refill after them against :func:`resolve`. :meth:`report` also counts the
    rounds with bets whose results the gateway accepted and the ledger never settled.
    """

    def __init__(self, dealt: Mapping[RoundKey, Dealt]) -> None:
        self.dealt = dealt
        self.groups: dict[str, GroupInLedger] = {}
        self.settled: Counter[RoundKey] = Counter()
        self.counts: Counter[str] = Counter()
        self.mismatches: Counter[str] = Counter()
        self.examples: dict[str, list[str]] = {}
        self.wrong_awards: set[str] = set()

    def add(self, entry: pot_pb2.LedgerEntry) -> None:
        """One ledger entry; it sees the balances before its own transfers."""
        if entry.type in SKIPPED:
            return
        group = self.groups.setdefault(entry.pot_group_id, GroupInLedger())
        detail = json.loads(entry.detail_json or "{}")
        if group.config is None and entry.type != pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED:
            self._mismatch("unjudged", entry.entry_id, "an entry before its group was opened")
        else:
            self._entry(group, entry, detail)
        for transfer in entry.transfers:  # every account, pots and others, by the ledger
            amount = Fraction(transfer.amount.numerator, transfer.amount.denominator or 1)
            balances = group.balances
            balances[transfer.source] = balances.get(transfer.source, Fraction(0)) - amount
            balances[transfer.target] = balances.get(transfer.target, Fraction(0)) + amount

    def _entry(self, group: GroupInLedger, entry: pot_pb2.LedgerEntry, detail: Any) -> None:
        match entry.type:
            case pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED:
                group.config = self._config(detail["config"], entry)
            case pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_PROPOSED:
                group.pending.append(self._config(detail["config"], entry))
            case pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED:
                group.config, group.pending = self._config(detail["config"], entry), []
            case pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_COMMITTED:
                group.commitment = str(detail["commitment"])
                group.locked_in_cycle, group.cycle_peak = False, None
            case pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED:
                self._collected(group, entry, detail)
                bets = {int(seat): int(pesos) for seat, pesos in detail.get("bets", [])}
                group.locked[entry.table_id] = (entry.round_id, bets, set())
            case pot_pb2.LEDGER_ENTRY_TYPE_SEAT_FORFEITED:
                if entry.table_id in group.locked:
                    group.locked[entry.table_id][2].add(int(detail["seat"]))
            case pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED:
                self._mystery(group, entry, detail)
            case pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED:
                self._prize(group, entry, detail)
            case pot_pb2.LEDGER_ENTRY_TYPE_POT_RESEEDED:
                self._round(group, entry).refills[str(detail.get("level", ""))] = funding(entry)
            case pot_pb2.LEDGER_ENTRY_TYPE_ROUND_SETTLED:
                self._settled(group, entry)
                group.locked.pop(entry.table_id, None)

    def _prize(self, group: GroupInLedger, entry: pot_pb2.LedgerEntry, detail: Any) -> None:
        """A prize, counted in the round that earned it: an envy bonus paid at another table
        (V2) in the round of the hit it names."""
        hit = detail.get("envy_of")
        key = None if hit is None else (entry.pot_group_id, str(hit[0]), str(hit[1]))
        settling = self._round(group, entry, key)
        table = entry.table_id if key is not None and entry.table_id != key[1] else ""
        settling.awards.append(
            LedgerAward(
                str(detail["award_id"]),
                int(detail["seat"]),
                str(detail["prize"]),
                frozenset({int(entry.amount), int(detail["amount_pesos"])}),
                funding(entry),
                str(detail.get("level", "")),
                table,
                None if hit is None else int(hit[2]),
            )
        )

    def _config(self, data: Mapping[str, Any], entry: pot_pb2.LedgerEntry) -> Config:
        config = read_config(data)
        rules = RULES_PAYTABLES.get(config.paytable.name)
        if rules is not None and rules != config.paytable:
            text = f"paytable {config.paytable.name} is not the one of the rules (P, P4)"
            self._mismatch("paytable", f"{entry.pot_group_id} v{config.version}", text)
        return config

    def _round(
        self, group: GroupInLedger, entry: pot_pb2.LedgerEntry, key: RoundKey | None = None
    ) -> RoundInLedger:
        key = key or (entry.pot_group_id, entry.table_id, entry.round_id)
        if key not in group.rounds:
            assert group.config is not None
            group.rounds[key] = RoundInLedger(group.pots(), group.config, tuple(group.pending))
        return group.rounds[key]

    def _collected(self, group: GroupInLedger, entry: pot_pb2.LedgerEntry, detail: Any) -> None:
        """C1-C3, C5: the lock's commission and pot increments against the model's."""
        assert group.config is not None
        bets = {int(seat): int(pesos) for seat, pesos in detail.get("bets", [])}
        before = dict(group.balances)
        mystery = group.config.mystery
        if mystery is not None and group.locked_in_cycle:  # X2: the previous lock paid nothing
            peak = before.get(f"pot:{mystery[0]}", Fraction(0))
            group.cycle_peak = max(peak, group.cycle_peak or peak)
        # a lock without a bet has no seat to pay (X2); one that paid may leave the pot past
        # the next trigger (a studio lock's thousands of bets: one prize a lock), and the next
        # lock with a bet pays it at its first
        group.locked_in_cycle = bool(bets)
        pots = group.pots()
        group.lock = (pots, bets)
        model = dict(pots)
        collect(group.config, model, bets)
        wanted = {f"pot:{pot}": model[pot] - pots.get(pot, Fraction(0)) for pot in model}
        wanted["commission"] = sum(bets.values()) * group.config.commission
        got: dict[str, Fraction] = {}
        for transfer, (source, amount) in zip(entry.transfers, funding(entry), strict=True):
            if source == "bets":
                got[transfer.target] = got.get(transfer.target, Fraction(0)) + amount
        self.counts["collections_checked"] += 1
        if {k: v for k, v in wanted.items() if v} != {k: v for k, v in got.items() if v}:
            where = f"{entry.pot_group_id}/{entry.table_id}/{entry.round_id}"
            text = f"collected {_named(got)}, the rules: {_named(wanted)} (C2, C3, C5)"
            self._mismatch("collection", where, text)

    def _mystery(self, group: GroupInLedger, entry: pot_pb2.LedgerEntry, detail: Any) -> None:
        """X2: the mystery prize against its revealed trigger and the lock that paid it."""
        award_id = str(detail["award_id"])
        self.counts["awards_checked"] += 1
        self.counts["mystery_checked"] += 1
        for problem in self._mystery_problems(group, entry, detail):
            self._mismatch("mystery", award_id, problem)

    def _mystery_problems(
        self, group: GroupInLedger, entry: pot_pb2.LedgerEntry, detail: Any
    ) -> list[str]:
        assert group.config is not None
        spec = group.config.mystery
        if spec is None or group.lock is None:
            return ["a mystery prize without a mystery pot or a lock (X1, X2)"]
        pot, low, high = spec
        trigger = int(detail["trigger_pesos"])
        problems = []
        if not low <= trigger <= high:
            problems.append(f"trigger {trigger} outside {low}-{high}")
        if {int(entry.amount), int(detail["amount_pesos"])} != {trigger}:
            problems.append(f"paid {entry.amount}, the revealed trigger is {trigger}")
        published = mystery_commitment(trigger, str(detail["salt_hex"]))
        if not published == detail["commitment"] == group.commitment:
            problems.append("the trigger and salt do not match the commitment published before")
        if group.cycle_peak is not None and group.cycle_peak >= trigger:
            problems.append(f"an earlier lock took the pot to {money_text(group.cycle_peak)}")
        before, bets = group.lock
        seat = collect(group.config, dict(before), bets, trigger)
        if seat != int(detail["seat"]) or seat != entry.seat:
            problems.append(f"paid to seat {entry.seat}; the bet that crossed it is seat {seat}")
        if funding(entry) != ((f"pot:{pot}", Fraction(trigger)),):
            problems.append(f"paid from {_funds(funding(entry))}, not the mystery pot {pot}")
        return problems

    def _settled(self, group: GroupInLedger, entry: pot_pb2.LedgerEntry) -> None:
        """The round's awards and refill against the rules' for the round the floor dealt."""
        key = (entry.pot_group_id, entry.table_id, entry.round_id)
        settling = self._round(group, entry)
        del group.rounds[key]
        where = "/".join(key)
        self.settled[key] += 1
        if self.settled[key] > 1:
            self._mismatch("settled_twice", where, f"settled {self.settled[key]} times")
        self.counts["awards_checked"] += len(settling.awards)
        dealt = self.dealt.get(key)
        if dealt is None:
            self.counts["rounds_not_dealt"] += 1
            for award in settling.awards:
                self._mismatch("not_dealt", award.award_id, "a prize of a round never dealt")
            return
        others = {
            table: (bets, frozenset(forfeited))
            for table, (_, bets, forfeited) in group.locked.items()
            if table != entry.table_id
        }
        try:
            outcome = resolve(
                settling.config, settling.pending, dict(settling.before), dealt, others
            )
        except Refused as error:
            self._mismatch("refused", where, f"the rules refuse the round as dealt: {error}")
            return
        self.counts["rounds_checked"] += 1
        self.counts["awards_predicted"] += len(outcome.awards)
        for kind, name, text in compare_round(where, outcome, settling.awards, settling.refills):
            self._mismatch(kind, name, text)
        if entry.config_version != outcome.config.version:
            text = f"version {entry.config_version} after it, the rules: {outcome.config.version}"
            self._mismatch("config", where, text + " (C7)")

    def _mismatch(self, kind: str, name: str, text: str) -> None:
        self.mismatches[kind] += 1
        if kind in AWARD_KINDS:
            self.wrong_awards.add(name)
        examples = self.examples.setdefault(kind, [])
        if len(examples) < EXAMPLES:
            examples.append(f"{name}: {text}")

    def never_settled(self) -> list[str]:
        """Rounds with bets whose results the gateway accepted and the ledger never settled."""
        return sorted(
            "/".join(key)
            for key, dealt in self.dealt.items()
            if dealt.results_accepted is True and dealt.bets and key not in self.settled
        )

    def report(self) -> dict[str, Any]:
        """What was compared and what disagreed, by kind with examples; ``ok`` only if rounds
        were compared and nothing disagreed."""
        never = self.never_settled()
        mismatches = Counter(self.mismatches)
        examples = {kind: list(found) for kind, found in self.examples.items()}
        if never:
            mismatches["never_settled"] = len(never)
            examples["never_settled"] = never[:EXAMPLES]
        counted = ("rounds_checked", "awards_checked", "awards_predicted", "mystery_checked")
        return {
            **{name: self.counts[name] for name in counted},
            "collections_checked": self.counts["collections_checked"],
            "rounds_not_dealt": self.counts["rounds_not_dealt"],
            "awards_mismatched": len(self.wrong_awards),
            "mismatches": sum(mismatches.values()),
            "by_kind": dict(sorted(mismatches.items())),
            "examples": dict(sorted(examples.items())),
            "ok": self.counts["rounds_checked"] > 0 and not mismatches,
        }


# Mismatches that name one award (the others name a round, a lock or a configuration).
AWARD_KINDS = frozenset({"missing", "amount", "funding", "unexpected", "mystery", "not_dealt"})


def _named(amounts: Mapping[str, Fraction]) -> str:
    return ", ".join(f"{k} {money_text(v)}" for k, v in sorted(amounts.items()) if v) or "nothing"
