"""Property-based fuzzing of the pot's table-events consumer, without Kafka (issue 9, "Bad input").

A :class:`PotBook` with a pot group and three linked tables (one with a locked round) is fed
records of the table-events topic: arbitrary bytes, tombstones and foreign keys; truncated and
bit-flipped serialisations of valid events and admin commands; and structurally valid
TableEvents with hostile fields (unknown enum numbers, seats and bets over their whole wire
range, arbitrary cards, duplicated event ids and sequences) and PotGroupCommands whose
configuration JSON is hostile (wrong types, huge numbers, deep nesting, invalid JSON).

For every record: ``apply`` never raises (a ConservationError, rule M2 broken, never happens);
it is applied, ignored as a duplicate, or refused with exactly one dead letter naming a specific
reason and a detail and carrying the original bytes; a refused or ignored record changes no
group's state (beyond the ignored counter); every applied record's ledger entries account
exactly for the change of every balance (M2), and the groups survive snapshot and restore.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from loadtest.rounds import CONFIG, ROYAL_FLUSH

from jackpot.domain.cards import CARD_CODES
from jackpot.domain.engine import PotGroup
from jackpot.platform import codec
from jackpot.platform.codec import game_to_proto
from jackpot.pot import commands
from jackpot.pot.group_runtime import Outputs
from jackpot.pot.pot_book import PotBook
from jackpot.pot.state_records import decode_state
from jackpot.v1 import common_pb2, pot_pb2, table_events_pb2
from tests.unit.fuzzing import CHARS, FUZZ, INT32, INT64, UINT32

pytestmark = pytest.mark.usefixtures("quiet_logs")

GROUP = "scl-main"
TOPIC = "jackpot.table-events.v1"
NOW_NS = 1_790_000_000_000_000_000
CARIBBEAN, DRAW, GO_POKER = (
    common_pb2.GAME_CARIBBEAN,
    common_pb2.GAME_DRAW,
    common_pb2.GAME_GO_POKER,
)
TABLES = {"T1": CARIBBEAN, "T2": DRAW, "T3": GO_POKER}
DECK = sorted(CARD_CODES)
NOTHING = ["2C", "7D", "9S", "JC", "4C"]
FLUSH = ["2H", "5H", "9H", "JH", "KH"]

# ------------------------------------------------------------------------------ harness


def fixed_trigger(low: int, high: int) -> tuple[int, bytes]:
    return (low + high) // 2, b"\x01" * 16


def make_book() -> PotBook:
    return PotBook(
        0,
        source="pot:fuzz",
        event_id_window=64,
        clock_ns=lambda: NOW_NS,
        monotonic=lambda: 100.0,
        trigger_source=fixed_trigger,
    )


def link(table_id: str, game: int) -> table_events_pb2.TableEvent:
    return commands.link_table(
        GROUP,
        table_events_pb2.LinkTable(
            table_id=table_id,
            game=game,  # type: ignore[arg-type]
            site="SCL",
            min_bet=1000,
            max_bet=5000,
            credit_value=1000,
        ),
        event_id=f"link-{table_id}",
    )


def lock(
    sequence: int, round_id: str, bets: dict[int, int], table_id: str = "T1", game: int = 0
) -> Any:
    return commands.table_event(
        GROUP,
        table_id,
        round_id,
        sequence,
        game or TABLES[table_id],
        event_id=f"lock-{table_id}-{sequence}",
        occurred_at_ns=NOW_NS,
        round_locked=commands.locked(bets),
    )


def resolve(sequence: int, round_id: str, hands: dict[int, list[str]], table_id: str = "T1") -> Any:
    return commands.table_event(
        GROUP,
        table_id,
        round_id,
        sequence,
        TABLES[table_id],
        event_id=f"resolve-{table_id}-{sequence}",
        occurred_at_ns=NOW_NS,
        round_result=commands.result(hands),
    )


def accounts(entries: list[pot_pb2.LedgerEntry]) -> Counter[str]:
    moved: Counter[str] = Counter()
    for entry in entries:
        for transfer in entry.transfers:
            amount = codec.minor_units(transfer.amount)
            assert amount >= 0, entry
            moved[transfer.source] -= amount
            moved[transfer.target] += amount
    return moved


def books(group: PotGroup) -> Counter[str]:
    """A group's accounts as the ledger names them."""
    held: Counter[str] = Counter({f"pot:{name}": b for name, b in group.balances.items()})
    held["bets"] = -group.collected
    held["house"] = -group.house_advance
    held["commission"] = group.commission
    held["awards"] = group.awarded
    return held


