"""A pot group's ``PotUpdate``: what the signs and the dealer terminals show of it after a batch
that changed it, or a heartbeat's (rule D5) that did not.

Its sign value and its rise since the group's previous update with a change (heartbeats repeat
the rise), each level's the same way (L4, D2), the pots, the limits, the linked tables and each
locked studio round's share of the top prize (O1). Each update takes the group's next
``update_sequence`` (the signs drop one older than what they showed).
"""

from __future__ import annotations

from jackpot.domain.level_figures import level_sign_values
from jackpot.platform import codec
from jackpot.pot import records
from jackpot.pot.group_runtime import GroupRuntime
from jackpot.v1 import pot_pb2


def pot_update(runtime: GroupRuntime, now_ns: int, heartbeat: bool) -> pot_pb2.PotUpdate:
    """The group's update as of now, remembered in ``runtime`` (its sequence, its rises)."""
    group = runtime.group
    sign_value = group.sign_value
    if not heartbeat:
        runtime.last_increment = sign_value - runtime.last_sign_value
        runtime.last_sign_value = sign_value
    runtime.update_sequence += 1
    config = group.config
    levels = _level_values(runtime, heartbeat)
    return pot_pb2.PotUpdate(
        pot_group_id=group.group_id,
        sign_value=sign_value,
        increment=runtime.last_increment,
        pots=records.pot_balances(group),
        min_bet=config.min_bet,
        max_bet=config.max_bet,
        credit_value=config.credit_value,
        config_version=config.version,
        table_ids=sorted(group.tables),
        heartbeat=heartbeat,
        produced_at=codec.timestamp_ns(now_ns),
        update_sequence=runtime.update_sequence,
        levels=levels,
        studio_rounds=records.studio_round_shares(group),
    )


def _level_values(runtime: GroupRuntime, heartbeat: bool) -> list[pot_pb2.LevelValue]:
    """L4, D2: each level's sign value and its rise since the group's previous update with
    a change (heartbeats repeat it), as the main sign's; none for a one-level group."""
    group = runtime.group
    if not group.config.has_levels:
        runtime.last_level_sign_values.clear()  # a configuration without levels took effect
        runtime.last_level_increments.clear()
        return []
    values = level_sign_values(group)
    if not heartbeat:
        last = runtime.last_level_sign_values
        runtime.last_level_increments = {
            name: value - last.get(name, value) for name, value in values.items()
        }
        runtime.last_level_sign_values = dict(values)
    return records.level_values(group, runtime.last_level_increments)
