"""The pot service's Kafka edge: table events through the one exactly-once processor.

:class:`PotPartition` is the :class:`~jackpot.platform.partition_handler.PartitionHandler` of
one jackpot.table-events.v1 partition: a :class:`~jackpot.pot.pot_book.PotBook` (the pot groups
whose events live there, which takes the consumer's records and returns the producer's) plus its
takeover check against the ledger and its metrics. The processor
(``jackpot.platform.exactly_once``) fences the partition's previous owner, restores the groups
from the compacted jackpot.pot-state.v1 (same partition number), and writes every batch's pot
updates, awards, ledger entries, dead letters, state snapshots and consumed offsets in one
transaction. A heartbeat pot update per owned group goes out at least once per second (rule D5),
as a tick of its own with the mark that keeps the group's update sequence.

At every takeover each restored group is checked against the ledger before anything is consumed
(R14, :meth:`PotPartition.verify_restored`): a state behind its ledger that the ledger extends is
repaired from it and goes on (``jackpot.pot.state_repair``: log, access log, metric); any other
disagreement halts the partition with one line naming the group, both positions and the runbook.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

import structlog
from aiokafka.structs import ConsumerRecord
from google.protobuf.message import DecodeError

from jackpot.domain.access import Principal, Role
from jackpot.domain.errors import DomainError
from jackpot.domain.level_figures import level_figures
from jackpot.domain.mystery import TriggerSource, secure_trigger
from jackpot.platform.access_log import AccessLog
from jackpot.platform.bundles import ledger_entries
from jackpot.platform.exactly_once import ExactlyOnceProcessor
from jackpot.platform.kafka import KafkaConnection, TopicReader
from jackpot.platform.serving import ServingFlag
from jackpot.pot.batch_records import OutputTopics, PotBatch
from jackpot.pot.ledger_audit import GroupAudit
from jackpot.pot.ledger_restore import TakeoverAudit, disagreement
from jackpot.pot.metrics import PotMetrics
from jackpot.pot.pot_book import PotBook
from jackpot.pot.records import pot_levels
from jackpot.pot.settings import PotSettings
from jackpot.pot.state_repair import RUN, RUNBOOK, Verdict, judge, refusal, repair
from jackpot.pot.transaction_cut import transaction_size
from jackpot.topics import LOCKED_ROUND_PREFIX, SEQUENCE_MARK_PREFIX
from jackpot.v1 import pot_pb2

log = structlog.get_logger("jackpot.pot.service")


class PotPartition:
    """The pot groups of one input partition, as the exactly-once processor drives them."""

    def __init__(
        self,
        partition: int,
        settings: PotSettings,
        metrics: PotMetrics,
        trigger_source: TriggerSource = secure_trigger,
        access_log: AccessLog | None = None,
    ) -> None:
        self.partition = partition
        self.settings = settings
        self.metrics = metrics
        self.access_log = access_log  # a repair at the takeover is written there (R14)
        self._trigger_source = trigger_source
        self.book = PotBook(
            partition,
            source=settings.source,
            event_id_window=settings.event_id_window,
            trigger_source=trigger_source,
            checkpoint_entries=settings.checkpoint_interval_entries,
            checkpoint_seconds=settings.checkpoint_interval_seconds,
            topics=OutputTopics(
                settings.pot_updates_topic,
                settings.awards_topic,
                settings.ledger_topic,
                settings.dead_letter_topic,
                settings.state_topic,
            ),
        )
        self._log = log.bind(instance=settings.processor.instance_id, partition=partition)

    @property
    def next_offset(self) -> int:
        return self.book.next_offset

    def restore(self, changelog: Mapping[bytes, bytes], committed: int | None) -> int | None:
        """Groups from their latest snapshots and update-sequence marks; consume from the
        committed offset, or from a snapshot's if the state is ahead of it."""
        snapshots: list[tuple[pot_pb2.PotGroupState, bytes]] = []
        marks: list[bytes] = []
        apart: list[bytes] = []
        for key, data in changelog.items():
            if key.startswith(LOCKED_ROUND_PREFIX):
                apart.append(data)  # the book checks each against its group's snapshot
                continue
            state = pot_pb2.PotGroupState.FromString(data)
            if state.input_partition != self.partition:
                self._log.warning(
                    "state_on_wrong_partition",
                    pot_group=state.pot_group_id,
                    input_partition=state.input_partition,
                )
            elif key.startswith(SEQUENCE_MARK_PREFIX):
                marks.append(data)
            else:
                snapshots.append((state, data))
        restored_offsets = [state.input_offset for state, _ in snapshots]
        next_offset = max([committed or 0, *restored_offsets])
        if committed is not None and restored_offsets and max(restored_offsets) > committed:
            self._log.warning(
                "state_ahead_of_committed_offset",
                committed=committed,
                state_offset=max(restored_offsets),
            )
        self.book.restore(
            (data for _, data in snapshots), next_offset, sequence_marks=marks, locked_rounds=apart
        )
        for group_id in self.book.groups:
            self._set_balances(group_id)
        if committed is None and not restored_offsets:
            return None
        return next_offset

    async def verify_restored(self) -> str:
        """R14: each group restored here, and each group the ledger holds on this partition,
        must agree with the ledger exactly, or the partition is not run (its tables stay
        closed); the operator is told by the log, ``jackpot_pot_groups_refused`` and
        ``jackpot_partitions_halted``. "" when everything agrees. A state behind its ledger
        that the ledger extends is repaired from it instead (``jackpot.pot.state_repair``).

        A group's entries are on the ledger partition of the same number, as the ledger has as
        many partitions as the table events (``jackpot.topics``) and both are keyed by group.
        Each group is checked from the last checkpoint its state names: the ledger is read from
        (by time) just before the oldest of them, so a takeover costs the entries written since
        the last checkpoints, not the ledger's history. A state written before checkpoints
        existed is checked from the partition's beginning once, and adopts the hash chain the
        check computes (its first checkpoint follows at the next heartbeat)."""
        groups = self.book.groups
        starts = {g: r.checkpoint_sequence if r.ledger_chain else 0 for g, r in groups.items()}
        async with KafkaConnection.of(self.settings).reader(self.settings.ledger_topic) as reader:
            begin = await self._ledger_read_start(reader, starts)
            try:
                books = await self._read_ledger(reader, starts, begin)
                missed = books.missed | {
                    g for g, start in starts.items() if start and g not in books.audits
                }
                if missed and begin is not None:  # a checkpoint before the seek: read it all
                    self._log.warning("checkpoint_before_read_start", groups=sorted(missed))
                    books = await self._read_ledger(reader, starts, None)
            except DecodeError as error:
                return f"ledger partition {self.partition}: {error}"
        self.metrics.takeover_ledger_entries.labels(partition=str(self.partition)).set(books.read)
        self._log.info("ledger_checked", entries_read=books.read, groups=len(groups))
        for group_id in sorted(set(books.stateless) | set(groups)):
            verdict = self._verdict(group_id, books)
            why = await self._repair(group_id, books) if verdict.repair else verdict.refused
            self.metrics.groups_refused.labels(pot_group=group_id).set(1 if why else 0)
            if why:
                self._log.error("restored_state_refused", pot_group=group_id, why=why)
                return why
        return ""

    def _verdict(self, group_id: str, books: TakeoverAudit) -> Verdict:
        runtime = self.book.groups.get(group_id)
        if runtime is None:
            stateless = GroupAudit(group_id, last_sequence=books.stateless[group_id])
            why = disagreement(group_id, None, 0, stateless)
            return Verdict(refusal(group_id, why, 0, stateless.last_sequence)) if why else RUN
        audit = books.audits.get(group_id)
        if audit is None and runtime.ledger_sequence:
            why = f"the ledger holds no checkpoint {runtime.checkpoint_sequence}, which it names"
            ledger_at = books.ends.get(group_id, 0)
            return Verdict(refusal(group_id, why, runtime.ledger_sequence, ledger_at))
        verdict = judge(
            group_id,
            runtime.group,
            runtime.ledger_sequence,
            runtime.ledger_chain,
            audit,
            books.at_state.get(group_id),
        )
        chain = audit.chain if audit is not None else None
        if verdict == RUN and chain is not None and not runtime.ledger_chain:
            runtime.ledger_chain = chain  # a state from before the chain: adopt it
        return verdict

    async def _repair(self, group_id: str, books: TakeoverAudit) -> str:
        """Rebuild a group whose stored state is behind its ledger and adopt it (R14); the
        refusal when the rebuild cannot be made, or does not agree with the ledger."""
        runtime = self.book.groups[group_id]
        state_at, ledger_at = runtime.ledger_sequence, books.audits[group_id].last_sequence
        stored = pot_pb2.PotGroupState.FromString(self.book.snapshot(group_id))
        try:
            rebuilt = repair(
                group_id,
                stored,
                books,
                partition=self.partition,
                update_sequence=max(runtime.update_sequence, await self._last_update(group_id)),
                now_ns=time.time_ns(),
                trigger_source=self._trigger_source,
            )
        except (DomainError, ValueError) as error:
            why = f"its repair from the ledger failed: {error}"
            return refusal(group_id, why, state_at, ledger_at)
        self.book.adopt(rebuilt.state.SerializeToString(deterministic=True), rebuilt.ledger)
        self._set_balances(group_id)
        replayed = len(books.after.get(group_id, ()))
        self._log.error(
            "pot_state_repaired_from_ledger",
            pot_group=group_id,
            state_entry=state_at,
            ledger_entry=ledger_at,
            entries_replayed=replayed,
            entries_recorded=len(rebuilt.ledger),
            runbook=RUNBOOK,
        )
        self.metrics.states_repaired.labels(pot_group=group_id).inc()
        if self.access_log is not None:
            me = Principal(f"pot:{self.settings.processor.instance_id}", frozenset({Role.SERVICE}))
            detail = (
                f"stored state at ledger entry {state_at}, ledger at {ledger_at}: "
                f"{replayed} entries replayed from the ledger; runbook {RUNBOOK}"
            )
            self.access_log.note(
                me, "pot_state_repaired_from_ledger", "recovered", group_id, detail
            )
        return ""

    async def _last_update(self, group_id: str) -> int:
        """The update_sequence of the group's last pot update on its topic (0: none): a
        repaired group goes on above it, as the updates of the lost state may be there."""
        connection = KafkaConnection.of(self.settings)
        async with connection.reader(self.settings.pot_updates_topic) as reader:
            latest = await reader.latest([group_id.encode()])
        record = latest.get(group_id.encode())
        try:
            return (
                pot_pb2.PotUpdate.FromString(record.value or b"").update_sequence if record else 0
            )
        except DecodeError:
            return 0

    async def _ledger_read_start(
        self, reader: TopicReader, starts: Mapping[str, int]
    ) -> dict[int, int] | None:
        """Where on the ledger partition the check begins: just before the oldest checkpoint
        of the groups here (None: the beginning, when some group has no checkpoint)."""
        groups = self.book.groups
        if any(not start and groups[g].ledger_sequence for g, start in starts.items()):
            return None
        times_ns = [groups[g].checkpoint_at_ns for g, start in starts.items() if start]
        if not times_ns:  # nothing restored: find groups the ledger holds without a state
            times_ns = [time.time_ns() - int(self.settings.checkpoint_interval_seconds * 1e9)]
        # A record's time is when its producer sent it, just after the checkpoint's recorded_at.
        since_ms = min(times_ns) // 1_000_000 - self.settings.checkpoint_seek_margin_ms
        return await reader.offsets_for_time(since_ms, [self.partition])

    async def _read_ledger(
        self, reader: TopicReader, starts: Mapping[str, int], begin: dict[int, int] | None
    ) -> TakeoverAudit:
        positions = {g: r.ledger_sequence for g, r in self.book.groups.items()}
        books = TakeoverAudit(dict(starts), positions)
        async for record in reader.records(begin, partitions=[self.partition]):
            for entry, raw in ledger_entries(record.value or b""):
                books.add(entry, raw)
        return books

    def apply(self, records: Sequence[ConsumerRecord[bytes, bytes]]) -> PotBatch:
        return self.book.batch(records[: transaction_size(records, self.book.groups)])

    def tick(self) -> PotBatch | None:
        return self.book.tick(self.settings.heartbeat_interval_ms / 1000)

    def commit(self, batch: PotBatch) -> None:
        outputs = batch.outputs
        self.book.commit(outputs)
        self.metrics.record_outcomes(outputs.applied, outputs.ignored, outputs.rejected)
        for group_id in outputs.snapshots:
            self._set_balances(group_id)
        for award in outputs.awards:
            if award.HasField("envy_of"):  # V1, V2
                self.metrics.envy_awarded(award.pot_group_id, award.level)

    def _set_balances(self, group_id: str) -> None:
        group = self.book.groups[group_id].group
        self.metrics.group_served(group_id)
        self.metrics.set_balances(group_id, group.balances, pot_levels(group))
        self.metrics.set_levels(group_id, level_figures(group))

    def rollback(self) -> None:
        self.book.rollback()

    def close(self) -> None:
        for group_id, runtime in self.book.groups.items():
            self.metrics.forget_group(group_id, runtime.group.balances)


