"""Conversions between the domain engine's values and the jackpot.v1 messages the pot service emits.

Pure functions, no I/O: used by the pot's book (pot updates, awards, ledger entries), the query API
(pot groups, meters) and `jackpot audit`. Amounts inside the engine are picopesos (see
``jackpot.domain.money``); on the wire they are whole pesos or exact fractions
(:func:`jackpot.platform.codec.exact_amount`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jackpot.domain.canonical import canonical_json
from jackpot.domain.config import MAIN
from jackpot.domain.engine import PotGroup
from jackpot.domain.events import Transfer
from jackpot.domain.level_figures import level_figures
from jackpot.domain.money import floor_pesos
from jackpot.domain.studio_share import top_prize_shares
from jackpot.platform.codec import exact_amount, game_to_proto
from jackpot.v1 import pot_pb2

MYSTERY_PRIZE = "MYSTERY"


def transfers(items: Iterable[Transfer]) -> list[pot_pb2.Transfer]:
    return [
        pot_pb2.Transfer(source=source, target=target, amount=exact_amount(amount))
        for source, target, amount in items
    ]


def pot_balances(group: PotGroup) -> list[pot_pb2.PotBalance]:
    """Every pot's exact balance, main first, then in configuration order."""
    names = [MAIN] + [name for name in group.balances if name != MAIN]
    return [
        pot_pb2.PotBalance(name=name, balance=exact_amount(group.balances[name])) for name in names
    ]


def studio_round_shares(group: PotGroup) -> list[pot_pb2.StudioRoundShare]:
    """The studio sign's figures (O2-O5): each studio table's locked round and what the top
    prize would pay its bets now; the level named only in a group with several (L4)."""
    named = group.config.has_levels
    return [
        pot_pb2.StudioRoundShare(
            table_id=share.table_id,
            round_id=share.round_id,
            bets=share.bets,
            bet_total=share.bet_total,
            prize=share.prize,
            level=share.level if named else "",
            multiple=share.multiple,
            share=share.share,
            lowest_seat=share.lowest_seat,
            odd_pesos=share.odd_pesos,
            cap_multiple=share.cap_multiple,
        )
        for share in top_prize_shares(group)
    ]


def award_from_dict(
    award: Mapping[str, Any], funded_by: list[pot_pb2.Transfer] | None = None
) -> pot_pb2.Award:
    """An Award message from the engine's remembered award (PrizeAwarded/MysteryAwarded dict);
    ``funded_by``: its transfers as messages already (the ledger writer's)."""
    mystery = award.get("type") == "MysteryAwarded"
    message = pot_pb2.Award(
        award_id=award["award_id"],
        pot_group_id=award["group_id"],
        table_id=award["table_id"],
        round_id=award["round_id"],
        seat=award["seat"],
        prize=MYSTERY_PRIZE if mystery else award["prize"],
        bet=award.get("bet_pesos", 0),
        amount=award["amount_pesos"],
        cards=list(award.get("cards", ())),
        funded_by=funded_by
        if funded_by is not None
        else transfers((s, t, int(a)) for s, t, a in award.get("transfers", ())),
    )
    if award.get("player"):  # O1: a studio seat's player, whose wallet is paid
        message.player = award["player"]
    if award.get("level"):  # L4: only a group with levels names them
        message.level = award["level"]
    envy_of = award.get("envy_of")
    if envy_of:  # V1, V2: the hit an envy bonus is paid for
        table_id, round_id, seat = envy_of
        message.envy_of.CopyFrom(pot_pb2.EnvyHit(table_id=table_id, round_id=round_id, seat=seat))
    if mystery:
        message.mystery.CopyFrom(
            pot_pb2.MysteryReveal(
                trigger=award["trigger_pesos"],
                salt_hex=award["salt_hex"],
                commitment=award["commitment"],
            )
        )
    return message


def linked_tables(group: PotGroup) -> list[pot_pb2.LinkedTable]:
    return [
        pot_pb2.LinkedTable(
            table_id=table.table_id,
            game=game_to_proto(table.game),
            site=table.site,
            studio_seats=table.studio_seats,
            locked_round_id=group.locked[table.table_id].round_id
            if table.table_id in group.locked
            else "",
        )
        for table in sorted(group.tables.values(), key=lambda t: t.table_id)
    ]


