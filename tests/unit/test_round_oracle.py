"""The round oracle (issue 24 item 1): every award predicted from the cards dealt, by the rules.

``jackpot.sim.oracle`` is an independent model of docs/rules.md (it imports nothing of
``jackpot.domain``). Shown here: its hands agree with the engine's over random cards (P, P2,
P4); it gives every golden round's expected outcome, refusals included (tests/golden); it agrees
with every award of a real pot processor's ledger (checkpoints, a mystery pot, resets, a
configuration activated at a reset); and it refuses copies of that ledger that every other judge
passes: a split one peso off between its two winners (money conserved, the audit clean), the odd
peso to the wrong seat (S3), a prize from the wrong pot (S7), an award for a forfeited seat
(E2, E3), a mystery prize to the wrong seat (X2), a refill from the wrong pot (S8), ... The books
(``jackpot.sim.books``) fail on such a ledger through the path ``judge`` takes.
"""

from __future__ import annotations

import ast
import json
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loadtest.rounds import CONFIG, MIN_BET, table_link

from jackpot.domain.cards import CARD_CODES, Game
from jackpot.domain.hands import categorise
from jackpot.platform.codec import game_from_proto, game_to_proto
from jackpot.pot import commands
from jackpot.pot.ledger_audit import GroupAudit
from jackpot.sim import ledger_oracle, oracle, oracle_cards
from jackpot.sim.books import (
    LedgerBooks,
    add_entry,
    books_verdict,
    compare_awards,
    compare_bets,
    with_oracle,
)
from jackpot.sim.ledger_oracle import LedgerOracle
from jackpot.sim.oracle import Dealt, RoundKey, read_config
from jackpot.v1 import pot_pb2, table_events_pb2
from tests.unit.test_restore import GROUP, MYSTERY_CONFIG, Floor, played

GOLDEN = sorted((Path(__file__).parents[1] / "golden").glob("*.json"))
DECK = sorted(CARD_CODES)
Ledger = list[pot_pb2.LedgerEntry]
PRIZE = pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED


def test_the_oracle_is_written_apart_from_the_domain() -> None:
    """An independent model: jackpot/sim/oracle.py and oracle_cards.py import nothing of the
    product but each other (never jackpot.domain's engine, paytables, hands or money), and
    jackpot/sim/ledger_oracle.py only the model and the ledger's message types."""
    model = {"jackpot.sim.oracle", "jackpot.sim.oracle_cards"}
    allowed = {
        oracle: {"jackpot.sim.oracle_cards"},
        oracle_cards: set(),
        ledger_oracle: {"jackpot.v1", *model},
    }
    for module, may in allowed.items():
        tree = ast.parse(Path(module.__file__ or "").read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        ours = {m for m in imported if m and m.split(".")[0] in ("jackpot", "loadtest")}
        assert ours == may, module.__name__


# ------------------------------------------------------------------------- hands (P, P4)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(DECK), min_size=5, max_size=5, unique=True))
def test_P_P2_poker_hands_agree_with_the_engine(cards: list[str]) -> None:
    assert oracle_cards.poker_hand(cards) == categorise("poker", [CARD_CODES[c] for c in cards])


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from([c for c in DECK if c[0] in "A7"] + ["2C", "KD"]), min_size=2, max_size=4
    )
)
def test_P4_blackjack_hands_agree_with_the_engine(cards: list[str]) -> None:
    assert oracle_cards.blackjack_hand(cards) == categorise(
        "blackjack", [CARD_CODES[c] for c in cards]
    )


def test_P_P4_the_rules_paytables_in_their_order_of_payment() -> None:
    poker = oracle_cards.RULES_PAYTABLES["scj-poker"]
    assert [(p.hand, p.multiple) for p in poker.fixed] == [
        ("FLUSH", 50),
        ("FULL_HOUSE", 100),
        ("FOUR_OF_A_KIND", 500),
    ]
    assert [(p.hand, p.percent, p.cap) for p in poker.percent] == [
        ("STRAIGHT_FLUSH", Fraction(1, 10), 5000),
        ("ROYAL_FLUSH", Fraction(1), None),
    ]
    blackjack = oracle_cards.RULES_PAYTABLES["bj-aces-sevens"]
    assert [p.multiple for p in blackjack.fixed] == [10, 25, 50, 200, 500]
    assert [p.hand for p in blackjack.percent] == ["FOUR_ACES", "FOUR_ACES_SAME_SUIT"]


# ---------------------------------------------------------------------- the golden rounds


def golden_config(scenario: Mapping[str, Any], reserves: list[str]) -> dict[str, Any]:
    """A golden round's configuration (tests/golden/README.md): its ``config`` or a group whose
    main pot takes everything, the base from ``pot.base``, the reserves in ``pot.reserves``'s
    order (without the mystery pot) unless it names ``reserve_order`` or ``levels`` (L1: each level
    then lists its own)."""
    raw = dict(scenario.get("config") or {"pots": [{"name": "main", "percent": 100}]})
    mystery = raw.get("mystery")
    if "levels" not in raw:
        raw.setdefault("reserve_order", [n for n in reserves if not mystery or n != mystery["pot"]])
    raw["pots"] = raw["pots"] + [
        {"name": n, "percent": 0} for n in reserves if n not in {p["name"] for p in raw["pots"]}
    ]
    return {**raw, "base": scenario["pot"].get("base", 0), "paytable": scenario["paytable"]}


def golden_dealt(game: str, round_: Mapping[str, Any]) -> Dealt:
    """One round of a golden file as dealt: its own hands, or a studio's shared hand (O1, O2)."""
    results = round_["results"]
    return Dealt(
        round_.get("game", game),
        {r["seat"]: r["bet"] for r in results},
        {r["seat"]: r["cards"] for r in results if "cards" in r},
        round_.get("community", []),
        frozenset(r["seat"] for r in results if r.get("forfeited")),
        studio_seats=round_.get("studio_seats", 0),
        shared_hand=round_.get("shared_hand", []),
    )