class PotService:
    """Consumes table events, applies them, and writes everything in Kafka transactions."""

    def __init__(
        self,
        settings: PotSettings,
        metrics: PotMetrics | None = None,
        *,
        trigger_source: TriggerSource = secure_trigger,
        access_log: AccessLog | None = None,
    ) -> None:
        """``access_log``: the service's, where a takeover writes each state it repaired."""
        self.settings = settings
        self.metrics = metrics if metrics is not None else PotMetrics()
        # Ready unless a partition the group gave it cannot write (the brokers gone, issue 36).
        self.serving_flag = ServingFlag(serving=True)
        # Heartbeats are checked after every poll (poll_timeout_ms <= heartbeat_interval_ms).
        self.processor: ExactlyOnceProcessor[PotPartition] = ExactlyOnceProcessor(
            "pot",
            settings.processor,
            settings.kafka_options(),
            input_topic=settings.table_events_topic,
            changelog_topic=settings.state_topic,
            handler_factory=lambda p: PotPartition(
                p, settings, self.metrics, trigger_source, access_log
            ),
            metrics=self.metrics.processor,
            tick_seconds=0.0,
            on_ownership=self._on_ownership,
        )

    def _on_ownership(self, owned: list[int]) -> None:
        if self.serving_flag.set(self.processor.writable):
            log.warning("pot_serving", serving=self.serving_flag.serving, owned=owned)

    async def report_serving(self, report: Callable[[bool], Awaitable[None]]) -> None:
        """Tell ``report`` (the PotService's health) each time processing can or cannot write."""
        await self.serving_flag.report(report)

    @property
    def owned_partitions(self) -> list[int]:
        return self.processor.owned_partitions

    def owned_groups(self) -> list[str]:
        return sorted(g for h in self.processor.handlers() for g in h.book.groups)

    async def run(self) -> None:
        """Process until :meth:`stop` or a fatal error (ProcessorError)."""
        await self.processor.run()

    async def stop(self) -> None:
        await self.processor.stop()
