"""Kafka in: pot updates and awards onto the board, and the clock that closes stale signs."""

from __future__ import annotations

import asyncio
import time

import structlog
from google.protobuf.message import DecodeError

from jackpot.display import metrics
from jackpot.display.board import Board, Winner
from jackpot.display.settings import DisplaySettings
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.platform.kafka import follow_latest
from jackpot.v1 import pot_pb2

log = structlog.get_logger("jackpot.display")


def apply_record(board: Board, topic: str, value: bytes, settings: DisplaySettings) -> None:
    now, wall = time.monotonic(), time.time()
    try:
        if topic == settings.pot_updates_topic:
            update = pot_pb2.PotUpdate.FromString(value)
            if not update.pot_group_id or update.sign_value < 0:
                log.warning("display_record_refused", topic=topic)
                return
            main = next((p.balance for p in update.pots if p.name == "main"), None)
            main_minor = (
                None
                if main is None or main.denominator <= 0
                else main.numerator * MINOR_PER_PESO // main.denominator
            )
            received_ns = time.time_ns()
            for trace in update.lock_traces:
                trace.display_received_unix_nanos = received_ns
            board.pot_update(
                update.pot_group_id,
                update.sign_value,
                main_minor,
                update.increment,
                update.min_bet,
                update.max_bet,
                now,
                wall,
                update.lock_traces,
            )
        elif topic == settings.awards_topic:
            award = pot_pb2.Award.FromString(value)
            if not (award.pot_group_id and award.award_id) or award.amount < 0:
                log.warning("display_record_refused", topic=topic)
                return
            board.award(
                award.pot_group_id,
                Winner(
                    award.table_id,
                    award.seat,
                    award.prize,
                    award.amount,
                    tuple(award.cards),
                    award.award_id,
                ),
                now,
            )
    except DecodeError:
        log.warning("display_record_malformed", topic=topic)


async def follow(board: Board, settings: DisplaySettings) -> None:
    """Follow both topics from their end (the display keeps no state of its own)."""
    await follow_latest(
        settings.bootstrap_servers,
        [settings.pot_updates_topic, settings.awards_topic],
        lambda record: apply_record(board, record.topic, record.value or b"", settings),
        settings.kafka_security.client_options(),
        idle_restart_seconds=2 * settings.stale_seconds,
    )


async def clock(board: Board, period: float = 0.25) -> None:
    while True:
        board.tick(time.monotonic())
        metrics.STALE_SIGNS.set(board.stale_count())
        await asyncio.sleep(period)
