"""A pot group written down and read back: the snapshot its state topic keeps, and its rebuild
from the ledger (R14, D4) when that state is lost or behind.

:class:`~jackpot.domain.engine.PotGroup` holds the rules; this module holds how its state is
persisted and replayed, reached through ``PotGroup.snapshot``, ``PotGroup.from_snapshot`` and
``PotGroup.from_ledger``. The snapshot is canonical JSON (its bytes are hashed and compared), in
format :data:`SNAPSHOT_FORMAT`; a snapshot of another format is refused (R4).

A locked round may be written apart (:func:`locked_round_record`): the snapshot then keeps only
its round id and forfeits, and :func:`from_snapshot` takes its bets and players from that record.
A studio round's 10,000 bets and players (O1) do not change while it is locked, and the pot writes
its group's snapshot after every batch that changes the group (``jackpot.pot.state_records``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from jackpot.domain.canonical import canonical_json
from jackpot.domain.cards import Game
from jackpot.domain.config import PotGroupConfig, load_config
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import Event
from jackpot.domain.group_state import (
    SETTLED_ROUNDS_REMEMBERED,
    Group,
    LinkedTable,
    LockedRound,
    MysteryState,
)
from jackpot.domain.mystery import TriggerSource

SNAPSHOT_FORMAT = 1
COUNTERS = ("collected", "commission", "awarded", "house_advance", "overflow")


G = TypeVar("G", bound=Group)
# How a group is made empty: ``PotGroup(group_id, config, trigger_source)``.
NewGroup = Callable[[str, PotGroupConfig, TriggerSource], G]


def snapshot(group: Group, *, public: bool = False, apart: Collection[str] = ()) -> bytes:
    """The whole state as canonical JSON bytes; :func:`from_snapshot` restores it exactly.

    ``public``: without the hidden mystery trigger (X2), as a ledger checkpoint may hold it;
    :func:`from_ledger` starts from such a snapshot and draws a new trigger. ``apart``: tables
    whose locked round's bets and players are in a :func:`locked_round_record` instead.
    """
    state = {
        "format": SNAPSHOT_FORMAT,
        "group_id": group.group_id,
        "config": group.config.to_config(),
        "pending": [[c.to_config(), who, why] for c, who, why in group.pending],
        "balances": group.balances,
        "collected": group.collected,
        "commission": group.commission,
        "awarded": group.awarded,
        "house_advance": group.house_advance,
        "overflow": group.overflow,
        "tables": {t.table_id: _table_entry(t) for t in group.tables.values()},
        "locked": {
            table: _locked_entry(r) if table not in apart else _apart_entry(r)
            for table, r in group.locked.items()
        },
        "settled": group.settled,
        "hits": group.hits,
        "wins": group.wins,
        "last_awards": group.last_awards,
        "mystery": None
        if group.mystery is None or public
        else [group.mystery.trigger_pesos, group.mystery.salt.hex(), group.mystery.commitment],
    }
    return canonical_json(state).encode()


def _locked_entry(locked: LockedRound) -> dict[str, Any]:
    return {
        "round_id": locked.round_id,
        "bets": [[s, b] for s, b in locked.bets.items()],
        "forfeited": [[s, why] for s, why in locked.forfeited.items()],
        **({"players": [[s, p] for s, p in locked.players.items()]} if locked.players else {}),
    }


def _apart_entry(locked: LockedRound) -> dict[str, Any]:
    """What the snapshot keeps of a round written apart: what changes while it is locked."""
    return {
        "round_id": locked.round_id,
        "apart": True,
        "forfeited": [[s, why] for s, why in locked.forfeited.items()],
    }


def locked_round_record(group: Group, table_id: str) -> bytes:
    """A locked round's bets and players as canonical JSON, for a snapshot written with the
    table ``apart``: what :func:`from_snapshot` is given back for it."""
    locked = group.locked[table_id]
    record = {
        "format": SNAPSHOT_FORMAT,
        "group_id": group.group_id,
        "table_id": table_id,
        "round_id": locked.round_id,
        "bets": [[s, b] for s, b in locked.bets.items()],
        "players": [[s, p] for s, p in locked.players.items()],
    }
    return canonical_json(record).encode()


def _table_entry(table: LinkedTable) -> list[Any]:
    """A linked table in the snapshot: [game, site], and a studio table's seats after (O1), so
    a land table's entry is as it was before studio tables."""
    entry: list[Any] = [table.game.value, table.site]
    return [*entry, table.studio_seats] if table.studio_seats else entry