def golden_outcome(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """The oracle's outcome of one golden round (and of the rounds ``then`` resolved after it,
    S9), in the shape of its ``expect``."""
    pot = scenario["pot"]
    reserves = [(r["name"], Fraction(str(r["balance"]))) for r in pot.get("reserves", [])]
    balances = {"main": Fraction(str(pot["main"])), **dict(reserves)}
    data = golden_config(scenario, [name for name, _ in reserves])
    config = read_config(data)
    newer = scenario.get("pending_config")
    pending = [] if newer is None else [read_config({**data, **newer})]
    first = scenario["round"]
    others = {  # V2: the other tables' rounds already locked, their bets already in the pots
        str(other["table"]): (
            {b["seat"]: b["bet"] for b in other["bets"]},
            frozenset(other.get("forfeited", [])),
        )
        for other in first.get("other_tables", [])
        if other.get("bets")
    }
    awards: list[dict[str, Any]] = []
    house = Fraction(0)
    for number, round_ in enumerate([first, *first.get("then", [])]):
        dealt = golden_dealt(scenario["game"], round_)
        table = "" if number == 0 else str(round_["table"])
        if "config" in scenario:  # C1: the lock collects the bets first (and may hit X2)
            oracle.check_bets(config, dealt.bets)
            trigger = pot.get("mystery_trigger")
            seat = oracle.collect(config, balances, dealt.bets, trigger)
            if seat is not None:
                awards.append({"seat": seat, "prize": "MYSTERY", "amount": trigger})
        outcome = oracle.resolve(config, pending, balances, dealt, others)
        house += outcome.house
        for a in outcome.awards:
            award: dict[str, Any] = {"seat": a.seat, "prize": a.prize, "amount": a.amount}
            award.update({"level": a.level} if a.level else {})  # L4
            award.update({"table": a.table or table} if a.table or table else {})  # V2, S9
            awards.append(award)
        if outcome.config is not config:  # C7: the pending version took effect
            config, pending = outcome.config, []
    found: dict[str, Any] = {
        "awards": awards,
        "main": balances["main"],
        "reserves": [balances[name] for name, _ in reserves],
        "house_advance": house,
    }
    if newer is not None:
        found["config_version"] = config.version
    return found


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_the_oracle_gives_every_golden_round(path: Path) -> None:
    scenario = json.loads(path.read_text())
    expect = scenario["expect"]
    if "error" in expect:
        with pytest.raises(oracle.Refused) as refused:
            golden_outcome(scenario)
        assert refused.value.reason == expect["error"]
        return
    found = golden_outcome(scenario)
    assert found["awards"] == expect["awards"]
    assert found["main"] == Fraction(expect["main"])
    assert found["reserves"] == [Fraction(r) for r in expect.get("reserves", [])]
    assert found["house_advance"] == Fraction(expect["house_advance"])
    assert found.get("config_version") == expect.get("config_version")


def test_a_golden_round_told_wrong_disagrees() -> None:
    """The golden check can fail: the two royals of round 02 with the odd peso to seat 5 (S3)."""
    scenario = json.loads((GOLDEN[1]).read_text())
    assert GOLDEN[1].stem == "02-two-royals-odd-peso"
    wrong = [dict(a) for a in scenario["expect"]["awards"]]
    wrong[0]["amount"] -= 1
    wrong[1]["amount"] += 1
    assert golden_outcome(scenario)["awards"] == scenario["expect"]["awards"] != wrong


# -------------------------------------------------------------- a real processor's ledger


def dealt_of(events: Iterable[table_events_pb2.TableEvent]) -> dict[RoundKey, Dealt]:
    """The rounds the table events played, as the floor simulator records them."""
    bets: dict[RoundKey, dict[int, int]] = {}
    forfeited: dict[RoundKey, set[int]] = {}
    dealt: dict[RoundKey, Dealt] = {}
    studio_seats: dict[str, int] = {}  # O1: the studio tables the links name
    for event in events:
        key = (event.pot_group_id, event.table_id, event.round_id)
        match event.WhichOneof("payload"):
            case "pot_group_command" if event.pot_group_command.HasField("link_table"):
                link = event.pot_group_command.link_table
                studio_seats[link.table_id] = link.studio_seats
            case "round_locked":
                bets[key] = {b.seat: b.bet for b in event.round_locked.bets}
            case "seat_forfeited":
                forfeited.setdefault(key, set()).add(event.seat_forfeited.seat)
            case "round_result":
                dealt[key] = Dealt(
                    game_from_proto(event.game).value,
                    bets.get(key, {}),
                    {h.seat: tuple(h.cards) for h in event.round_result.hands},
                    tuple(event.round_result.community_cards),
                    frozenset(forfeited.get(key, ())),
                    studio_seats=studio_seats.get(event.table_id, 0),
                    shared_hand=tuple(event.round_result.shared_hand),  # O2
                )
    return dealt


def judged(ledger: Iterable[pot_pb2.LedgerEntry], dealt: Mapping[RoundKey, Dealt]) -> Any:
    follower = LedgerOracle(dealt)
    for entry in ledger:
        follower.add(entry)
    return follower.report()


@pytest.fixture(scope="module")
def floor() -> tuple[Ledger, dict[RoundKey, Dealt]]:
    """Three tables on a group with an overflowing reserve, a mystery pot, royal flushes and a
    configuration that waits for a reset; a checkpoint every 40 entries."""
    played_floor, _ = played(40, checkpoint_entries=40)  # 40 rounds a table
    return played_floor.ledger, dealt_of(played_floor.events)


def test_the_oracle_agrees_with_every_award_of_the_pot_processors_ledger(
    floor: tuple[Ledger, dict[RoundKey, Dealt]],
) -> None:
    ledger, dealt = floor
    kinds = [entry.type for entry in ledger]
    assert pot_pb2.LEDGER_ENTRY_TYPE_CHECKPOINT in kinds  # skipped: they move no money
    assert pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED in kinds  # C7 at a reset
    assert pot_pb2.LEDGER_ENTRY_TYPE_POT_RESEEDED in kinds  # S8
    report = judged(ledger, dealt)
    assert report["ok"] is True, report
    assert report["rounds_checked"] == len(dealt) == 120
    awards = sum(t in (PRIZE, pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED) for t in kinds)
    assert report["awards_checked"] == awards
    # X2: every mystery prize to the seat whose bet crossed the trigger committed to before
    assert report["mystery_checked"] == kinds.count(pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED) > 0
    assert report["awards_predicted"] == kinds.count(PRIZE) > 0
    assert report["collections_checked"] == 120


def test_an_oracle_that_saw_no_round_does_not_pass() -> None:
    """No check passes by not running: a ledger with no settled round is not ok."""
    report = judged([], {})
    assert (report["rounds_checked"], report["mismatches"], report["ok"]) == (0, 0, False)


# ------------------------------------------------------------ a split, and copies of it

TABLE = "T01"
STRAIGHT_FLUSH = ["5D", "6D", "7D", "8D", "9D"]
SPLIT_ROUND = "R-split"


@dataclass
class Table:
    """One table of the group, numbering its events as a gateway does."""

    table_id: str
    game: Game
    sequence: int = 0

    def link(self) -> table_events_pb2.TableEvent:
        return commands.link_table(GROUP, table_link(self.table_id, self.game))

    def _event(self, round_id: str, **payload: Any) -> table_events_pb2.TableEvent:
        self.sequence += 1
        game = game_to_proto(self.game)
        return commands.table_event(GROUP, self.table_id, round_id, self.sequence, game, **payload)

    def round(
        self,
        round_id: str,
        bets: dict[int, int],
        hands: dict[int, list[str]],
        folds: Iterable[int] = (),
    ) -> list[table_events_pb2.TableEvent]:
        """A round's lock, its folds and its result."""
        events = [self._event(round_id, round_locked=commands.locked(bets))]
        for seat in folds:
            fold = table_events_pb2.SeatForfeited(
                seat=seat, reason=table_events_pb2.FORFEIT_REASON_FOLD
            )
            events.append(self._event(round_id, seat_forfeited=fold))
        events.append(self._event(round_id, round_result=commands.result(hands)))
        return events


def played_rounds(
    config: Mapping[str, Any], table: Table, rounds: Iterable[list[table_events_pb2.TableEvent]]
) -> tuple[Ledger, dict[RoundKey, Dealt]]:
    """A group opened with ``config``, ``table`` linked, the rounds played by the real pot
    processor: its ledger, and the rounds as the floor would have recorded them."""
    events = [commands.create_group(GROUP, config, requested_by="ana", reason="open"), table.link()]
    played_floor = Floor()
    played_floor.play([*events, *(event for round_ in rounds for event in round_)])
    return played_floor.ledger, dealt_of(played_floor.events)


@pytest.fixture(scope="module")
def split() -> tuple[Ledger, dict[RoundKey, Dealt]]:
    """A flush, then two straight flushes (seats 2 and 5) sharing 10 % of an odd main pot."""
    table = Table(TABLE, Game.CARIBBEAN)
    flush = table.round(
        "R-flush",
        {1: 2000, 3: 1000},
        {1: ["2H", "5H", "9H", "JH", "KH"], 3: ["2C", "3D", "7S", "8C", "QD"]},
    )
    two_straight_flushes = table.round(
        SPLIT_ROUND,
        {2: 3000, 5: 2000, 6: 1000},  # the main pot 503,675 after the refill: its 10 % is odd
        {
            2: ["5H", "6H", "7H", "8H", "9H"],
            5: ["5S", "6S", "7S", "8S", "9S"],
            6: ["AD", "AC", "KD", "KC", "2D"],
        },
    )
    return played_rounds(CONFIG, table, [flush, two_straight_flushes])


def test_P4_S7_S8_a_blackjack_ledger_agrees_with_the_oracle() -> None:
    """Three sevens of one suit that the main pot cannot pay (S7: the reserve, then the house),
    four aces of one suit on the emptied pot (a reset, S8), aces from a multi-deck shoe (P4)."""
    table = Table("BJ1", Game.BLACKJACK)
    rounds = [
        table.round("R1", {1: 5000, 2: 1000}, {1: ["7H", "7H", "7H"], 2: ["AS", "AS", "AS", "AS"]}),
        table.round(
            "R2",
            {3: 2000, 4: 1000, 5: 1000},
            {3: ["AH", "AH"], 4: ["AC", "AD", "AH"], 5: ["AS", "KD"]},
        ),
    ]
    ledger, dealt = played_rounds({**CONFIG, "paytable": "bj-aces-sevens"}, table, rounds)
    prizes = [(e.seat, e.prize, e.amount) for e in ledger if e.type == PRIZE]
    assert prizes == [
        (1, "THREE_SEVENS_SAME_SUIT", 2_500_000),
        (2, "FOUR_ACES_SAME_SUIT", 0),
        (3, "TWO_ACES_SAME_SUIT", 20_000),
        (4, "THREE_ACES", 50_000),
    ]
    house = [e for e in ledger if e.type == PRIZE and any(t.source == "house" for t in e.transfers)]
    assert house, "the shortfall reaches the house"
    report = judged(ledger, dealt)
    assert report["ok"] is True, report
    assert (report["rounds_checked"], report["awards_checked"]) == (2, 4)


def award_entries(ledger: Ledger, round_id: str) -> list[pot_pb2.LedgerEntry]:
    return [e for e in ledger if e.type == PRIZE and e.round_id == round_id]


def award_id(entry: pot_pb2.LedgerEntry) -> str:
    return str(json.loads(entry.detail_json)["award_id"])


def copied(ledger: Ledger) -> Ledger:
    return [pot_pb2.LedgerEntry.FromString(entry.SerializeToString()) for entry in ledger]


def add_pesos(entry: pot_pb2.LedgerEntry, pesos: int) -> None:
    """An award entry that many pesos more (its amount, its detail and the transfer from the
    main pot): the rest of the ledger is left as it was."""
    detail = json.loads(entry.detail_json)
    detail["amount_pesos"] += pesos
    entry.detail_json = json.dumps(detail, sort_keys=True, separators=(",", ":"))
    entry.amount += pesos
    moved = entry.transfers[0].amount
    assert entry.transfers[0].source == "pot:main"
    amount = Fraction(moved.numerator, moved.denominator) + pesos
    moved.numerator, moved.denominator = amount.numerator, amount.denominator


def audit_problems(ledger: Ledger) -> list[str]:
    """What ``jackpot audit`` finds in a ledger (M2, R2, sequences), its hash chain aside."""
    audit = GroupAudit(GROUP)
    for entry in ledger:
        audit.add(entry)
    problems = list(audit.problems)
    commission, awarded = audit.accounts["commission"], audit.accounts["awards"]
    if audit.collected + audit.house_advances != commission + sum(audit.pots.values()) + awarded:
        problems.append("M2")
    return problems


def test_the_split_round_pays_the_odd_peso_to_the_seat_nearest_seat_1(
    split: tuple[Ledger, dict[RoundKey, Dealt]],
) -> None:
    ledger, dealt = split
    seat_2, seat_5 = award_entries(ledger, SPLIT_ROUND)
    assert (seat_2.seat, seat_5.seat) == (2, 5)
    assert seat_2.amount == seat_5.amount + 1  # S3: an odd pool
    report = judged(ledger, dealt)
    assert report["ok"] is True, report
    assert (report["rounds_checked"], report["awards_checked"]) == (2, 3)


def test_O2_O4_the_oracle_agrees_with_a_studio_rounds_ledger_and_refuses_a_retouched_one() -> None:
    """2,000 bets of a studio round, ten of them folded, hold the shared straight flush: the
    oracle predicts every one of the 1,990 awards from the cards alone; one peso moved between
    two of them is refused by it though money is conserved (O4, S3)."""
    link = table_link("S01", Game.CARIBBEAN, site="studio", studio_seats=5_000)
    sequence = iter(range(1, 100))

    def event(**payload: Any) -> table_events_pb2.TableEvent:
        caribbean = game_to_proto(Game.CARIBBEAN)
        return commands.table_event(GROUP, "S01", "R1", next(sequence), caribbean, **payload)

    played_floor = Floor()
    played_floor.play(
        [
            commands.create_group(GROUP, CONFIG, requested_by="ana", reason="open"),
            commands.link_table(GROUP, link),
            event(round_locked=commands.locked(dict.fromkeys(range(1, 2001), MIN_BET))),
            *(
                event(seat_forfeited=table_events_pb2.SeatForfeited(seat=seat, reason=1))
                for seat in range(1991, 2001)
            ),
            event(round_result=table_events_pb2.RoundResult(shared_hand=STRAIGHT_FLUSH)),
        ]
    )
    ledger, dealt = played_floor.ledger, dealt_of(played_floor.events)
    report = judged(ledger, dealt)
    assert report["ok"] is True, report
    assert (report["rounds_checked"], report["awards_checked"]) == (1, 1_990)
    tampered = copied(ledger)
    first, second, *_ = award_entries(tampered, "R1")
    add_pesos(first, -1)
    add_pesos(second, +1)
    assert audit_problems(tampered) == []  # money conserved: only the oracle sees it
    assert judged(tampered, dealt)["by_kind"] == {"amount": 2}


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        # one peso moved from one winner of the split to the other: money conserved
        ("one peso moved between the two winners", (+1, -1)),
        ("the odd peso to the wrong seat (S3)", (-1, +1)),
    ],
)
def test_the_books_refuse_a_split_that_conserves_money_but_is_not_the_rules(
    split: tuple[Ledger, dict[RoundKey, Dealt]], name: str, changes: tuple[int, int]
) -> None:
    """S3: a split one peso off between its winners, or with the odd peso to the wrong seat,
    conserves money and passes the audit; the oracle refuses it, and so do the books."""
    ledger, dealt = split
    tampered = copied(ledger)
    entries = award_entries(tampered, SPLIT_ROUND)
    for entry, pesos in zip(entries, changes, strict=True):
        add_pesos(entry, pesos)
    # every other judge passes it: money conserved, each pot as before, the audit clean
    assert audit_problems(ledger) == audit_problems(tampered) == []
    assert sum(e.amount for e in entries) == sum(
        e.amount for e in award_entries(ledger, SPLIT_ROUND)
    )
    report = judged(tampered, dealt)
    assert report["ok"] is False, name
    assert report["by_kind"] == {"amount": 2}
    assert report["awards_mismatched"] == 2
    wrong = {award_id(e) for e in entries}
    assert {example.split(": ")[0] for example in report["examples"]["amount"]} == wrong
    # the books without the oracle pass it; with it, they refuse it (and pass the true ledger)
    assert books_ok(tampered, dealt) == (True, False)
    assert books_ok(ledger, dealt) == (True, True)


