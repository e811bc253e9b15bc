"""Kafka in: pot updates, awards and payouts onto the board, and the clock that closes stale signs.

Pot updates and awards are followed from their end (only what is current matters); the payouts
topic (compacted, key award id) is read from its beginning at every start, so the pending prizes
are rebuilt without any state of the display's own.
"""

from __future__ import annotations

import asyncio
import time

import structlog
from google.protobuf.message import DecodeError

from jackpot.display import metrics
from jackpot.display.board import Board, PendingPrize, Winner
from jackpot.display.settings import DisplaySettings
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.platform.kafka import follow_latest
from jackpot.platform.tracing import Headers, batch_span, traceparent
from jackpot.v1 import payout_pb2, pot_pb2

log = structlog.get_logger("jackpot.display")
UPDATE_SPAN = "display.update"  # a pot update read (jackpot.platform.tracing)


def apply_record(
    board: Board,
    topic: str,
    value: bytes,
    settings: DisplaySettings,
    headers: Headers | None = None,
) -> None:
    now, wall = time.monotonic(), time.time()
    try:
        if topic == settings.pot_updates_topic:
            update = pot_pb2.PotUpdate.FromString(value)
            if not update.pot_group_id or update.sign_value < 0:
                log.warning("display_record_refused", topic=topic)
                return
            if update.lock_traces:
                traced(update, headers)
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
        elif topic == settings.payouts_topic:
            apply_payout(board, payout_pb2.Payout.FromString(value))
    except DecodeError:
        log.warning("display_record_malformed", topic=topic)


def traced(update: pot_pb2.PotUpdate, headers: Headers | None) -> None:
    """The display read a pot update: a ``display.update`` span under the pot's transaction,
    named in each of its lock traces for the push to the signs."""
    with batch_span(UPDATE_SPAN, [headers], **{"jackpot.pot_group": update.pot_group_id}) as span:
        context = traceparent(span) if span.is_recording() else ""
        for trace in update.lock_traces:
            trace.traceparent = context


def apply_payout(board: Board, payout: payout_pb2.Payout) -> None:
    """A payout's latest state onto its group's signs (pending while awaiting approval)."""
    if not (payout.pot_group_id and payout.award_id) or payout.amount < 0:
        log.warning("display_record_refused", topic="payouts", award=payout.award_id)
        return
    prize = PendingPrize(
        payout.award_id, payout.table_id, payout.seat, payout.prize, payout.amount, payout.order
    )
    awaiting = payout.state == payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
    board.payout(payout.pot_group_id, prize, awaiting)


async def follow(board: Board, settings: DisplaySettings) -> None:
    """Follow pot updates and awards from their end (the display keeps no state of its own)."""
    await follow_latest(
        settings.bootstrap_servers,
        [settings.pot_updates_topic, settings.awards_topic],
        lambda record: apply_record(
            board, record.topic, record.value or b"", settings, record.headers
        ),
        settings.kafka_security.client_options(),
        idle_restart_seconds=2 * settings.stale_seconds,
    )


async def follow_payouts(board: Board, settings: DisplaySettings) -> None:
    """Follow the payouts from the topic's beginning: the latest state of each award rebuilds the
    pending prizes after any start or reconnect."""
    await follow_latest(
        settings.bootstrap_servers,
        [settings.payouts_topic],
        lambda record: apply_record(board, record.topic, record.value or b"", settings),
        settings.kafka_security.client_options(),
        from_beginning=True,
    )


async def clock(board: Board, period: float = 0.25) -> None:
    while True:
        board.tick(time.monotonic())
        metrics.STALE_SIGNS.set(board.stale_count())
        await asyncio.sleep(period)
