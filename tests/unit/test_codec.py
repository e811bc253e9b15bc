"""The one enum codec (jackpot.platform.codec) and the one dead-letter builder (deadletter).

Every domain member round-trips through its protobuf number, every protobuf number but the
``*_UNSPECIFIED`` zero has a domain member, and a number the domain does not know is refused with
a DomainError naming it. Both modules stay pure: the pot processor, which does no I/O, imports
them.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from jackpot.domain import events
from jackpot.domain.cards import Game
from jackpot.domain.engine import FORFEIT_REASONS
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.domain.payout import PayoutState
from jackpot.platform import codec
from jackpot.platform.deadletter import dead_letter
from jackpot.v1 import common_pb2, dead_letter_pb2, payout_pb2, pot_pb2, table_events_pb2
from tests.unit.test_import_boundary import BANNED_TOP_LEVEL, imported_modules

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]

# (domain enum, encode, strict decode, protobuf enum, refusal reason for an unknown number)
ENUMS: list[tuple[type[Enum], Any, Any, EnumTypeWrapper, Reason]] = [
    (Game, codec.game_to_proto, codec.game_from_proto, common_pb2.Game, Reason.UNKNOWN_GAME),
    (
        Reason,
        codec.reason_to_proto,
        codec.reason_from_proto,
        common_pb2.RejectReason,
        Reason.MALFORMED,
    ),
    (
        PayoutState,
        codec.payout_state_to_proto,
        codec.payout_state_from_proto,
        payout_pb2.PayoutState,
        Reason.MALFORMED,
    ),
]
ENUM_IDS = [domain.__name__ for domain, *_ in ENUMS]


def _unknown_numbers(wrapper: EnumTypeWrapper) -> list[int]:
    """The zero, numbers just past the contract's, and the int32 extremes."""
    top = max(wrapper.values())
    return [0, top + 1, top + 100, -1, 2**31 - 1, -(2**31)]


@pytest.mark.parametrize(("domain", "encode", "decode", "wrapper", "_reason"), ENUMS, ids=ENUM_IDS)
def test_every_domain_member_round_trips(
    domain: type[Enum], encode: Any, decode: Any, wrapper: EnumTypeWrapper, _reason: Reason
) -> None:
    numbers = set()
    for member in domain:
        number = encode(member)
        assert wrapper.Name(number).endswith(f"_{member.name}")  # paired by name
        assert decode(number) is member
        numbers.add(number)
    assert len(numbers) == len(domain)  # no two members share a number


@pytest.mark.parametrize(("domain", "_encode", "decode", "wrapper", "_reason"), ENUMS, ids=ENUM_IDS)
def test_every_protobuf_number_but_unspecified_is_a_domain_member(
    domain: type[Enum], _encode: Any, decode: Any, wrapper: EnumTypeWrapper, _reason: Reason
) -> None:
    for name, number in wrapper.items():
        if number == 0:
            assert name.endswith("_UNSPECIFIED")
        else:
            assert isinstance(decode(number), domain), name


@pytest.mark.parametrize(("_domain", "_encode", "decode", "wrapper", "reason"), ENUMS, ids=ENUM_IDS)
def test_an_unknown_protobuf_number_is_refused_naming_it(
    _domain: type[Enum], _encode: Any, decode: Any, wrapper: EnumTypeWrapper, reason: Reason
) -> None:
    for number in _unknown_numbers(wrapper):
        with pytest.raises(DomainError) as refused:
            decode(number)
        assert refused.value.reason is reason
        assert f" {number} " in f" {refused.value.detail} ", refused.value.detail
    with pytest.raises(DomainError) as unspecified:
        decode(0)
    assert "_UNSPECIFIED" in unspecified.value.detail


def test_the_lenient_game_lookup_and_the_game_name_for_messages() -> None:
    for game in Game:
        assert codec.game_of(codec.game_to_proto(game)) is game
        assert codec.game_name(codec.game_to_proto(game)) == f"GAME_{game.name}"
    for number in _unknown_numbers(common_pb2.Game):
        assert codec.game_of(number) is None
    assert codec.game_name(0) == "GAME_UNSPECIFIED"
    assert codec.game_name(99) == "unknown game 99"


def test_game_numbers_are_the_contract_numbers() -> None:
    """The pairing is by name, and the names mean what the .proto says."""
    assert codec.game_to_proto(Game.CARIBBEAN) == common_pb2.GAME_CARIBBEAN == 1
    assert codec.game_to_proto(Game.BLACKJACK) == common_pb2.GAME_BLACKJACK
    assert codec.reason_to_proto(Reason.MALFORMED) == common_pb2.REJECT_REASON_MALFORMED
    assert codec.reason_to_proto(Reason.INVALID_CONFIG) == common_pb2.REJECT_REASON_INVALID_CONFIG
    assert codec.payout_state_to_proto(PayoutState.PAID) == payout_pb2.PAYOUT_STATE_PAID