def test_S4_the_oracle_caps_each_share_on_its_own_bet_and_refuses_one_paid_whole() -> None:
    """S4: two straight flushes share 10 % of a main pot opened at 100,000,000 (C4).

    Lock 1,000 + 2,000, commission 12.5 %, main 70 %: main 100,000,000 + 1,837.5; 10 % floored
    (S6) 10,000,183; split (S3) 5,000,092 to seat 2 and 5,000,091 to seat 5. Seat 2's part is
    capped at 5,000 x 1,000 = 5,000,000 (the 92 stay in the main pot); seat 5's cap, 5,000 x
    2,000, leaves its part whole. The real processor's ledger agrees with the oracle; a copy
    paying seat 2 its part whole is refused.
    """
    table = Table(TABLE, Game.CARIBBEAN)
    capped = table.round(
        "R-cap",
        {2: 1000, 5: 2000},
        {2: ["5H", "6H", "7H", "8H", "9H"], 5: ["5S", "6S", "7S", "8S", "9S"]},
    )
    ledger, dealt = played_rounds({**CONFIG, "base": 100_000_000}, table, [capped])
    seat_2, seat_5 = award_entries(ledger, "R-cap")
    assert [(e.seat, e.amount) for e in (seat_2, seat_5)] == [(2, 5_000_000), (5, 5_000_091)]
    assert judged(ledger, dealt)["ok"] is True
    tampered = copied(ledger)
    add_pesos(award_entries(tampered, "R-cap")[0], 92)
    report = judged(tampered, dealt)
    assert report["ok"] is False
    assert report["by_kind"] == {"amount": 1}