def pot_group_message(state: pot_pb2.PotGroupState, group: PotGroup) -> pot_pb2.PotGroup:
    """What the query API shows of one group (never the hidden mystery trigger): every level of
    a group with several as its last pot update gave them (L4, with that update's rises, D2)."""
    config = group.config
    return pot_pb2.PotGroup(
        pot_group_id=group.group_id,
        sign_value=group.sign_value,
        pots=pot_balances(group),
        config_version=config.version,
        config_json=canonical_json(config.to_config()),
        pending_configs=[
            pot_pb2.PendingConfig(
                version=pending.version,
                config_json=canonical_json(pending.to_config()),
                changed_by=who,
                reason=why,
            )
            for pending, who, why in group.pending
        ],
        tables=linked_tables(group),
        min_bet=config.min_bet,
        max_bet=config.max_bet,
        credit_value=config.credit_value,
        mystery_commitment=group.mystery.commitment if group.mystery else "",
        update_sequence=state.update_sequence,
        ledger_sequence=state.ledger_sequence,
        state_written_at=state.written_at,
        levels=level_values(group, state.last_level_increments),
    )


def prize_meters(group: PotGroup) -> list[pot_pb2.PrizeMeter]:
    """Hits and wins per prize: paytable order (fixed, then percentage), then the mystery prize."""
    paytable = group.config.paytable
    order = [*paytable.fixed_order, *paytable.percent_order, MYSTERY_PRIZE]
    names = order + sorted(set(group.hits) - set(order))
    return [
        pot_pb2.PrizeMeter(prize=name, hits=group.hits.get(name, 0), wins=group.wins.get(name, 0))
        for name in names
        if name in group.hits or name != MYSTERY_PRIZE
    ]


def pot_levels(group: PotGroup) -> dict[str, str]:
    """Pot -> the level it is the pot or a reserve of (L4), for the metrics' ``level`` label;
    empty for a one-level group, whose series are labelled as before levels existed."""
    config = group.config
    if not config.has_levels:
        return {}
    return {pot: config.level_of_pot(pot) for pot in group.balances}


def level_values(
    group: PotGroup, increments: Mapping[str, int] | None = None
) -> list[pot_pb2.LevelValue]:
    """Every level of a group with levels as its sign shows it (L4, M3, D2); none for a one-level
    group, whose PotUpdate is exactly as it was before levels existed."""
    if not group.config.has_levels:
        return []
    increments = increments or {}
    return [
        pot_pb2.LevelValue(
            name=figures.name,
            label=figures.label,
            sign_value=figures.sign_value,
            increment=increments.get(figures.name, 0),
            base=floor_pesos(figures.base),
            pot=figures.pot,
        )
        for figures in level_figures(group)
    ]


def level_meters(group: PotGroup) -> list[pot_pb2.LevelMeter]:
    """Every level's meters (L1, L4) with the hits and wins of the prizes it pays, envy bonuses
    included (V1); none for a one-level group."""
    config = group.config
    if not config.has_levels:
        return []
    paid_by: dict[str, list[str]] = {level.name: [] for level in config.levels}
    paytable = config.paytable
    for name in (*paytable.fixed_order, *paytable.percent_order):
        prize = paytable.prizes[name]
        paid_by[config.level(prize.level).name].append(name)
        if prize.envy is not None:
            paid_by[config.level(prize.envy.level or prize.level).name].append(f"ENVY_{name}")
    return [
        pot_pb2.LevelMeter(
            name=figures.name,
            label=figures.label,
            pot=figures.pot,
            balance=exact_amount(figures.balance),
            sign_value=figures.sign_value,
            base=exact_amount(figures.base),
            reserves=exact_amount(figures.reserves),
            prizes=[
                pot_pb2.PrizeMeter(
                    prize=name, hits=group.hits.get(name, 0), wins=group.wins.get(name, 0)
                )
                for name in paid_by[figures.name]
            ],
        )
        for figures in level_figures(group)
    ]


def meters_message(group: PotGroup) -> pot_pb2.Meters:
    return pot_pb2.Meters(
        pot_group_id=group.group_id,
        collected=exact_amount(group.collected),
        commission=exact_amount(group.commission),
        pots=pot_balances(group),
        overflow=exact_amount(group.overflow),
        prizes=prize_meters(group),
        house_advances=exact_amount(group.house_advance),
        awarded=exact_amount(group.awarded),
        last_awards=[award_from_dict(award) for award in group.last_awards],
        config_version=group.config.version,
        levels=level_meters(group),
    )