def note(what: str) -> None:
    """Count what happened in hypothesis's statistics (outside a hypothesis test: nothing)."""
    if currently_in_test_context():
        event(what)


class Feeder:
    """Consecutive records of partition 0, each checked as it is applied."""

    def __init__(self) -> None:
        self.book = make_book()
        self.offset = 0
        self.applied = self.refused = self.ignored = 0

    def states(self) -> dict[str, pot_pb2.PotGroupState]:
        states = {}
        for group_id in self.book.groups:
            state, _ = decode_state(self.book.snapshot(group_id))
            state.ClearField("input_offset")
            state.ClearField("written_at")
            states[group_id] = state
        return states

    def event(self, message: table_events_pb2.TableEvent) -> Outputs:
        return self.record(message.SerializeToString(), message.pot_group_id.encode())

    def record(self, value: bytes | None, key: bytes | None) -> Outputs:
        book = self.book
        before = self.states()
        held_before = {g: books(r.group) for g, r in book.groups.items()}
        out = book.apply(value, TOPIC, 0, self.offset, key)  # never raises
        outcomes = out.applied + sum(out.ignored.values()) + len(out.dead_letters)
        assert outcomes == 1, out
        if out.dead_letters:
            self.refused += 1
            (letter,) = out.dead_letters
            (reason,) = out.rejected
            assert letter.reason == common_pb2.RejectReason.Value(f"REJECT_REASON_{reason}")
            assert letter.reason != common_pb2.REJECT_REASON_UNSPECIFIED
            assert letter.detail
            assert letter.source == "pot:fuzz"
            assert letter.original == (value or b"")
            assert (letter.original_topic, letter.original_offset) == (TOPIC, self.offset)
            assert (out.ledger, out.awards, out.pot_updates, out.snapshots) == ([], [], [], {})
            assert self.states() == before, f"refused ({letter.detail}) but a group changed"
            note(f"refused {reason}")
        elif out.ignored:
            self.ignored += 1
            assert out.empty
            after = self.states()
            assert set(after) == set(before)
            for group_id, state in after.items():
                state.events_ignored = before[group_id].events_ignored
                assert state == before[group_id]
        else:
            self.applied += 1
            (group_id,) = out.snapshots
            assert [u.pot_group_id for u in out.pot_updates] == [group_id]
            for other, state in self.states().items():
                if other != group_id:
                    assert state == before[other]
            group = book.groups[group_id].group
            moved = accounts(out.ledger)
            held = books(group)
            start = held_before.get(group_id, Counter())
            for account in set(moved) | set(held) | set(start):
                assert held[account] - start[account] == moved[account], account  # M2
            note("applied")
        for runtime in book.groups.values():
            runtime.group.check_conservation()
        book.commit(out)
        self.offset += 1
        return out

    def check_restore(self) -> None:
        """Every group comes back from its snapshot exactly (a restart of the partition)."""
        snapshots = [self.book.snapshot(g) for g in self.book.groups]
        restored = make_book()
        restored.restore(snapshots, self.offset)
        again = Feeder()
        again.book, again.offset = restored, self.offset
        assert again.states() == self.states()


def prepared() -> Feeder:
    """A group with three linked tables; T1 has round R1 locked with bets on seats 1 and 2."""
    feeder = Feeder()
    feeder.event(commands.create_group(GROUP, CONFIG, event_id="create"))
    for table_id, game in TABLES.items():
        feeder.event(link(table_id, game))
    feeder.event(lock(1, "R1", {1: 1000, 2: 2000}))
    assert feeder.applied == 5
    return feeder


# --------------------------------------------------------------------------- strategies