def fake_books(ledger: Ledger, dealt: Mapping[RoundKey, Dealt]) -> LedgerBooks:
    books = LedgerBooks(oracle=LedgerOracle(dealt))
    for entry in ledger:
        add_entry(books, entry)
    return books


def books_ok(ledger: Ledger, dealt: Mapping[RoundKey, Dealt]) -> tuple[bool, bool]:
    """The books of ``judge`` over this ledger (every award with its one payout, the floor's
    bets accepted, the audit clean): whether they pass without the oracle, and with it."""
    books = fake_books(ledger, dealt)
    accepted = {key: dict(d.bets) for key, d in dealt.items() if d.bets}
    collected = sum(sum(bets.values()) for bets in accepted.values())
    totals = {
        "rounds": len(dealt),
        "bets_accepted": collected,
        "collected": collected,
        "lost": 0,
        "duplicated": 0,
        "audit_ok": True,
        "audit_problems": [],
        "awards": {},
        "audit_chain": {"ok": True},
    }
    verdict = books_verdict(
        totals,
        compare_bets(accepted, books.collections),
        compare_awards(books.awards, dict.fromkeys(books.awards, 1)),
    )
    assert books.oracle is not None
    return verdict["books_ok"], with_oracle(verdict, books.oracle.report())["books_ok"]


