"""The ledger entry and the award of each prize (a ``PrizeAwarded`` event), built without the
generic paths: a studio round shared among thousands of winners (rule O4) writes one entry and
one award per winner, alike but for the seat, its player and its award id (and the one
remainder, S3). So what prizes alike share (the group, the source event and its times, the round,
the prize, the cards, the amount, its transfers, the configurations in force) is set once on a
prototype entry and award, copied for each prize, and the entry's detail is canonical JSON
written around its three varying values.

The records are byte for byte those of the generic path (``Event.to_dict`` without the
transfers through :func:`~jackpot.domain.canonical.canonical_json`, ``records.award_from_dict``):
a detail holding values of types the engine does not make is left to ``canonical_json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _quoted
from typing import TypeGuard

from google.protobuf.timestamp_pb2 import Timestamp

from jackpot.domain.canonical import canonical_json
from jackpot.domain.events import Event, PrizeAwarded
from jackpot.pot import records as messages
from jackpot.v1 import pot_pb2


def _strings(values: tuple[str, ...]) -> str | None:
    """A tuple of strings' JSON array; None for anything else."""
    if type(values) is not tuple or any(type(value) is not str for value in values):
        return None
    return f"[{','.join(_quoted(value) for value in values)}]"


def _envy(hit: object) -> str | None:
    """The ``"envy_of"`` member of an envy bonus's detail (V1), "" for none; None for a value
    the engine does not make."""
    if hit is None:
        return ""
    if type(hit) is not tuple or len(hit) != 3:
        return None
    table_id, round_id, seat = hit
    if type(table_id) is not str or type(round_id) is not str or type(seat) is not int:
        return None
    return f'"envy_of":[{_quoted(table_id)},{_quoted(round_id)},{seat!r}],'


def _optional_text(name: str, value: object) -> str | None:
    """The ``"name":value,`` member of an optional string (L4), "" while it is empty."""
    if type(value) is not str:
        return None
    return f'"{name}":{_quoted(value)},' if value else ""


def _canonical_detail(event: PrizeAwarded) -> str:
    """The generic path: the event's ``to_dict`` without the transfers, as canonical JSON."""
    detail = event.to_dict()
    del detail["transfers"]
    return canonical_json(detail)


def prize_detail_json(event: PrizeAwarded) -> str:
    """A prize's detail_json: ``canonical_json`` of its ``to_dict`` without the transfers."""
    template = DetailTemplate.of(event)
    return template.json(event) if template is not None else _canonical_detail(event)


@dataclass(frozen=True, slots=True)
class DetailTemplate:
    """A prize detail's canonical JSON (sorted keys, no spaces, ASCII) around its values that
    vary between prizes alike: the award id, the player (O1) and the seat."""

    head: str  # up to the award id
    middle: str  # from the award id to the player
    before_seat: str
    tail: str  # after the seat

    @staticmethod
    def of(event: PrizeAwarded) -> DetailTemplate | None:
        """The template of prizes alike ``event``; None if a shared value is not of a type the
        engine makes (the caller then uses ``canonical_json``)."""
        numbers = (event.amount_pesos, event.bet_pesos)
        shared = (event.group_id, event.prize, event.round_id, event.table_id)
        cards, levels = _strings(event.cards), _strings(event.transfer_levels)
        envy, level = _envy(event.envy_of), _optional_text("level", event.level)
        if (
            any(type(n) is not int for n in numbers)
            or any(type(s) is not str for s in shared)
            or None in (cards, levels, envy, level)
        ):
            return None
        group_id, prize, round_id, table_id = (_quoted(s) for s in shared)
        return DetailTemplate(
            f'{{"amount_pesos":{numbers[0]!r},"award_id":',
            f',"bet_pesos":{numbers[1]!r},"cards":{cards},{envy}"group_id":{group_id},{level}',
            f'"prize":{prize},"round_id":{round_id},"seat":',
            f',"table_id":{table_id},'
            + (f'"transfer_levels":{levels},' if event.transfer_levels else "")
            + '"type":"PrizeAwarded"}',
        )

    def json(self, event: PrizeAwarded) -> str:
        """``event``'s detail, as ``canonical_json`` writes it."""
        award_id, player, seat = event.award_id, event.player, event.seat
        if type(award_id) is not str or type(player) is not str or type(seat) is not int:
            return _canonical_detail(event)
        member = f'"player":{_quoted(player)},' if player else ""
        quoted = _quoted(award_id)
        return f"{self.head}{quoted}{self.middle}{member}{self.before_seat}{seat!r}{self.tail}"


