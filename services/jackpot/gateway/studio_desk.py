"""The gateway's studio tables: what the operator's game platform asks
(``jackpot.v1.StudioPlatformService``, :mod:`jackpot.gateway.studio_api`) judged by the table's
:class:`~jackpot.domain.studio_table.StudioTable`, made durable in the spool together with the
table events it causes, and only then answered (rules O1, O2, O5, C1, D5).

One command per table at a time (an asyncio lock each); the spool's group commit shares the fsync
with the land tables' writes. A command writes what it changed (:class:`StudioChange`): the
table's small head, the entries it added to the round (a chunk's bets and answers, a fold), and
the deletion of the round's entries once a deal or a void ends it, in one transaction with its
records; a command that changed nothing (a resend) writes nothing. A write that fails puts the
table back as the spool still holds it (:meth:`StudioTable.rewind`), and the platform hears the
error: what it was told was accepted is on disk, and goes to Kafka in order with the land tables'
events (:class:`~jackpot.gateway.publisher.SpoolPublisher`). At start each table is rebuilt from
its head and its round's entries; a table an older gateway kept whole in its row is rewritten in
this shape before anything else is written. A studio table is closed, like a land table,
while its pot group is silent or events wait unpublished (D5), and takes the group's limits from
its pot updates between rounds (E1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import structlog

from jackpot.domain.cards import Game
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.studio_table import BetAnswer, StudioBet, StudioChange, StudioTable
from jackpot.domain.table import UNKNOWN_LIMITS, Limits, Phase, limits_in_force
from jackpot.domain.table_messages import Fact, RoundLockedFact, RoundVoidedFact
from jackpot.gateway import metrics
from jackpot.gateway.event_records import published_record
from jackpot.gateway.settings import GatewaySettings, StudioTableSettings
from jackpot.gateway.spool import Spool, SpoolWrite

log = structlog.get_logger("jackpot.gateway.studio")
T = TypeVar("T")


class StudioDesk:
    """Every studio table of a gateway, and the durable way each platform command changes one."""

    def __init__(self, settings: GatewaySettings, spool: Spool, spooled: asyncio.Event) -> None:
        self.settings = settings
        self.spool = spool
        self._spooled = spooled  # wakes the publisher
        saved = spool.table_states()
        self.tables: dict[str, StudioTable] = {}
        for configured in settings.studio_tables:
            self.tables[configured.table_id] = _restored(
                spool, configured, saved.get(configured.table_id)
            )
        self.closed_reason: dict[str, str] = {t: "starting" for t in self.tables}
        self._locks: dict[str, asyncio.Lock] = {t: asyncio.Lock() for t in self.tables}

    # ------------------------------------------------------------------------------ commands

    def configured(self, table_id: str) -> StudioTableSettings:
        configured = self.settings.studio_table(table_id)
        if configured is None:
            raise DomainError(
                Reason.UNKNOWN_TABLE, f"studio table {table_id!r} is not on this gateway"
            )
        return configured

    async def open_round(self, table_id: str, round_id: str) -> bool:
        """Whether it was a resend (the round open already)."""
        return not await self._change(table_id, lambda t: (t.open_round(round_id), []))

    async def place_bets(
        self, table_id: str, round_id: str, chunk_id: str, bets: Sequence[StudioBet]
    ) -> tuple[tuple[BetAnswer, ...], bool]:
        answers, resent = await self._change(
            table_id, lambda t: (t.place_bets(round_id, chunk_id, bets), [])
        )
        if not resent:
            refused = [a.reason.value for a in answers if a.reason is not None]
            for reason in refused:
                metrics.REJECTS.labels(reason).inc()
            metrics.STUDIO_BETS.labels("accepted").inc(len(answers) - len(refused))
            metrics.STUDIO_BETS.labels("refused").inc(len(refused))
        return answers, resent

    async def lock(self, table_id: str, round_id: str) -> tuple[int, int, bool]:
        """(bets collected, their total in pesos, whether it was a resend)."""

        def lock(table: StudioTable) -> tuple[tuple[int, int, bool], list[Fact]]:
            facts = table.lock(round_id)
            bets = facts[0].bets if facts and isinstance(facts[0], RoundLockedFact) else ()
            if not facts:
                bets = tuple((seat, bet.pesos) for seat, bet in sorted(table.bets.items()))
            return (len(bets), sum(pesos for _, pesos in bets), not facts), facts

        return await self._change(table_id, lock)

    async def fold(self, table_id: str, round_id: str, seats: Iterable[int]) -> list[BetAnswer]:
        return await self._change(table_id, lambda t: _swapped(t.fold(round_id, list(seats))))

    async def deal(self, table_id: str, round_id: str, cards: Sequence[str]) -> bool:
        """Whether it was a resend (the round dealt before with this hand)."""
        return await self._change(table_id, lambda t: _resent(t.deal(round_id, cards)))

    async def void(self, table_id: str, round_id: str, reason: str) -> tuple[int, bool]:
        """(bets returned, whether it was a resend)."""

        def void(table: StudioTable) -> tuple[tuple[int, bool], list[Fact]]:
            facts = table.void(round_id, reason)
            voided = facts[0] if facts and isinstance(facts[0], RoundVoidedFact) else None
            return (len(voided.refunds) if voided else 0, voided is None), facts

        return await self._change(table_id, void)

    async def _change(
        self, table_id: str, command: Callable[[StudioTable], tuple[T, list[Fact]]]
    ) -> T:
        """Run ``command`` on the table; what it changed durable (with its records) first."""
        configured = self.configured(table_id)
        async with self._locks[table_id]:
            table = self.tables[table_id]
            mark = table.mark()
            result, facts = command(table)
            records = [self._record(configured, table, fact) for fact in facts]
            change = table.change_since(mark)  # with the records' numbers
            if change is None:
                return result  # a resend, or a refusal: nothing to write
            try:
                await self.spool.write(_spool_write(table_id, change, records))
            except Exception:
                table.rewind(mark)
                log.exception("studio_spool_write_failed", table=table_id)
                raise
            if records:
                self._spooled.set()
            return result

    def _record(
        self, configured: StudioTableSettings, table: StudioTable, fact: Fact
    ) -> tuple[str, bytes, bytes]:
        table.published += 1
        return published_record(
            self.settings,
            table.table_id,
            configured.pot_group_id,
            Game.CARIBBEAN,
            table.published,
            getattr(fact, "round_id", ""),
            None,
            fact,
        )

    # --------------------------------------------------------------- fail closed (rule D5)

    def refresh(
        self, closed_reason: Callable[[str], str], limits: Callable[[str], Limits | None]
    ) -> int:
        """Open or close each table as its pot group's ``closed_reason`` says (D5), and adopt
        the group's ``limits`` between rounds (E1), or in a round opened before they were known
        (every bet of it was refused so far: none was judged by other limits); the number
        closed."""
        closed = 0
        for configured in self.settings.studio_tables:
            table = self.tables[configured.table_id]
            group = limits(configured.pot_group_id)
            table.limits = limits_in_force(table.limits, group, table.phase is Phase.IDLE)
            reason = closed_reason(configured.pot_group_id)
            if reason != self.closed_reason.get(table.table_id):
                log.warning(
                    "progressive_closed" if reason else "progressive_opened",
                    table=table.table_id,
                    pot_group=configured.pot_group_id,
                    reason=reason or None,
                )
                self.closed_reason[table.table_id] = reason
            table.progressive_open = not reason
            closed += 1 if reason else 0
        return closed


def _restored(
    spool: Spool, configured: StudioTableSettings, state: dict[str, Any] | None
) -> StudioTable:
    """The table as the spool holds it (closed until its pot group is heard from), or new."""
    table = StudioTable(configured.table_id, configured.seats, UNKNOWN_LIMITS, False)
    if state is not None:
        try:
            table = _read(spool, configured.table_id, state)
        except (KeyError, TypeError, ValueError):
            log.error("studio_state_unreadable", table=configured.table_id)
            raise
    table.seats, table.progressive_open = configured.seats, False
    return table


def _read(spool: Spool, table_id: str, state: dict[str, Any]) -> StudioTable:
    """The table of its head and its open round's entries. A whole state (an older gateway's)
    is saved as a head and entries first, in one transaction, and read back from them."""
    if "bets" in state:
        whole = StudioTable.from_state(state)
        change = whole.saved()
        spool.commit_many([_spool_write(table_id, change, [])])
        log.info("studio_state_split", table=table_id, bets=len(whole.bets))
        state = change.head
    return StudioTable.restored(state, spool.round_entries(table_id, state["round_id"]))


def _spool_write(
    table_id: str, change: StudioChange, records: list[tuple[str, bytes, bytes]]
) -> SpoolWrite:
    """The spool's write of a studio table's change, with the records it causes."""
    return SpoolWrite(
        table_id,
        change.head,
        records,
        round_id=change.round_id,
        entries=tuple((number, entry.to_row()) for number, entry in change.entries),
        ended_round=change.ended,
    )


def _swapped(result: tuple[list[Fact], list[BetAnswer]]) -> tuple[list[BetAnswer], list[Fact]]:
    facts, answers = result
    return answers, facts


def _resent(facts: list[Fact]) -> tuple[bool, list[Fact]]:
    return not facts, facts
