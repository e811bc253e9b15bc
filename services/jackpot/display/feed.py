"""Kafka in: pot updates and awards onto the board, and the clock that closes stale signs."""

from __future__ import annotations

import asyncio
import contextlib
import time

import structlog
from aiokafka import AIOKafkaConsumer
from google.protobuf.message import DecodeError

from jackpot.display import metrics
from jackpot.display.board import Board, Winner
from jackpot.display.settings import DisplaySettings
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.v1 import pot_pb2

log = structlog.get_logger("jackpot.display")


def apply_record(board: Board, topic: str, value: bytes, settings: DisplaySettings) -> None:
    now, wall = time.monotonic(), time.time()
    try:
        if topic == settings.pot_updates_topic:
            update = pot_pb2.PotUpdate.FromString(value)
            main = next((p.balance for p in update.pots if p.name == "main"), None)
            main_minor = (
                None
                if main is None or main.denominator <= 0
                else main.numerator * MINOR_PER_PESO // main.denominator
            )
            board.pot_update(
                update.pot_group_id,
                update.sign_value,
                main_minor,
                update.increment,
                update.min_bet,
                update.max_bet,
                now,
                wall,
            )
        elif topic == settings.awards_topic:
            award = pot_pb2.Award.FromString(value)
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
    while True:
        consumer = AIOKafkaConsumer(
            settings.pot_updates_topic,
            settings.awards_topic,
            bootstrap_servers=settings.bootstrap_servers,
            group_id=None,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="latest",
            request_timeout_ms=5000,
            **settings.kafka_security.client_options(),
        )
        try:
            await consumer.start()
            while True:
                batch = await consumer.getmany(timeout_ms=250)
                for partition, records in batch.items():
                    for record in records:
                        apply_record(board, partition.topic, record.value, settings)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the broker is away; the clock closes the signs meanwhile
            log.warning("display_feed_retry", error=repr(error))
            await asyncio.sleep(1)
        finally:
            with contextlib.suppress(Exception):
                await consumer.stop()


async def clock(board: Board, period: float = 0.25) -> None:
    while True:
        board.tick(time.monotonic())
        metrics.STALE_SIGNS.set(board.stale_count())
        await asyncio.sleep(period)