def from_snapshot(
    cls: NewGroup[G],
    data: bytes,
    trigger_source: TriggerSource,
    apart: Mapping[str, bytes] | None = None,
) -> G:
    """The group a :func:`snapshot` wrote, exactly (M2 checked); ``apart``: by table, the
    :func:`locked_round_record` of each round the snapshot was written without (MALFORMED when
    one is missing, or of another round or group)."""
    state = json.loads(data)
    if state.get("format") != SNAPSHOT_FORMAT:
        raise DomainError(Reason.MALFORMED, f"unknown snapshot format {state.get('format')!r}")
    group = cls(state["group_id"], load_config(state["config"], recorded=True), trigger_source)
    group.pending = [(load_config(c, recorded=True), who, why) for c, who, why in state["pending"]]
    group.balances = {k: int(v) for k, v in state["balances"].items()}
    for name in COUNTERS:
        setattr(group, name, int(state[name]))
    group.tables = {
        t: LinkedTable(t, Game(entry[0]), entry[1], int(entry[2]) if len(entry) > 2 else 0)
        for t, entry in state["tables"].items()
    }
    group.locked = {
        table: _locked_round(r if not r.get("apart") else _merged(group, table, r, apart or {}))
        for table, r in state["locked"].items()
    }
    group.settled = {t: list(rounds) for t, rounds in state.get("settled", {}).items()}
    group.hits = {k: int(v) for k, v in state["hits"].items()}
    group.wins = {k: int(v) for k, v in state["wins"].items()}
    group.last_awards = list(state["last_awards"])
    if state["mystery"] is not None:
        trigger, salt, published = state["mystery"]
        group.mystery = MysteryState(int(trigger), bytes.fromhex(salt), published)
    group.check_conservation()
    return group


def _locked_round(entry: Mapping[str, Any]) -> LockedRound:
    return LockedRound(
        entry["round_id"],
        {int(s): int(b) for s, b in entry["bets"]},
        {int(s): str(why) for s, why in entry["forfeited"]},
        {int(s): str(p) for s, p in entry.get("players", ())},
    )


def _merged(
    group: Group, table_id: str, entry: Mapping[str, Any], apart: Mapping[str, bytes]
) -> dict[str, Any]:
    """A locked round written apart: its record's bets and players, the snapshot's forfeits."""
    where = f"table {table_id}'s locked round {entry['round_id']} of {group.group_id}"
    data = apart.get(table_id)
    if data is None:
        raise DomainError(Reason.MALFORMED, f"{where} was written apart and its record is missing")
    record = json.loads(data)
    found = (record.get("format"), record.get("group_id"), record.get("table_id"))
    if found != (SNAPSHOT_FORMAT, group.group_id, table_id) or (
        record.get("round_id") != entry["round_id"]
    ):
        raise DomainError(
            Reason.MALFORMED,
            f"{where} was written apart, and the record found holds round "
            f"{record.get('round_id')!r} of {record.get('group_id')!r} table "
            f"{record.get('table_id')!r} (format {record.get('format')!r})",
        )
    return {**record, "forfeited": entry["forfeited"]}


