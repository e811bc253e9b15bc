"""Kafka in: pot updates, awards and payouts onto the board, and the clock that closes stale signs.

Pot updates and awards are followed from their end (only what is current matters). The pending
prizes are rebuilt at every start and reconnect without any state of the display's own, from the
open-payouts topic (compacted, key award id, only what is open: :func:`follow_payouts`), then
followed from exactly where that read ended, so nothing written in between is missed. The payouts
topic (the whole history) is read instead only while the open-payouts topic is incomplete (a
partition without its ``#mark``: the payout service has not started on it yet).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import structlog
from aiokafka import TopicPartition
from google.protobuf.message import DecodeError

from jackpot.display import metrics
from jackpot.display.board import (
    Board,
    LevelReading,
    SignReading,
    StudioCount,
    StudioReading,
    StudioRound,
    Winner,
)
from jackpot.display.pending import PendingPrize
from jackpot.display.settings import DisplaySettings
from jackpot.platform import codec
from jackpot.platform.bundles import awards_of
from jackpot.platform.kafka import KafkaConnection, follow_latest, stop_client
from jackpot.platform.tracing import Headers, batch_span, traceparent
from jackpot.topics import OPEN_PAYOUTS_MARK_KEY, is_bookkeeping_key
from jackpot.v1 import common_pb2, payout_pb2, pot_pb2

log = structlog.get_logger("jackpot.display")
UPDATE_SPAN = "display.update"  # a pot update read (jackpot.platform.tracing)
RESTORE_SECONDS = 120.0  # a restore of the pending prizes that takes longer is retried
RETRY_SECONDS = 1.0  # after a failed restore or follow (broker away), and while no topic exists
# A follow restores again this often: a tombstone the cleaner removed while this display was cut
# off (delete.retention.ms) cannot leave a prize pending for good, and a restore costs only what
# is open.
RESYNC_SECONDS = 600.0


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
            received_ns = time.time_ns()
            for trace in update.lock_traces:
                trace.display_received_unix_nanos = received_ns
            board.pot_update(sign_reading(update), now, wall)
        elif topic == settings.awards_topic:
            with board.announced_once():  # a bundle: a studio round's winners (O4)
                for award, studio in counted_awards(awards_of(value), topic):
                    apply_award(board, award, now, studio)
        elif topic == settings.payouts_topic:
            apply_payout(board, payout_pb2.Payout.FromString(value))
    except DecodeError:
        log.warning("display_record_malformed", topic=topic)


def counted_awards(
    awards: Iterable[pot_pb2.Award], topic: str
) -> Iterator[tuple[pot_pb2.Award, StudioCount | None]]:
    """The well-formed awards of a record, in order; a run of one studio round's prizes of one
    hand (O4: its bundle holds thousands) as the run's first with how many and their total, which
    the banner counts as it would one by one: one change of the board, not thousands (the land
    tables' pot updates waited behind them, issue 39 item 6)."""
    run: tuple[pot_pb2.Award, int, int] | None = None
    for award in awards:
        if not (award.pot_group_id and award.award_id) or award.amount < 0:
            log.warning("display_record_refused", topic=topic)
            continue
        if run is not None and _same_banner(run[0], award):
            run = (run[0], run[1] + 1, run[2] + award.amount)
            continue
        if run is not None:
            yield run[0], run[1:]
            run = None
        if award.player:  # O9: only a studio round's prizes name their player
            run = (award, 1, award.amount)
        else:
            yield award, None
    if run is not None:
        yield run[0], run[1:]


def _same_banner(first: pot_pb2.Award, award: pot_pb2.Award) -> bool:
    return bool(award.player) and (
        award.pot_group_id,
        award.table_id,
        award.round_id,
        award.prize,
        award.level,
    ) == (first.pot_group_id, first.table_id, first.round_id, first.prize, first.level)


def apply_award(
    board: Board, award: pot_pb2.Award, now: float, studio: StudioCount | None = None
) -> None:
    """A well-formed award onto its group's banner (D2), with its level (L4) and the hit of an
    envy bonus (V1); ``studio``: a studio round's prizes counted from it (O4)."""
    hit = award.envy_of
    board.award(
        award.pot_group_id,
        Winner(
            award.table_id,
            award.seat,
            award.prize,
            award.amount,
            tuple(award.cards),
            award.award_id,
            round_id=award.round_id,
        ),
        now,
        level=award.level,
        envy_of=(hit.table_id, hit.round_id, hit.seat) if award.HasField("envy_of") else None,
        studio=studio,
    )


def sign_reading(update: pot_pb2.PotUpdate) -> SignReading:
    """What the sign takes from a pot update (its amounts, levels and lock traces)."""
    main = next((p.balance for p in update.pots if p.name == "main"), None)
    return SignReading(
        update.pot_group_id,
        update.sign_value,
        update.increment,
        update.min_bet,
        update.max_bet,
        None if main is None else pot_minor(main),
        update.lock_traces,
        level_readings(update),
        studio_readings(update),
    )


def pot_minor(amount: common_pb2.ExactAmount) -> int | None:
    """An exact balance in picopesos, floored (the one codec,
    :func:`jackpot.platform.codec.minor_units`); None when it is not a readable fraction."""
    try:
        return codec.minor_units(amount, floor=True)
    except ValueError:
        return None


def level_readings(update: pot_pb2.PotUpdate) -> list[LevelReading]:
    """The update's levels (L4), each with what its pot holds for the sign's M3 check."""
    pots = {pot.name: pot.balance for pot in update.pots}
    return [
        LevelReading(
            level.name,
            level.label,
            level.sign_value,
            level.increment,
            pot_minor(pots[level.pot]) if level.pot in pots else None,
        )
        for level in update.levels
    ]


def studio_readings(update: pot_pb2.PotUpdate) -> list[StudioReading]:
    """The update's studio rounds (O2-O5), each with what its paying pot holds (the main pot,
    or its level's, L2) for the sign's M3 check; one that fails it is logged (not shown)."""
    pots = {pot.name: pot.balance for pot in update.pots}
    level_pots = {level.name: level.pot for level in update.levels}
    readings = []
    for share in update.studio_rounds:
        pot = level_pots.get(share.level, "main") if share.level else "main"
        reading = StudioReading(
            StudioRound(
                share.table_id,
                share.round_id,
                share.bets,
                share.bet_total,
                share.prize,
                share.level,
                share.multiple,
                share.share,
                share.lowest_seat,
                share.odd_pesos,
                share.cap_multiple,
            ),
            pot_minor(pots[pot]) if pot in pots else None,
        )
        if not reading.shown():
            log.warning(
                "display_studio_share_refused",
                pot_group=update.pot_group_id,
                table=share.table_id,
                round=share.round_id,
                reason="its parts together are more than the pot holds (M3)",
            )
        readings.append(reading)
    return readings


def traced(update: pot_pb2.PotUpdate, headers: Headers | None) -> None:
    """The display read a pot update: a ``display.update`` span under the pot's transaction,
    named in each of its lock traces for the push to the signs."""
    with batch_span(UPDATE_SPAN, [headers], **{"jackpot.pot_group": update.pot_group_id}) as span:
        context = traceparent(span) if span.is_recording() else ""
        for trace in update.lock_traces:
            trace.traceparent = context


def apply_payout(board: Board, payout: payout_pb2.Payout) -> None:
    """A payout's latest state onto its group's signs (pending while awaiting approval)."""
    pending = pending_prize(payout)
    if pending is not None:
        board.payout(pending[0], pending[1], pending[2])


def pending_prize(payout: payout_pb2.Payout) -> tuple[str, PendingPrize, bool] | None:
    """(pot group, the prize, awaiting approval) of a payout; None for one the signs refuse."""
    if not (payout.pot_group_id and payout.award_id) or payout.amount < 0:
        log.warning("display_record_refused", topic="payouts", award=payout.award_id)
        return None
    prize = PendingPrize(
        payout.award_id,
        payout.table_id,
        payout.seat,
        payout.prize,
        payout.amount,
        payout.order,
        payout.round_id,
        studio=bool(payout.player),  # paid to the player's wallet (O9)
    )
    awaiting = payout.state == payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
    return payout.pot_group_id, prize, awaiting


async def follow(board: Board, settings: DisplaySettings) -> None:
    """Follow pot updates and awards from their end (the display keeps no state of its own)."""
    await follow_latest(
        KafkaConnection.of(settings),
        [settings.pot_updates_topic, settings.awards_topic],
        lambda record: apply_record(
            board, record.topic, record.value or b"", settings, record.headers
        ),
        idle_restart_seconds=2 * settings.stale_seconds,
        request_timeout_ms=settings.kafka_request_timeout_ms,
    )


@dataclass(slots=True)
class PendingRead:
    """The pending prizes read from one payouts topic (open payouts, or the whole history), to
    the end offsets the read began with: where the follow starts."""

    topic: str
    partitions: list[int] = field(default_factory=list)
    ends: dict[int, int] = field(default_factory=dict)
    marked: set[int] = field(default_factory=set)  # partitions with the payout service's mark
    pending: dict[str, tuple[str, PendingPrize]] = field(default_factory=dict)  # by award id
    read: int = 0

    @property
    def complete(self) -> bool:
        """Every partition carries its mark: the payout service writes this topic."""
        return bool(self.partitions) and self.marked == set(self.partitions)

    def add(self, partition: int, key: bytes | None, value: bytes | None) -> None:
        self.read += 1
        if key == OPEN_PAYOUTS_MARK_KEY:
            self.marked.add(partition)
        elif is_bookkeeping_key(key):
            pass  # the payout service's offset record
        elif value is None:  # a tombstone: settled
            self.pending.pop((key or b"").decode(errors="replace"), None)
        else:
            try:
                found = pending_prize(payout_pb2.Payout.FromString(value))
            except DecodeError:
                log.warning("display_record_malformed", topic=self.topic)
                return
            if found is not None and found[2]:
                self.pending[found[1].award_id] = (found[0], found[1])
            elif found is not None:
                self.pending.pop(found[1].award_id, None)

    def by_group(self) -> dict[str, list[PendingPrize]]:
        groups: dict[str, list[PendingPrize]] = {}
        for group, prize in self.pending.values():
            groups.setdefault(group, []).append(prize)
        return groups


async def read_pending(connection: KafkaConnection, topic: str) -> PendingRead:
    """Every record of ``topic`` to the end offsets it has now, into the pending prizes."""
    found = PendingRead(topic)
    counted = metrics.RESTORE_RECORDS.labels(topic=topic)
    async with connection.reader(topic) as reader:
        found.partitions = list(reader.partitions)
        _, found.ends = await reader.bounds()
        async for record in reader.records(end=found.ends, deadline_seconds=RESTORE_SECONDS):
            found.add(record.partition, record.key, record.value)
            counted.inc()
    return found


def apply_open_record(board: Board, key: bytes | None, value: bytes | None) -> None:
    """One record of the open-payouts (or payouts) topic onto the board, as it is followed."""
    if key == OPEN_PAYOUTS_MARK_KEY or is_bookkeeping_key(key):
        return
    if value is None:
        board.settled((key or b"").decode(errors="replace"))
        return
    try:
        apply_payout(board, payout_pb2.Payout.FromString(value))
    except DecodeError:
        log.warning("display_record_malformed", topic="payouts")


async def restore_pending(
    board: Board, settings: DisplaySettings, connection: KafkaConnection
) -> PendingRead:
    """The pending prizes from the open payouts (the payouts topic whole only while those are
    incomplete), put on the board at once in place of what it showed."""
    found = await read_pending(connection, settings.open_payouts_topic)
    if not found.complete:
        log.info(
            "display_open_payouts_incomplete",
            topic=found.topic,
            partitions=len(found.partitions),
            marked=len(found.marked),
        )
        found = await read_pending(connection, settings.payouts_topic)
    board.replace_pending(found.by_group())
    log.info(
        "display_payouts_restored",
        topic=found.topic,
        records=found.read,
        pending=len(found.pending),
    )
    return found


async def follow_from(
    board: Board,
    connection: KafkaConnection,
    topic: str,
    start: Mapping[int, int],
    seconds: float | None = None,
    *,
    request_timeout_ms: int,
) -> None:
    """Follow ``topic`` from ``start`` (the restore's end offsets), for ``seconds`` or forever;
    ``request_timeout_ms``: the display's ``kafka_request_timeout_ms``."""
    if not start:  # no such topic yet: look again
        await asyncio.sleep(RETRY_SECONDS)
        return
    consumer = connection.consumer(request_timeout_ms=request_timeout_ms)
    await consumer.start()
    loop = asyncio.get_running_loop()
    until = float("inf") if seconds is None else loop.time() + seconds
    try:
        partitions = [TopicPartition(topic, p) for p in start]
        consumer.assign(partitions)
        for tp in partitions:
            consumer.seek(tp, start[tp.partition])
        while loop.time() < until:
            batch = await consumer.getmany(timeout_ms=250)
            for records in batch.values():
                for record in records:
                    apply_open_record(board, record.key, record.value)
    finally:
        await stop_client(consumer)


async def follow_payouts(board: Board, settings: DisplaySettings) -> None:
    """The pending prizes: restored (:func:`restore_pending`), then followed from the restore's
    end offsets; restored again every ``RESYNC_SECONDS`` (the open payouts only: the history is
    followed until a failure) and after any failure (the broker away), so a settlement whose
    tombstone the log cleaner removed meanwhile still leaves the signs."""
    connection = KafkaConnection.of(settings)
    while True:
        try:
            found = await restore_pending(board, settings, connection)
            resync = RESYNC_SECONDS if found.topic == settings.open_payouts_topic else None
            await follow_from(
                board,
                connection,
                found.topic,
                found.ends,
                resync,
                request_timeout_ms=settings.kafka_request_timeout_ms,
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("display_payouts_retry", error=repr(error))
            await asyncio.sleep(RETRY_SECONDS)


async def clock(board: Board, period: float = 0.25) -> None:
    while True:
        board.tick(time.monotonic())
        metrics.STALE_SIGNS.set(board.stale_count())
        await asyncio.sleep(period)