# ----------------------------------------------------------- more ledgers the rules refuse

Mutation = Callable[[Ledger, dict[RoundKey, Dealt]], None]


def _entries(ledger: Ledger, kind: int) -> list[pot_pb2.LedgerEntry]:
    return [entry for entry in ledger if entry.type == kind]


def _from_reserve(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """S7: the flush paid from the reserve though the main pot could pay it."""
    entry = award_entries(ledger, "R-flush")[0]
    entry.transfers[0].source = "pot:reserve1"


def _forfeited_winner(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """E3: seat 5 folded at the table; the ledger paid its straight flush all the same."""
    key = (GROUP, TABLE, SPLIT_ROUND)
    dealt[key] = replace(dealt[key], forfeited=frozenset({5}))


def _award_dropped(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    ledger.remove(award_entries(ledger, SPLIT_ROUND)[1])


def _order_swapped(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """S5: seat 5 paid before seat 2."""
    first, second = award_entries(ledger, SPLIT_ROUND)
    at = ledger.index(first)
    ledger[at], ledger[at + 1] = second, first


def _never_dealt(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    del dealt[(GROUP, TABLE, SPLIT_ROUND)]


def _never_settled(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """A round the gateway accepted whole (bets and results) that the ledger never settled."""
    dealt[(GROUP, TABLE, "R-lost")] = Dealt("caribbean", {1: 1000}, {1: ("2C",) * 5})


def _duplicate_card(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """P3: the floor dealt a card twice, yet the ledger settled the round."""
    key = (GROUP, TABLE, "R-flush")
    hands = {**dealt[key].hands, 3: ("2H", "3D", "7S", "8C", "QD")}
    dealt[key] = replace(dealt[key], hands=hands)


def _collected_to_reserve(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """C3: one peso of the main pot's share credited to the reserve (money conserved)."""
    entry = _entries(ledger, pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED)[0]
    to_main, to_reserve = (
        t for t in entry.transfers if t.source == "bets" and t.target != "commission"
    )
    for transfer, pesos in ((to_main, -1), (to_reserve, +1)):
        amount = Fraction(transfer.amount.numerator, transfer.amount.denominator) + pesos
        transfer.amount.numerator, transfer.amount.denominator = (
            amount.numerator,
            amount.denominator,
        )


SPLIT_MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "S7 from the wrong pot": (_from_reserve, "funding"),
    "E3 a forfeited seat paid": (_forfeited_winner, "unexpected"),
    "an award missing": (_award_dropped, "missing"),
    "S5 paid out of order": (_order_swapped, "order"),
    "a round the floor never dealt": (_never_dealt, "not_dealt"),
    "a round never settled": (_never_settled, "never_settled"),
    "P3 a card dealt twice": (_duplicate_card, "refused"),
    "C3 a share to the wrong pot": (_collected_to_reserve, "collection"),
}


@pytest.mark.parametrize("name", sorted(SPLIT_MUTATIONS))
def test_the_oracle_refuses_a_ledger_that_is_not_the_rules(
    split: tuple[Ledger, dict[RoundKey, Dealt]], name: str
) -> None:
    """C3, E3, P3, S5, S7: copies of the split ledger each broken one way (a share to the wrong
    pot, a forfeited seat paid, a card dealt twice, winners paid out of order, a prize from a
    reserve while the main pot could pay it, an award missing, a round never dealt or never
    settled) are refused, by the oracle and by the books."""
    ledger, dealt = split
    tampered, told = copied(ledger), dict(dealt)
    mutate, kind = SPLIT_MUTATIONS[name]
    mutate(tampered, told)
    report = judged(tampered, told)
    assert report["ok"] is False
    assert kind in report["by_kind"], report
    assert report["examples"][kind]
    assert books_ok(tampered, told)[1] is False


def _mystery_seat(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """X2: the mystery prize paid to another seat than the one whose bet crossed the trigger."""
    entry = _entries(ledger, pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED)[0]
    detail = json.loads(entry.detail_json)
    detail["seat"] = entry.seat = 7 if entry.seat != 7 else 1
    entry.detail_json = json.dumps(detail, sort_keys=True)


def _mystery_trigger(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """X2: a revealed trigger that is not the one committed to before the hit."""
    entry = _entries(ledger, pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED)[0]
    detail = json.loads(entry.detail_json)
    detail["trigger_pesos"] += 1
    entry.detail_json = json.dumps(detail, sort_keys=True)


def _refill_by_house(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """S8: the house advanced the refill though the reserve could pay it."""
    for entry in _entries(ledger, pot_pb2.LEDGER_ENTRY_TYPE_POT_RESEEDED):
        if entry.transfers[0].source == "pot:reserve1":
            entry.transfers[0].source = "house"
            return
    raise AssertionError("no refill from the reserve")


def _config_not_activated(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """C7: the round that reset the main pot says the old version is still in force."""
    activated = _entries(ledger, pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED)[0]
    settled = next(
        e
        for e in ledger[ledger.index(activated) :]
        if e.type == pot_pb2.LEDGER_ENTRY_TYPE_ROUND_SETTLED
    )
    settled.config_version -= 1


FLOOR_MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "X2 the mystery prize to another seat": (_mystery_seat, "mystery"),
    "X2 a trigger not committed to": (_mystery_trigger, "mystery"),
    "S8 the refill from the house": (_refill_by_house, "refill"),
    "C7 the configuration not activated at the reset": (_config_not_activated, "config"),
}


@pytest.mark.parametrize("name", sorted(FLOOR_MUTATIONS))
def test_the_oracle_refuses_a_floors_ledger_that_is_not_the_rules(
    floor: tuple[Ledger, dict[RoundKey, Dealt]], name: str
) -> None:
    """X2, S8, C7: copies of the floor's ledger with the mystery prize to another seat or a
    trigger not committed to, a refill from the house though the reserve could pay it, or a
    configuration not activated at the reset, are refused."""
    ledger, dealt = floor
    tampered, told = copied(ledger), dict(dealt)
    mutate, kind = FLOOR_MUTATIONS[name]
    mutate(tampered, told)
    report = judged(tampered, told)
    assert report["ok"] is False
    assert kind in report["by_kind"], report


def test_a_paytable_named_like_the_rules_but_paying_otherwise_is_refused() -> None:
    """P: a configuration that calls its paytable scj-poker must pay what the rules say."""
    config = json.loads(json.dumps(played_config()))
    config["paytable"]["prizes"][0]["multiple"] = 51
    follower = LedgerOracle({})
    follower.add(
        pot_pb2.LedgerEntry(
            pot_group_id=GROUP,
            type=pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED,
            detail_json=json.dumps({"config": config}),
        )
    )
    assert follower.report()["by_kind"] == {"paytable": 1}


def played_config() -> dict[str, Any]:
    played_floor, _ = played(2)
    opened = _entries(played_floor.ledger, pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED)[0]
    return dict(json.loads(opened.detail_json)["config"])


def test_random_floors_agree_with_the_oracle() -> None:
    """S9: rounds of three tables interleaved on one group, seed after seed."""
    from loadtest.rounds import interleaved_rounds

    for seed in range(3):
        played_floor, tables = played(20)
        played_floor.play(list(interleaved_rounds(tables, 10, random.Random(seed))))
        report = judged(played_floor.ledger, dealt_of(played_floor.events))
        assert report["ok"] is True, report


# ------------------------------------------------- levels and envy bonuses (L1-L4, V1-V3)

LEVELS_CONFIG: dict[str, Any] = {
    **CONFIG,
    "pots": [
        {"name": "main", "percent": "60"},
        {"name": "sf", "percent": "20", "ceiling": 400_000, "overflow_to": "main"},
        {"name": "reserve1", "percent": "10"},
        {"name": "sf_reserve", "percent": "10"},
    ],
    "levels": [
        {"name": "royal", "label": "Royal Flush", "reserve_order": ["reserve1"]},
        {
            "name": "sf",
            "label": "Straight Flush",
            "pot": "sf",
            "base": 50_000,
            "reserve_order": ["sf_reserve"],
        },
    ],
    "paytable": {
        "name": "levels-and-envy",
        "evaluator": "poker",
        "prizes": [
            {"hand": "FLUSH", "multiple": 50},
            {"hand": "FULL_HOUSE", "multiple": 100},
            {"hand": "FOUR_OF_A_KIND", "multiple": 500, "level": "sf"},
            {
                "hand": "STRAIGHT_FLUSH",
                "percent": "100",
                "level": "sf",
                "envy": {"amount": 1000, "level": "royal"},
            },
            {
                "hand": "ROYAL_FLUSH",
                "percent": "100",
                "envy": {"amount": 2000, "level": "sf", "linked": True},
            },
        ],
    },
}
ROYAL_AT = "R-royal"


@pytest.fixture(scope="module")
def levels_floor() -> tuple[Ledger, dict[RoundKey, Dealt]]:
    """Two tables on a group with two levels and envy bonuses, played by the real processor.

    T02 locks R-a (seat 2 then folds); T01's R-royal has a royal flush (seat 1, a linked envy
    bonus to T01's seats 2 and 4 and to T02's seats 1 and 3), a straight flush (seat 2, 100 % of
    the sf level, an envy bonus from the royal level to seats 1 and 4) and four of a kind (seat
    4, from the sf level); both levels are emptied and refilled. Then T02's R-a (a flush) and
    T01's R-split (two straight flushes split the refilled sf level)."""
    one, two = Table(TABLE, Game.CARIBBEAN), Table("T02", Game.CARIBBEAN)
    fold = table_events_pb2.SeatForfeited(seat=2, reason=table_events_pb2.FORFEIT_REASON_FOLD)
    events = [
        commands.create_group(GROUP, LEVELS_CONFIG, requested_by="ana", reason="open"),
        one.link(),
        two.link(),
        two._event("R-a", round_locked=commands.locked({1: 1000, 2: 2000, 3: 1000})),
        two._event("R-a", seat_forfeited=fold),
        *one.round(
            ROYAL_AT,
            {1: 1000, 2: 3000, 4: 1000},
            {1: ROYAL_S_CARDS, 2: ["8D", "9D", "TD", "JD", "QD"], 4: QUADS_CARDS},
        ),
        two._event(
            "R-a",
            round_result=commands.result(
                {1: ["2C", "6C", "9C", "JC", "AC"], 3: ["3D", "8S", "5H", "JD", "4S"]}
            ),
        ),
        *one.round(
            "R-split",
            {1: 1000, 2: 1000},
            {1: ["5S", "6S", "7S", "8S", "9S"], 2: ["8D", "9D", "TD", "JD", "QD"]},
        ),
    ]
    played_floor = Floor()
    played_floor.play(events)
    return played_floor.ledger, dealt_of(played_floor.events)


ROYAL_S_CARDS = ["AS", "KS", "QS", "JS", "TS"]
QUADS_CARDS = ["7S", "7H", "7D", "7C", "2D"]


def details(ledger: Ledger, kind: int) -> list[dict[str, Any]]:
    return [json.loads(entry.detail_json) for entry in ledger if entry.type == kind]


def test_L2_L3_V1_V2_V3_a_ledger_with_levels_and_envy_agrees_with_the_oracle(
    levels_floor: tuple[Ledger, dict[RoundKey, Dealt]],
) -> None:
    ledger, dealt = levels_floor
    royal_round = [
        (d["table_id"], d["seat"], d["prize"], d["level"])
        for d in details(ledger, PRIZE)
        if d.get("envy_of", [None, None])[1] == ROYAL_AT or d["round_id"] == ROYAL_AT
    ]
    assert royal_round == [
        (TABLE, 4, "FOUR_OF_A_KIND", "sf"),
        (TABLE, 1, "ENVY_STRAIGHT_FLUSH", "royal"),
        (TABLE, 4, "ENVY_STRAIGHT_FLUSH", "royal"),
        (TABLE, 2, "ENVY_ROYAL_FLUSH", "sf"),
        (TABLE, 4, "ENVY_ROYAL_FLUSH", "sf"),
        ("T02", 1, "ENVY_ROYAL_FLUSH", "sf"),
        ("T02", 3, "ENVY_ROYAL_FLUSH", "sf"),
        (TABLE, 2, "STRAIGHT_FLUSH", "sf"),
        (TABLE, 1, "ROYAL_FLUSH", "royal"),
    ]
    reseeded = {(d["round_id"], d["level"]) for d in details(ledger, RESEEDED)}
    assert {(ROYAL_AT, "royal"), (ROYAL_AT, "sf"), ("R-split", "sf")} <= reseeded
    report = judged(ledger, dealt)
    assert report["ok"] is True, report
    assert report["rounds_checked"] == 3
    assert report["awards_checked"] == report["awards_predicted"] == len(details(ledger, PRIZE))


RESEEDED = pot_pb2.LEDGER_ENTRY_TYPE_POT_RESEEDED


def _envy_entries(ledger: Ledger, table: str) -> list[pot_pb2.LedgerEntry]:
    """The envy bonuses (V1) the ledger paid at ``table``."""
    return [
        entry
        for entry in ledger
        if entry.type == PRIZE
        and entry.table_id == table
        and json.loads(entry.detail_json).get("envy_of") is not None
    ]


def _envy_to_a_folded_seat(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """V1, E3: seat 4 folded at the table; the ledger paid it the envy bonuses all the same."""
    key = (GROUP, TABLE, ROYAL_AT)
    dealt[key] = replace(dealt[key], forfeited=frozenset({4}))


def _linked_envy_dropped(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """V2: the linked bonus of T02's seat 3 never paid."""
    ledger.remove(next(e for e in _envy_entries(ledger, "T02") if e.seat == 3))


def _level_prize_from_main(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """L2: the four of a kind of the sf level paid from the royal level's pot."""
    entry = next(e for e in ledger if e.type == PRIZE and e.prize == "FOUR_OF_A_KIND")
    assert entry.transfers[0].source == "pot:sf"
    entry.transfers[0].source = "pot:main"


def _wrong_level_named(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """L4: a straight flush the ledger says the royal level paid (its money is right)."""
    entry = next(e for e in ledger if e.type == PRIZE and e.prize == "STRAIGHT_FLUSH")
    detail = json.loads(entry.detail_json)
    detail["level"] = "royal"
    entry.detail_json = json.dumps(detail, sort_keys=True)


def _level_refilled_from_the_royal_reserve(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """L3: the sf level topped up from the royal level's reserve."""
    for entry in _entries(ledger, RESEEDED):
        if entry.transfers and entry.transfers[0].source == "pot:sf_reserve":
            entry.transfers[0].source = "pot:reserve1"
            return
    raise AssertionError("no refill from sf_reserve")


def _envy_before_the_multiples(ledger: Ledger, dealt: dict[RoundKey, Dealt]) -> None:
    """V3: the straight flush's envy bonus to seat 1 paid before the four of a kind."""
    quads = next(e for e in ledger if e.type == PRIZE and e.prize == "FOUR_OF_A_KIND")
    at = ledger.index(quads)
    ledger[at], ledger[at + 1] = ledger[at + 1], ledger[at]


LEVEL_MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "V1 an envy bonus to a folded seat": (_envy_to_a_folded_seat, "unexpected"),
    "V2 a linked envy bonus missing": (_linked_envy_dropped, "missing"),
    "L2 a level's prize from another level's pot": (_level_prize_from_main, "funding"),
    "L4 a prize naming the wrong level": (_wrong_level_named, "funding"),
    "L3 a level refilled from another level's reserve": (
        _level_refilled_from_the_royal_reserve,
        "refill",
    ),
    "V3 an envy bonus paid before the multiples": (_envy_before_the_multiples, "order"),
}


@pytest.mark.parametrize("name", sorted(LEVEL_MUTATIONS))
def test_L2_L3_L4_V1_V2_V3_the_oracle_refuses_a_levels_ledger_that_is_not_the_rules(
    levels_floor: tuple[Ledger, dict[RoundKey, Dealt]], name: str
) -> None:
    ledger, dealt = levels_floor
    tampered, told = copied(ledger), dict(dealt)
    mutate, kind = LEVEL_MUTATIONS[name]
    mutate(tampered, told)
    report = judged(tampered, told)
    assert report["ok"] is False
    assert kind in report["by_kind"], report
    assert books_ok(tampered, told)[1] is False


def _studio_past_two_triggers() -> tuple[Ledger, dict[RoundKey, Dealt]]:
    """X2, O1: a studio lock of 2,000 bets takes the mystery pot past its trigger and past the
    next ones too; at most one prize a lock, so the pot stands above the new trigger. A land
    lock without a bet follows (no seat to pay), then locks with a bet, whose first bet wins it
    while the pot stands above (the campaign's seed 1004789013 met this)."""
    studio = table_link("S01", Game.CARIBBEAN, site="studio", studio_seats=5_000)
    land = table_link(TABLE, Game.CARIBBEAN, site="SCL")
    sequences = {"S01": iter(range(1, 100)), TABLE: iter(range(1, 100))}

    def event(table: str, round_id: str, **payload: Any) -> table_events_pb2.TableEvent:
        caribbean = game_to_proto(Game.CARIBBEAN)
        return commands.table_event(GROUP, table, round_id, next(sequences[table]), caribbean,
                                    **payload)  # fmt: skip

    def land_round(round_id: str, bets: dict[int, int]) -> list[table_events_pb2.TableEvent]:
        hands = iter((["2C", "7D", "9S", "JC", "4H"], ["3C", "8D", "TS", "QC", "5H"]))
        nothing = {seat: next(hands) for seat in bets}  # no prize: only the mystery pays
        return [
            event(TABLE, round_id, round_locked=commands.locked(bets)),
            event(TABLE, round_id, round_result=commands.result(nothing)),
        ]

    played_floor = Floor()
    played_floor.play(
        [
            commands.create_group(GROUP, MYSTERY_CONFIG, requested_by="ana", reason="open"),
            commands.link_table(GROUP, studio),
            commands.link_table(GROUP, land),
            event(
                "S01", "S1", round_locked=commands.locked(dict.fromkeys(range(1, 2001), MIN_BET))
            ),
            event(
                "S01",
                "S1",
                round_result=table_events_pb2.RoundResult(shared_hand=[*STRAIGHT_FLUSH[:4], "2C"]),
            ),
            *land_round("L1", {}),
            *land_round("L2", {3: MIN_BET, 5: MIN_BET}),
            *land_round("L3", {2: MIN_BET}),
        ]
    )
    return played_floor.ledger, dealt_of(played_floor.events)


def test_X2_O1_a_lock_past_two_triggers_pays_one_and_the_next_lock_with_a_bet_the_other() -> None:
    ledger, dealt = _studio_past_two_triggers()
    paid = _entries(ledger, pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED)
    won = [(e.table_id, e.round_id, e.seat) for e in paid]
    assert won == [("S01", "S1", 458), (TABLE, "L2", 3), (TABLE, "L3", 2)]
    report = judged(ledger, dealt)
    assert report["ok"] is True, report
    assert report["mystery_checked"] == 3
    # the oracle still refuses a lock with a bet that left the pot past its trigger unpaid:
    # L2's prize taken out, as if its bets had not won it
    mystery = (
        pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_AWARDED,
        pot_pb2.LEDGER_ENTRY_TYPE_MYSTERY_COMMITTED,
    )
    tampered = [e for e in copied(ledger) if e.round_id != "L2" or e.type not in mystery]
    report = judged(tampered, dealt)
    assert report["ok"] is False
    assert any("an earlier lock took the pot" in text for text in report["examples"]["mystery"])