def _flip(raw: bytes, positions: list[int]) -> bytes:
    data = bytearray(raw)
    for position in positions:
        data[(position // 8) % len(data)] ^= 1 << (position % 8)
    return bytes(data)


@st.composite
def mutations(draw: st.DrawFn, raw: bytes) -> bytes:
    how = draw(st.sampled_from(["truncate", "flip", "flips", "insert", "delete", "splice"]))
    position = draw(st.integers(0, 10 * len(raw)))
    at = position % (len(raw) + 1)
    if how == "truncate":
        return raw[:at]
    if how == "flip":
        return _flip(raw, [position])
    if how == "flips":
        return _flip(raw, draw(st.lists(st.integers(0, 8 * len(raw)), min_size=2, max_size=8)))
    if how == "insert":
        return raw[:at] + draw(st.binary(min_size=1, max_size=16)) + raw[at:]
    if how == "delete":
        return raw[:at] + raw[at + draw(st.integers(1, 8)) :]
    return raw[:at] + raw


def valid_templates() -> list[table_events_pb2.TableEvent]:
    """Events the prepared feeder would accept next (or as duplicates)."""
    forfeit = commands.table_event(
        GROUP,
        "T1",
        "R1",
        2,
        CARIBBEAN,
        event_id="fold",
        seat_forfeited=table_events_pb2.SeatForfeited(
            seat=1,
            reason=table_events_pb2.FORFEIT_REASON_FOLD,
        ),
    )
    voided = commands.table_event(
        GROUP,
        "T2",
        "R9",
        1,
        DRAW,
        event_id="void",
        round_voided=table_events_pb2.RoundVoided(reason="misdeal"),
    )
    closed = commands.table_event(
        GROUP,
        "T3",
        "R9",
        1,
        GO_POKER,
        event_id="closed",
        seat_closed=table_events_pb2.SeatClosed(seat=3, reason="lamp"),
    )
    return [
        resolve(2, "R1", {1: FLUSH, 2: NOTHING}),
        forfeit,
        voided,
        closed,
        lock(1, "R5", {4: 5000}, table_id="T2"),
        commands.propose_config(GROUP, {**CONFIG, "version": 2}, "ana", "plan", event_id="p2"),
        commands.unlink_table(GROUP, "T3", event_id="unlink"),
        link("T4", DRAW),
        commands.create_group("other", CONFIG, event_id="create-other"),
    ]


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.sampled_from([0, -1, 1, 2**31, 2**63 - 1, 2**63, 2**64, 10**30, -(2**63) - 1]),
    st.floats(allow_nan=False),
    st.text(CHARS, max_size=10),
    st.sampled_from(["main", "reserve1", "12.5", "100", "100.00001", "-1", "1e3", "NaN"]),
    st.builds(lambda n: "9" * n, st.integers(4000, 6000)),  # beyond int()'s digit limit
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(
                st.sampled_from(["name", "percent", "ceiling", "overflow_to", "pot", "min"]),
                st.text(CHARS, max_size=6),
            ),
            children,
            max_size=4,
        ),
    ),
    max_leaves=8,
)
CONFIG_KEYS = [*CONFIG, "reserve_order", "paytable", "mystery", "unknown"]


@st.composite
def hostile_config_json(draw: st.DrawFn, version: int) -> str:
    kind = draw(st.sampled_from(["field", "field", "pots", "paytable", "mystery", "raw", "any"]))
    config: dict[str, Any] = {**CONFIG, "version": version}
    if kind == "field":
        config[draw(st.sampled_from(CONFIG_KEYS))] = draw(JSON_VALUES)
    elif kind == "pots":
        main = {"name": "main", "percent": draw(st.sampled_from(["70", 70, "100"]))}
        main.update(draw(st.dictionaries(st.sampled_from([*main, "ceiling"]), JSON_VALUES)))
        extra = draw(st.dictionaries(st.text(CHARS, max_size=8), JSON_VALUES, max_size=4))
        config["pots"] = [main, {"name": "reserve1", "percent": "30", **extra}]
    elif kind == "paytable":
        prize = draw(st.dictionaries(st.sampled_from(["hand", "multiple", "percent"]), JSON_VALUES))
        config["paytable"] = {
            "name": draw(JSON_VALUES),
            "evaluator": draw(st.one_of(st.sampled_from(["poker", "blackjack"]), JSON_VALUES)),
            "prizes": [{"hand": "FLUSH", "multiple": draw(JSON_VALUES)}, prize],
        }
    elif kind == "mystery":
        config["pots"] = [{"name": "main", "percent": "70"}, {"name": "m", "percent": "30"}]
        config["mystery"] = draw(
            st.dictionaries(st.sampled_from(["pot", "min", "max"]), JSON_VALUES, max_size=3)
        )
    elif kind == "raw":
        return draw(
            st.one_of(
                st.sampled_from(["", "null", "[]", '"text"', "{", "{}", "NaN", "1e999"]),
                st.builds(lambda n: "[" * n, st.integers(500, 100_000)),  # deep nesting
                st.builds(lambda n: '{"a":' * n + "1" + "}" * n, st.integers(500, 5000)),
                st.builds(lambda n: "9" * n, st.integers(4000, 10_000)),
                st.text(CHARS, max_size=40),
            )
        )
    else:
        return json.dumps(draw(JSON_VALUES))
    return json.dumps(config)