def from_ledger(
    cls: NewGroup[G],
    group_id: str,
    entries: Sequence[Mapping[str, Any]],
    trigger_source: TriggerSource,
    start: bytes | None = None,
) -> tuple[G, list[Event]]:
    """The group rebuilt from its ledger alone (R14, D4), when its stored state is lost.

    ``entries`` are the ledger's events in order, each the entry's detail (``type`` names the
    domain event) with its ``transfers`` as (source, target, picopesos). Balances, counters,
    meters, tables, locked rounds, settled rounds and configuration versions come back
    exactly. The one thing the ledger never holds is the hidden mystery trigger (X2): a new
    one is drawn, and the returned MysteryCommitted must be recorded before play resumes.
    ``start``: a checkpoint's public snapshot (:meth:`snapshot`), ``entries`` then being
    those after it, so that a rebuild does not replay the group's whole history. A stored
    state's private snapshot keeps its hidden trigger when no entry after it drew another
    (the pot's repair of a state behind its ledger, R14): nothing new to record then.
    """
    if start is not None:
        group = from_snapshot(cls, start, trigger_source)
        accounts = {f"pot:{name}": amount for name, amount in group.balances.items()}
        accounts |= {
            "bets": -group.collected,
            "house": -group.house_advance,
            "commission": group.commission,
            "awards": group.awarded,
        }
    else:
        opened = entries[0] if entries else {}
        if opened.get("type") != "PotGroupOpened" or not opened.get("config"):
            raise DomainError(
                Reason.MALFORMED,
                f"the ledger of {group_id} does not begin with its opening and first "
                "configuration (entries written before the ledger recorded it)",
            )
        group = cls(group_id, load_config(opened["config"], recorded=True), trigger_source)
        accounts = {}
    kept = group.mystery  # a private snapshot's trigger (a public one holds none, X2)
    for entry in entries:
        for source, target, amount in entry.get("transfers", ()):
            accounts[source] = accounts.get(source, 0) - int(amount)
            accounts[target] = accounts.get(target, 0) + int(amount)
        _replay(group, entry)
        if entry.get("type") == "MysteryCommitted":
            kept = None  # drawn again since: that trigger was never on the ledger
    for name in group.balances:
        group.balances[name] = accounts.get(f"pot:{name}", 0)
    group.collected = -accounts.get("bets", 0)
    group.house_advance = -accounts.get("house", 0)
    group.commission = accounts.get("commission", 0)
    group.awarded = accounts.get("awards", 0)
    group.check_conservation()
    if kept is not None and group.config.mystery is not None:
        group.mystery = kept  # still the trigger whose commitment the ledger holds
        return group, []
    return group, group.draw_mystery()


def _replay(group: Group, entry: Mapping[str, Any]) -> None:
    """One ledger event's effect on everything but the accounts (see :func:`from_ledger`)."""
    kind = entry.get("type")
    table_id = str(entry.get("table_id", ""))
    if kind == "TableLinked":
        studio_seats = int(entry.get("studio_seats", 0))  # O1
        group.tables[table_id] = LinkedTable(
            table_id, Game(entry["game"]), entry["site"], studio_seats
        )
    elif kind == "TableUnlinked":
        group.tables.pop(table_id, None)
    elif kind == "BetsCollected":
        bets = {int(seat): int(bet) for seat, bet in entry["bets"]}
        players = {int(seat): str(player) for seat, player in entry.get("players", ())}  # O1
        group.locked[table_id] = LockedRound(
            entry["round_id"], dict(sorted(bets.items())), players=players
        )
        group.overflow += sum(int(amount) for _, _, amount in entry["overflow"])
    elif kind == "SeatForfeited":
        group.locked[table_id].forfeited[int(entry["seat"])] = str(entry["reason"])
    elif kind == "RoundSettled":
        group.locked.pop(table_id, None)
        recent = group.settled.setdefault(table_id, [])
        recent.append(entry["round_id"])
        del recent[:-SETTLED_ROUNDS_REMEMBERED]
    elif kind in ("PrizeAwarded", "MysteryAwarded"):
        prize = entry["prize"] if kind == "PrizeAwarded" else "MYSTERY"
        group.hits[prize] = group.hits.get(prize, 0) + 1
        group.wins[prize] = group.wins.get(prize, 0) + int(entry["amount_pesos"])
        award = {k: v for k, v in entry.items() if k != "transfers"}
        award["transfers"] = [list(t) for t in entry.get("transfers", ())]
        group.remember_award(award)
    elif kind == "ConfigProposed":
        group.pending.append(
            (load_config(entry["config"], recorded=True), entry["changed_by"], entry["reason"])
        )
    elif kind == "ConfigActivated":
        group.pending.clear()
        group.adopt_config(load_config(entry["config"], recorded=True))