@dataclass(frozen=True, slots=True)
class _Alike:
    """What prizes alike share: their entry's and award's prototypes and detail template."""

    entry: pot_pb2.LedgerEntry
    award: pot_pb2.Award
    detail: DetailTemplate | None


class PrizeRecords:
    """The ledger entries and awards of one table event's prizes in one group."""

    def __init__(
        self,
        group_id: str,
        event_id: str,
        occurred_at: Timestamp,
        recorded_at: Timestamp,
        table_sequence: int,
    ) -> None:
        self._group_id = group_id
        self._event_id = event_id
        self._occurred_at = occurred_at
        self._recorded_at = recorded_at
        self._table_sequence = table_sequence
        self._alike: dict[tuple[object, ...], _Alike] = {}

    @staticmethod
    def handles(event: Event) -> TypeGuard[PrizeAwarded]:
        """Whether ``event`` is a prize whose records this builds (any other, the generic path)."""
        return (
            type(event) is PrizeAwarded
            and type(event.cards) is tuple
            and type(event.transfers) is tuple
            and type(event.transfer_levels) is tuple
            and (event.envy_of is None or type(event.envy_of) is tuple)
        )

    def records(
        self, event: PrizeAwarded, index: int, sequence: int, version: int, pending: list[int]
    ) -> tuple[pot_pb2.LedgerEntry, pot_pb2.Award]:
        """The ledger entry (``index``: its place among the table event's entries, ``sequence``
        its ledger sequence, ``version`` and ``pending`` the configurations in force) and the
        award of one prize."""
        key = (
            event.group_id,
            event.table_id,
            event.round_id,
            event.prize,
            event.amount_pesos,
            event.bet_pesos,
            event.cards,
            event.transfers,
            event.level,
            event.transfer_levels,
            event.envy_of,
            version,
            *pending,
        )
        alike = self._alike.get(key)
        if alike is None:
            alike = self._alike[key] = self._prototypes(event, version, pending)
        entry = pot_pb2.LedgerEntry()
        entry.CopyFrom(alike.entry)
        entry.entry_id = f"{self._event_id}:{index}"
        entry.ledger_sequence = sequence
        entry.seat = event.seat
        detail = alike.detail
        entry.detail_json = detail.json(event) if detail is not None else _canonical_detail(event)
        award = pot_pb2.Award()
        award.CopyFrom(alike.award)
        award.award_id = event.award_id
        award.seat = event.seat
        if event.player:  # O1: a studio seat's player, whose wallet is paid
            award.player = event.player
        return entry, award

    def _prototypes(self, event: PrizeAwarded, version: int, pending: list[int]) -> _Alike:
        """The entry and award of ``event`` but for its seat, player, award id and detail."""
        transfers = messages.transfers(event.transfers)
        entry = pot_pb2.LedgerEntry(
            pot_group_id=self._group_id,
            type=pot_pb2.LEDGER_ENTRY_TYPE_PRIZE_AWARDED,
            transfers=transfers,
            config_version=version,
            pending_config_versions=pending,
            source_event_id=self._event_id,
            table_id=event.table_id,
            round_id=event.round_id,
            occurred_at=self._occurred_at,
            recorded_at=self._recorded_at,
            table_sequence=self._table_sequence,
            prize=event.prize,
            amount=event.amount_pesos,
        )
        award = pot_pb2.Award(
            pot_group_id=event.group_id,
            table_id=event.table_id,
            round_id=event.round_id,
            prize=event.prize,
            bet=event.bet_pesos,
            amount=event.amount_pesos,
            cards=list(event.cards),
            funded_by=transfers,
            source_event_id=self._event_id,
        )
        award.awarded_at.CopyFrom(self._occurred_at)
        if event.level:  # L4: only a group with levels names them
            award.level = event.level
        if event.envy_of:  # V1, V2: the hit an envy bonus is paid for
            table_id, round_id, seat = event.envy_of
            award.envy_of.CopyFrom(pot_pb2.EnvyHit(table_id=table_id, round_id=round_id, seat=seat))
        return _Alike(entry, award, DetailTemplate.of(event))