TIMESTAMPS = st.builds(Timestamp, seconds=INT64, nanos=INT32)
SEATS = st.one_of(st.integers(0, 8), UINT32)
TEXT = st.one_of(
    st.text(CHARS, max_size=8), st.builds(lambda n: "x" * n, st.integers(1000, 70_000))
)


@st.composite
def hostile_events(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    """A structurally valid TableEvent with hostile fields, and its record key."""
    message = table_events_pb2.TableEvent(
        event_id=draw(st.one_of(st.sampled_from(["e1", "e2", "lock-T1-1", "create", ""]), TEXT)),
        table_id=draw(st.one_of(st.sampled_from([*TABLES, "T9", ""]), TEXT)),
        round_id=draw(st.one_of(st.sampled_from(["R1", "R2", ""]), TEXT)),
        sequence=draw(st.one_of(st.integers(0, 4), st.integers(0, 2**64 - 1))),
        pot_group_id=draw(st.one_of(st.sampled_from([GROUP, GROUP, "other", ""]), TEXT)),
        game=draw(st.one_of(st.integers(0, 5), INT32)),  # type: ignore[arg-type]
    )
    if draw(st.booleans()):
        message.occurred_at.CopyFrom(draw(TIMESTAMPS))
    kind = draw(
        st.sampled_from(
            [
                "round_locked",
                "seat_forfeited",
                "round_result",
                "round_voided",
                "seat_closed",
                "create",
                "propose_config",
                "link_table",
                "unlink_table",
                "empty_command",
                "none",
            ]
        )
    )
    if kind == "round_locked":
        bets = draw(
            st.lists(
                st.builds(
                    table_events_pb2.SeatBet,
                    seat=SEATS,
                    bet=st.one_of(st.sampled_from([1000, 2000, 5000]), INT64),
                ),
                max_size=9,
            )
        )
        message.round_locked.bets.extend(bets)
    elif kind == "seat_forfeited":
        message.seat_forfeited.seat = draw(SEATS)
        message.seat_forfeited.reason = draw(st.one_of(st.integers(0, 3), INT32))  # type: ignore[assignment]
    elif kind == "round_result":
        card = st.one_of(st.sampled_from(DECK), st.text(CHARS, max_size=3))
        hands = draw(
            st.lists(
                st.builds(
                    table_events_pb2.SeatHand,
                    seat=SEATS,
                    cards=st.one_of(
                        st.lists(card, max_size=10),
                        st.permutations(DECK).map(lambda deck: deck[:5]),
                    ),
                ),
                max_size=8,
            )
        )
        message.round_result.hands.extend(hands)
        message.round_result.community_cards.extend(draw(st.lists(card, max_size=4)))
    elif kind == "round_voided":
        message.round_voided.reason = draw(TEXT)
    elif kind == "seat_closed":
        message.seat_closed.seat = draw(SEATS)
        message.seat_closed.reason = draw(TEXT)
    elif kind != "none":
        command = message.pot_group_command
        command.requested_by = draw(st.sampled_from(["ana", ""]))
        command.reason = draw(st.sampled_from(["why", ""]))
        if kind == "create":
            command.create.config_json = draw(hostile_config_json(1))
        elif kind == "propose_config":
            version = draw(st.one_of(st.just(2), st.integers(-1, 3)))
            command.propose_config.config_json = draw(hostile_config_json(version))
        elif kind == "link_table":
            command.link_table.CopyFrom(
                table_events_pb2.LinkTable(
                    table_id=draw(st.one_of(st.sampled_from(["T1", "T5", ""]), TEXT)),
                    game=draw(st.one_of(st.integers(0, 5), INT32)),  # type: ignore[arg-type]
                    site=draw(TEXT),
                    min_bet=draw(st.one_of(st.just(1000), INT64)),
                    max_bet=draw(st.one_of(st.just(5000), INT64)),
                    credit_value=draw(st.one_of(st.just(1000), INT64)),
                )
            )
        elif kind == "unlink_table":
            command.unlink_table.table_id = draw(st.one_of(st.sampled_from([*TABLES, ""]), TEXT))
        else:
            command.SetInParent()
    key = draw(
        st.sampled_from([message.pot_group_id.encode()] * 6 + [None, b"other", b"", GROUP.encode()])
    )
    return message.SerializeToString(), key


ARBITRARY = st.one_of(
    st.binary(max_size=64),
    st.binary(max_size=2048),
    st.builds(
        lambda n, seed: random.Random(seed).randbytes(n), st.integers(60_000, 100_000), UINT32
    ),
)
KEYS = st.one_of(st.none(), st.sampled_from([GROUP.encode(), b"other", b""]), st.binary(max_size=8))


# -------------------------------------------------------------------------------- tests


@settings(FUZZ, max_examples=300)
@given(records_=st.lists(st.tuples(st.one_of(st.none(), ARBITRARY), KEYS), min_size=1, max_size=4))
def test_fuzz_arbitrary_records(records_: list[tuple[bytes | None, bytes | None]]) -> None:
    feeder = prepared()
    for value, key in records_:
        feeder.record(value, key)
    feeder.check_restore()


@settings(FUZZ, max_examples=300)
@given(template=st.sampled_from(valid_templates()), data=st.data())
def test_fuzz_truncated_and_bit_flipped_table_events(
    template: table_events_pb2.TableEvent, data: st.DataObject
) -> None:
    feeder = prepared()
    raw = template.SerializeToString()
    mutated = data.draw(mutations(raw), label="mutated")
    key = data.draw(st.sampled_from([template.pot_group_id.encode(), None]), label="key")
    out = feeder.record(mutated, key)
    if out.dead_letters:  # the refusal changed nothing: the intact event still applies
        assert feeder.event(template).applied == 1
    feeder.check_restore()


@settings(FUZZ, max_examples=300)
@given(records_=st.lists(hostile_events(), min_size=1, max_size=6), data=st.data())
def test_fuzz_structured_hostile_table_events_and_commands(
    records_: list[tuple[bytes, bytes | None]], data: st.DataObject
) -> None:
    feeder = prepared()
    templates = valid_templates()
    for value, key in records_:
        feeder.record(value, key)
        if data.draw(st.integers(0, 3), label="then a valid event?") == 0:
            feeder.event(data.draw(st.sampled_from(templates), label="valid"))
    feeder.check_restore()


@st.composite
def admin_commands(draw: st.DrawFn) -> table_events_pb2.TableEvent:
    """A well-formed admin command (fresh event id, right key) with a hostile payload."""
    kind = draw(st.sampled_from(["create", "propose_config", "propose_config", "link_table"]))
    event_id = f"admin-{draw(st.integers(0, 10**9))}"
    if kind == "create":
        config = draw(hostile_config_json(1))
        return commands.create_group("fresh", config, "ana", "why", event_id=event_id)
    if kind == "propose_config":
        config = draw(hostile_config_json(draw(st.sampled_from([2, 2, 1, 0, -1, 2**63]))))
        return commands.propose_config(GROUP, config, "ana", "why", event_id=event_id)
    hostile = table_events_pb2.LinkTable(
        table_id=draw(st.sampled_from(["T1", "T5"])),
        game=draw(st.one_of(st.integers(0, 5), INT32)),  # type: ignore[arg-type]
        site=draw(TEXT),
        min_bet=draw(st.one_of(st.just(1000), INT64)),
        max_bet=draw(st.one_of(st.just(5000), INT64)),
        credit_value=draw(st.one_of(st.just(1000), INT64)),
    )
    return commands.link_table(GROUP, hostile, event_id=event_id)


def play_a_round(feeder: Feeder, group_id: str, table_id: str, hand: list[str]) -> None:
    """Lock the table's next round at the group's maximum bet and resolve it with ``hand``."""
    runtime = feeder.book.groups[group_id]
    game = game_to_proto(runtime.group.tables[table_id].game)
    sequence = runtime.table_sequences.get(table_id, 0) + 1
    round_id = f"P{sequence}"
    bet = runtime.group.config.max_bet
    for payload in (
        {"round_locked": commands.locked({1: bet})},
        {"round_result": commands.result({1: hand[: 3 if game == GO_POKER else 5]}, ())},
    ):
        message = commands.table_event(
            group_id,
            table_id,
            round_id,
            sequence,
            game,
            event_id=f"play-{group_id}-{table_id}-{sequence}",
            occurred_at_ns=NOW_NS,
            **payload,
        )
        feeder.event(message)
        sequence += 1


@settings(FUZZ, max_examples=250)
@given(commands_=st.lists(admin_commands(), min_size=1, max_size=3))
def test_fuzz_admin_commands_with_hostile_configuration(
    commands_: list[table_events_pb2.TableEvent],
) -> None:
    feeder = prepared()
    for command in commands_:
        feeder.event(command)
    # Whatever a hostile configuration got accepted must still play without breaking anything:
    # a royal flush on T1 resets the main pot, which activates a proposed configuration (C7),
    if "fresh" in feeder.book.groups:  # and a group created with one plays a round too.
        fresh = feeder.book.groups["fresh"].group.config
        feeder.event(
            commands.link_table(
                "fresh",
                table_events_pb2.LinkTable(
                    table_id="F1",
                    game=CARIBBEAN,
                    min_bet=fresh.min_bet,
                    max_bet=fresh.max_bet,
                    credit_value=fresh.credit_value,
                ),
                event_id="link-F1",
            )
        )
        if "F1" in feeder.book.groups["fresh"].group.tables:
            play_a_round(feeder, "fresh", "F1", FLUSH)
    feeder.event(resolve(2, "R1", {1: list(ROYAL_FLUSH), 2: NOTHING}))
    for table_id in sorted(feeder.book.groups[GROUP].group.tables):
        play_a_round(feeder, GROUP, table_id, FLUSH)
    feeder.check_restore()


# ----------------------------------------------------- minimal reproductions (regressions)


def refuses(feeder: Feeder, message: table_events_pb2.TableEvent) -> str:
    out = feeder.event(message)
    assert out.dead_letters, "accepted"
    (reason,) = out.rejected
    return reason


def test_fuzz_regression_an_unknown_game_number_is_refused() -> None:
    """Minimised by hypothesis: TableEvent.game = -1 (no such Game) for a linked table."""
    message = lock(2, "R2", {1: 1000}, table_id="T2")
    message.game = -1
    assert refuses(prepared(), message) == "UNKNOWN_GAME"


def test_fuzz_regression_an_unknown_forfeit_reason_is_refused() -> None:
    """SeatForfeited.reason = 3 (no such ForfeitReason)."""
    message = commands.table_event(
        GROUP,
        "T1",
        "R1",
        2,
        CARIBBEAN,
        event_id="fold",
        seat_forfeited=table_events_pb2.SeatForfeited(seat=1, reason=3),  # type: ignore[arg-type]
    )
    assert refuses(prepared(), message) in {"MALFORMED", "INVALID_STATE"}


@pytest.mark.parametrize(
    "change",
    [
        {"mystery": {"pot": []}},
        {"reserve_order": [[]]},
        {"pots": [{"name": "main", "percent": "100", "ceiling": 1, "overflow_to": []}]},
        {"paytable": {"name": "p", "evaluator": []}},
        {"commission_percent": "9" * 4301},
        {"version": 2**32},
        {"base": 2**63},
        {"min_bet": 2**63, "max_bet": 2**63, "credit_value": 1},
    ],
    ids=[
        "unhashable-mystery-pot",
        "unhashable-reserve",
        "unhashable-overflow-to",
        "unhashable-evaluator",
        "percent-beyond-int-digit-limit",
        "version-beyond-uint32",
        "base-beyond-int64",
        "bets-beyond-int64",
    ],
)
def test_fuzz_regression_hostile_configuration_is_invalid_config(change: dict[str, Any]) -> None:
    """Found by the admin-command fuzzing, with their siblings: each crashed the partition."""
    create = commands.create_group("fresh", {**CONFIG, **change}, "ana", "why", event_id="c")
    assert refuses(prepared(), create) == "INVALID_CONFIG"


def test_fuzz_regression_deeply_nested_configuration_json_is_invalid_config() -> None:
    """Found by hypothesis: nesting beyond the JSON decoder's recursion limit."""
    create = commands.create_group("fresh", "[" * 100_000, "ana", "why", event_id="c")
    assert refuses(prepared(), create) == "INVALID_CONFIG"


def test_fuzz_regression_a_prize_beyond_int64_never_breaks_a_round() -> None:
    """A paytable multiple of 2**62 was accepted, and the first flush then crashed."""
    paytable = {
        "name": "huge",
        "prizes": [{"hand": "FLUSH", "multiple": 2**62}, {"hand": "ROYAL_FLUSH", "percent": "100"}],
    }
    feeder = prepared()
    proposal = {**CONFIG, "version": 2, "paytable": paytable}
    feeder.event(commands.propose_config(GROUP, proposal, "ana", "why", event_id="p"))
    feeder.event(resolve(2, "R1", {1: list(ROYAL_FLUSH), 2: NOTHING}))  # a reset: v2 in force
    play_a_round(feeder, GROUP, "T1", FLUSH)