def test_forfeit_reasons_round_trip_and_unknown_ones_are_malformed() -> None:
    for reason in FORFEIT_REASONS:
        number = codec.forfeit_reason_to_proto(reason)
        assert table_events_pb2.ForfeitReason.Name(number) == f"FORFEIT_REASON_{reason}"
        assert codec.forfeit_reason_from_proto(number) == reason
    known = {n for n in table_events_pb2.ForfeitReason.values() if n}
    assert {codec.forfeit_reason_to_proto(r) for r in FORFEIT_REASONS} == known
    with pytest.raises(DomainError) as unspecified:
        codec.forfeit_reason_from_proto(table_events_pb2.FORFEIT_REASON_UNSPECIFIED)
    assert (unspecified.value.reason, unspecified.value.detail) == (
        Reason.MALFORMED,
        "forfeit has no reason",
    )
    for number in _unknown_numbers(table_events_pb2.ForfeitReason)[1:]:
        with pytest.raises(DomainError) as refused:
            codec.forfeit_reason_from_proto(number)
        assert refused.value.reason is Reason.MALFORMED
        assert str(number) in refused.value.detail


def test_every_ledger_entry_type_has_exactly_one_domain_source() -> None:
    """Each domain event and each payout state is recorded as a type of its own; the pot's
    checkpoints are the one type that records no event (jackpot.pot.ledger_audit), and a bundle
    is no entry of its own (jackpot.platform.bundles)."""
    kinds = [
        cls
        for cls in vars(events).values()
        if isinstance(cls, type) and issubclass(cls, events.Event) and cls is not events.Event
    ]
    by_event = {codec.ledger_type(cls.__new__(cls)) for cls in kinds}
    by_payout = {codec.payout_ledger_type(state) for state in PayoutState}
    assert len(by_event) == len(kinds) > 10
    assert len(by_payout) == len(PayoutState)
    assert not by_event & by_payout
    checkpoint = {pot_pb2.LEDGER_ENTRY_TYPE_CHECKPOINT, pot_pb2.LEDGER_ENTRY_TYPE_BUNDLE}
    assert not (by_event | by_payout) & checkpoint
    assert by_event | by_payout | checkpoint == {n for n in pot_pb2.LedgerEntryType.values() if n}
    for state in PayoutState:
        name = pot_pb2.LedgerEntryType.Name(codec.payout_ledger_type(state))
        assert name == f"LEDGER_ENTRY_TYPE_PAYOUT_{state.name}"


# --------------------------------------------------------------------------- dead letters


def test_the_dead_letter_builder_states_everything_about_the_refusal() -> None:
    letter = dead_letter(
        "pot:test",
        Reason.UNKNOWN_POT_GROUP,
        "pot group g does not exist",
        b"\x01\x02",
        table_id="T1",
        topic="jackpot.table-events.v1",
        partition=3,
        offset=41,
        at_ns=1_700_000_000_123_456_789,
    )
    assert letter == dead_letter_pb2.DeadLetter(
        source="pot:test",
        reason=common_pb2.REJECT_REASON_UNKNOWN_POT_GROUP,
        detail="pot group g does not exist",
        original=b"\x01\x02",
        original_topic="jackpot.table-events.v1",
        original_partition=3,
        original_offset=41,
        table_id="T1",
        rejected_at={"seconds": 1_700_000_000, "nanos": 123_456_789},
    )


def test_the_dead_letter_builder_defaults_to_now_and_no_position() -> None:
    letter = dead_letter("gateway:g", Reason.MALFORMED, "not a ConnectRequest", b"x")
    assert codec.reason_from_proto(letter.reason) is Reason.MALFORMED
    assert (letter.original_topic, letter.original_partition, letter.original_offset) == (
        "",
        -1,
        -1,
    )
    assert letter.rejected_at.seconds > 1_700_000_000


# ------------------------------------------------------------------------------ purity


PURE_EDGES = ["services/jackpot/platform/codec.py", "services/jackpot/platform/deadletter.py"]
PURE_PREFIXES = ("google.protobuf", "jackpot.domain", "jackpot.v1", "jackpot.platform.codec")


@pytest.mark.parametrize("path", PURE_EDGES)
def test_the_pure_edges_import_no_io(path: str) -> None:
    """The pot processor is pure of I/O and imports these: they import protobuf and the domain."""
    imports = imported_modules((REPO / path).read_text(encoding="utf-8"), "jackpot.platform")
    for name in imports:
        top = name.split(".")[0]
        assert top not in BANNED_TOP_LEVEL - {"google"}, f"{path} imports {name}"
        if top in {"google", "jackpot"}:
            assert any(name == p or name.startswith(p + ".") for p in PURE_PREFIXES), name
        else:
            assert top in sys.stdlib_module_names, f"{path} imports {name}"


def test_an_amount_finer_than_a_picopeso_is_refused_exactly_and_floored_for_a_sign() -> None:
    """M1: the pot's books never round an amount (ValueError); a sign's M3 check may floor it
    (the display's one codec), and an amount that is no fraction at all is refused by both."""
    third = common_pb2.ExactAmount(numerator=1, denominator=3)  # 333333333333.33... picopesos
    with pytest.raises(ValueError, match="finer than a picopeso"):
        codec.minor_units(third)
    assert codec.minor_units(third, floor=True) == MINOR_PER_PESO // 3
    for nothing in (0, -4):
        with pytest.raises(ValueError, match="denominator"):
            codec.minor_units(common_pb2.ExactAmount(numerator=1, denominator=nothing), floor=True)
