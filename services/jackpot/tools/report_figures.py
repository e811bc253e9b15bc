"""The figures of `jackpot report`, computed from ledger records alone (rules D4, M2, C7; R1).

Pure, no I/O: it is given ledger records (partition, offset, bytes) in offset order per partition
and a period, so tests feed it entries, and returns a :class:`~jackpot.tools.report_model.Report`.
The records stream through a :class:`ReportBuilder` that folds each into its group's
:class:`GroupBooks`, which stay bounded whatever the ledger's length: the books at the two cuts,
the configuration versions, the period's awards not yet paid or voided, the last 25 awards, and
the period's chart points. A period's award row, once complete, goes to its group's sink
(:mod:`jackpot.tools.report_rows`: kept in memory by default; `jackpot report` spools it to disk
for its CSV annex), so a month of prizes is not held. Each group's ledger is cut at the
period's edges by ``recorded_at`` (an entry recorded before ``--from`` is in the opening books, the
first recorded at or after ``--to`` ends the group's period); the opening and closing books are
:class:`~jackpot.pot.ledger_audit.GroupAudit` replays, exactly as `jackpot audit` replays the
ledger, so the report's figures and the audit's agree by construction. The period's figures are
the differences, and its reconciliation line is rule M2 for the period::

    opening pots + collected + house advances == commission + awarded + closing pots

Where a group's books begin. A partition read from its first record (:func:`compute`) replays
every entry. A partition read from a later point (``windowed``: `jackpot report` seeks by time to a
checkpoint interval before ``--from``) begins each group at its first CHECKPOINT entry there
(:meth:`GroupAudit.from_checkpoint`, once
:func:`~jackpot.pot.ledger_audit.checkpoint_disagreement` finds it consistent), or
at its opening entry; its entries before that only name configurations and awards. The
checkpoint's ``state`` stands for what came before: the configuration in force and the pending
ones, the last 25 awards; a field only unread records state says ``not read (before T)``. A group
that cannot begin there (an entry of the period comes first, or the checkpoint disagrees with
itself) and a windowed partition with no checkpoint before the period (a ledger from before
checkpoints) are what :meth:`ReportBuilder.replays` names: the caller reads them again from their
first record, where the audit of every entry judges them. Checkpoints move no money and are not
events of the report (no award, configuration or collection).

A record that cannot be read is named by partition and offset, and the report then does not
claim to reconcile.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from google.protobuf.message import DecodeError

from jackpot.domain.money import MINOR_PER_PESO
from jackpot.platform.bundles import ledger_entries
from jackpot.pot import records
from jackpot.pot.ledger_audit import (
    AWARD_TYPES,
    BETS_COLLECTED,
    CHECKPOINT,
    PAYOUT_TYPES,
    GroupAudit,
    RecentIds,
    checkpoint_disagreement,
)
from jackpot.tools.report_model import (
    ConfigVersion,
    GroupReport,
    LedgerRecord,
    Period,
    Report,
    ReportInputError,
    iso,
    not_read,
)
from jackpot.tools.report_rows import AwardRow, SinkFactory, keep_awards
from jackpot.tools.report_split import LINKING_TYPES, TableKinds, figures_of, split_entry
from jackpot.v1 import pot_pb2

LAST_AWARDS = 25  # R1: the last 25 hits
HOUR_NS = 3600 * 10**9
MINUTE_NS = 60 * 10**9
PAYOUT_NOTES = 1_000  # payout steps remembered, before a group's start, for awards not read yet
SETTLING = frozenset(
    {pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID, pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_VOIDED}
)
CONFIG_TYPES = frozenset(
    {
        pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED,
        pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_PROPOSED,
        pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED,
    }
)
NAMED_TYPES = AWARD_TYPES | PAYOUT_TYPES  # entries that name an award or a payout step


def _stamp(timestamp: Any) -> int:
    return int(timestamp.seconds) * 10**9 + int(timestamp.nanos)


# ---------------------------------------------------------------------------- group books


class GroupBooks:
    """One pot group's books as its entries stream by, in ledger order; bounded by the period's
    entries (two audits, the configuration versions, the period's awards and the 25 before it).

    ``read_since_ns``: None when the partition is read from its first record (the books begin
    with the group's first entry); else when the read began: the books then begin at the group's
    first checkpoint or its opening entry, and :attr:`replay_because` says why they cannot."""

    def __init__(
        self,
        group_id: str,
        period: Period,
        read_since_ns: int | None = None,
        sink: SinkFactory = keep_awards,
    ) -> None:
        self.report = GroupReport(
            group_id, GroupAudit(group_id), GroupAudit(group_id), annex=sink(group_id)
        )
        self.period = period
        self.read_since_ns = read_since_ns
        self.started = read_since_ns is None
        self.from_checkpoint = False
        self.done = False
        self.replay_because = ""
        self.configs: dict[int, ConfigVersion] = {}
        self.before: dict[str, AwardRow] = {}  # the last LAST_AWARDS awards before the period
        # The period's awards not paid or voided yet (their row may still change), with their
        # place in award order; a complete row goes to the annex and is dropped from here.
        self.during: dict[str, tuple[int, AwardRow]] = {}
        self.recent: deque[AwardRow] = deque(maxlen=LAST_AWARDS)  # the period's last ones
        self.notes: dict[str, AwardRow] = {}  # payout steps read before the start, award unread
        self.settled: set[str] = set()  # awards paid or voided in the records read (windowed)
        self.in_force_at_start = 0
        self.from_bets_at_start: Counter[str] | None = None  # the closing books' at --from
        self.kinds = TableKinds()  # which tables are studio tables (O1)

    @property
    def needs_replay(self) -> str:
        """Why these books must be read again from the partition's first record ('' if not)."""
        if self.replay_because or self.started:
            return self.replay_because
        return "no checkpoint of it in the records read"

    def add(self, entry: pot_pb2.LedgerEntry, raw: bytes) -> None:
        if self.done:
            return
        stamp = entry.recorded_at
        recorded = stamp.seconds * 1_000_000_000 + stamp.nanos
        if not self.started:
            self._wait(entry, raw, recorded)
        elif recorded >= self.period.end_ns:
            self.done = True
        else:
            self._book(entry, raw, recorded)

    def _wait(self, entry: pot_pb2.LedgerEntry, raw: bytes, recorded: int) -> None:
        """Before the books begin: a checkpoint or the group's opening entry begins them; an
        earlier entry only names configurations and awards; one of the period is missed."""
        if entry.type == CHECKPOINT:
            self._start_at(entry, raw, recorded)
        elif (
            entry.ledger_sequence == 1 and entry.type == pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED
        ):
            self.started = True
            self.add(entry, raw)
        elif recorded >= self.period.start_ns:
            self.replay_because = f"its entry {entry.entry_id} of the period precedes a checkpoint"
            self.done = True
        else:
            _note_config(self.configs, entry)
            self.kinds.note(entry)
            self._note_award(entry, in_period=False)

    def _start_at(self, entry: pot_pb2.LedgerEntry, raw: bytes, recorded: int) -> None:
        """The books as the checkpoint states them; its state names what came before."""
        why = checkpoint_disagreement(entry)
        if why:
            self.replay_because = why
            self.done = True
            return
        report = self.report
        report.opening = GroupAudit.from_checkpoint(entry, raw)
        report.closing = GroupAudit.from_checkpoint(entry, raw)
        report.opened_from = (
            f"the checkpoint at ledger entry {entry.ledger_sequence} ({iso(recorded)})"
        )
        report.opened_checkpoint = (entry.ledger_sequence, recorded)
        self.started = self.from_checkpoint = True
        self.in_force_at_start = entry.config_version
        state = json.loads(entry.detail_json)["state"]
        self.kinds.from_state(state["tables"])
        self._configs_from(state)
        self._awards_from(state)
        self.done = recorded >= self.period.end_ns

    def _configs_from(self, state: Mapping[str, Any]) -> None:
        """The configuration in force at the checkpoint and the pending ones; when and by whom
        from the records read, or ``not read``."""
        earlier = not_read(self.read_since_ns or 0)
        listed = [(state["config"], earlier, earlier, True)]
        listed += [(config, who, why, False) for config, who, why in state["pending"]]
        for config, who, why, in_force in listed:
            version = int(config["version"])
            known = self.configs.get(version)
            if known is None:
                activated = earlier if in_force else ""
                self.configs[version] = ConfigVersion(
                    version, dict(config), earlier, who, why, activated
                )
            elif not known.proposed_at:  # its activation was read, not its proposal
                known.proposed_at, known.proposed_by, known.reason = earlier, who, why

    def _awards_from(self, state: Mapping[str, Any]) -> None:
        """The last 25 awards at the checkpoint: as read, or as its state has them."""
        earlier = not_read(self.read_since_ns or 0)
        rows: dict[str, AwardRow] = {}
        for award in state["last_awards"]:
            award_id = str(award["award_id"])
            row = self.before.get(award_id) or _state_row(award, earlier, self.notes.get(award_id))
            row.studio = self.kinds.is_studio(row.table_id, str(award.get("player", "")))
            rows[award_id] = row
        self.before = rows
        self.notes.clear()

    def _book(self, entry: pot_pb2.LedgerEntry, raw: bytes, recorded: int) -> None:
        report = self.report
        kind = entry.type
        settling = self.from_checkpoint and kind in SETTLING
        in_period = recorded >= self.period.start_ns
        if not in_period:
            if settling:
                self._seed(report.opening, entry)
            report.opening.add(entry, raw)
            self.in_force_at_start = entry.config_version or self.in_force_at_start
            if settling:
                self._seed(report.closing, entry)
            report.closing.add(entry, raw)
        else:
            self._book_in_period(entry, raw, recorded, kind, settling)
        linked = self.kinds.note(entry) if kind in LINKING_TYPES else ""
        if linked and in_period:
            report.studio_tables.add(linked)
        if kind in CONFIG_TYPES:
            _note_config(self.configs, entry)
        elif kind in NAMED_TYPES:
            self._note_award(entry, in_period)

    def _book_in_period(
        self, entry: pot_pb2.LedgerEntry, raw: bytes, recorded: int, kind: int, settling: bool
    ) -> None:
        """An entry of the period to the closing books and the period's figures (the hour's
        collections, the overflow, the main pot's course, the land/studio split), which only an
        entry with transfers or a collection moves: not two in five (a round settled, ...)."""
        report = self.report
        closing = report.closing
        if self.from_bets_at_start is None:
            self.from_bets_at_start = Counter(closing.from_bets)
            report.studio_tables |= self.kinds.linked_studio  # linked at --from
        if settling:
            self._seed(closing, entry)
        if kind == CHECKPOINT:
            closing.add(entry, raw)
            return
        series, main_before = report.main_series, closing.accounts["pot:main"]
        if not series:
            series.append((recorded, main_before))
        if not (entry.transfers or kind == BETS_COLLECTED or kind in AWARD_TYPES):
            closing.add(entry, raw)
            return
        overflow_before, before = closing.overflow, figures_of(closing)
        closing.add(entry, raw)
        if kind == BETS_COLLECTED:
            hour = recorded - recorded % HOUR_NS
            report.collected_by_hour[hour] += entry.amount * MINOR_PER_PESO
        report.overflow += closing.overflow - overflow_before
        main_after = closing.accounts["pot:main"]
        if main_after != main_before:
            plot_main(series, recorded, main_after)
        books = report.studio if self.kinds.is_studio(entry.table_id) else report.land
        split_entry(books, entry, before, figures_of(closing))

    def _seed(self, audit: GroupAudit, entry: pot_pb2.LedgerEntry) -> None:
        """In books begun at a checkpoint, a payment or void of an award made before it: the
        award was open there (for its amount as the last awards state it, else as settled), so
        that the payment settles it, and a second one is still refused."""
        if not self.from_checkpoint or entry.type not in SETTLING:
            return
        award_id = entry.source_event_id
        if award_id in audit.open_awards or award_id in self.settled:
            return
        row = self.before.get(award_id)
        audit.open_awards[award_id] = entry.amount if row is None else row.amount
        if row is None and audit is self.report.closing:
            self.report.earlier_payments += 1
            if _stamp(entry.recorded_at) >= self.period.start_ns:
                self.report.earlier_paid.append(award_id)

    def _note_award(self, entry: pot_pb2.LedgerEntry, in_period: bool) -> None:
        """Awards, and who approved and paid each (the payout service's ledger entries)."""
        if entry.type in AWARD_TYPES:
            row = _award_row(entry, in_period, self.kinds)
            if in_period:
                self.during[row.award_id] = (self.report.award_count, row)
                self.report.award_count += 1
                self.recent.append(row)
                return
            self.before[row.award_id] = row
            if len(self.before) > LAST_AWARDS:
                del self.before[next(iter(self.before))]
            return
        if entry.type not in PAYOUT_TYPES:
            return
        award_id = entry.source_event_id
        if self.read_since_ns is not None and entry.type in SETTLING:
            self.settled.add(award_id)
        pending = self.during.get(award_id)
        target = pending[1] if pending else self.before.get(award_id)
        if target is None and not self.started:
            target = self.notes.setdefault(award_id, AwardRow(award_id, "", 0, "", "", 0, "", ""))
            if len(self.notes) > PAYOUT_NOTES:
                del self.notes[next(iter(self.notes))]
        if target is not None:
            _payout_step(target, entry)
        if pending is None and in_period:  # an earlier award's step: a longer period's row
            step = (entry.type, entry.changed_by, iso(_stamp(entry.recorded_at)))
            self.report.steps_before.setdefault(award_id, []).append(step)
        if pending and entry.type in SETTLING:  # its row is complete: to the annex
            del self.during[award_id]
            self.report.annex.add(*pending)

    def finish(self) -> GroupReport:
        report = self.report
        report.problems = list(report.closing.problems)
        if self.needs_replay:
            report.problems.append(
                f"its books do not begin in the records read: {self.needs_replay}"
            )
        start = self.period.start_ns
        report.configs = [
            c
            for version, c in sorted(self.configs.items())
            if version == self.in_force_at_start
            or (c.activated_ns or 0) >= start
            or c.proposed_ns >= start
        ]
        at_start = self.from_bets_at_start
        if at_start is None and self.started:  # nothing in the period: as linked at --from
            report.studio_tables |= self.kinds.linked_studio
        if at_start is not None:  # what each pot received from bets in the period
            for account, amount in report.closing.from_bets.items():
                if account.startswith("pot:") and amount != at_start[account]:
                    report.received[account.removeprefix("pot:")] = amount - at_start[account]
        for pending in sorted(self.during.values(), key=lambda p: p[0]):  # open at --to
            report.annex.add(*pending)
        self.during.clear()
        report.annex.close()
        report.last_awards = [*self.before.values(), *self.recent][-LAST_AWARDS:]
        return report


# ---------------------------------------------------------------------------- the builder


class ReportBuilder:
    """Every group's books as the ledger's records stream by, in offset order per partition.

    ``windowed``: partitions read from a later point than their first record, with when that
    read began (ns); the others are read from their first record. ``replaying``: only these
    partitions and, per partition, these groups (None: all), read from their first record.
    ``awards``: where each group's award rows go (an ``AwardSink`` each; default: kept)."""

    def __init__(
        self,
        period: Period,
        only_groups: Sequence[str] = (),
        *,
        windowed: Mapping[int, int] | None = None,
        replaying: Mapping[int, frozenset[str] | None] | None = None,
        awards: SinkFactory = keep_awards,
    ) -> None:
        self.period = period
        self.awards = awards
        self.only = frozenset(only_groups)
        self.windowed = dict(windowed or {})
        self.replaying = replaying
        self.books: dict[str, GroupBooks] = {}
        self.partition_of: dict[str, int] = {}
        self.seen: set[str] = set()  # every group with a record read
        self.unreadable: list[str] = []
        self.records = 0
        self.checkpointed: set[int] = set()  # partitions with a checkpoint before the period
        self.workers_rss_mb = 0.0  # what other processes that fed it cost (their peak RSS)

    def add(self, record: LedgerRecord) -> None:
        self.add_value(record.partition, record.offset, record.value)

    def add_value(self, partition: int, offset: int, value: bytes) -> None:
        """One record (what :meth:`add` takes, without a :class:`LedgerRecord` made for each of
        a day's million records)."""
        self.records += 1
        try:
            entries = ledger_entries(value)
        except DecodeError as error:
            self.unreadable.append(
                f"ledger partition {partition} offset {offset} cannot be read "
                f"({error}); the books cannot be reconciled past it"
            )
            return
        for entry, raw in entries:
            self._add_entry(partition, entry, raw)

    def _add_entry(self, partition: int, entry: pot_pb2.LedgerEntry, value: bytes) -> None:
        group_id = entry.pot_group_id
        self.seen.add(group_id)
        if entry.type == CHECKPOINT and _stamp(entry.recorded_at) < self.period.start_ns:
            self.checkpointed.add(partition)
        if (self.only or self.replaying is not None) and not self.wanted(partition, group_id):
            return
        books = self.books.get(group_id)
        if books is None:
            since = self.windowed.get(partition)
            books = GroupBooks(group_id, self.period, since, self.awards)
            self.books[group_id] = books
            self.partition_of[group_id] = partition
        books.add(entry, value)

    def wanted(self, partition: int, group_id: str) -> bool:
        if self.only and group_id not in self.only:
            return False
        if self.replaying is None:
            return True
        groups = self.replaying.get(partition, frozenset())
        return groups is None or group_id in groups

    def replays(self) -> dict[int, frozenset[str] | None]:
        """What to read again from each partition's first record: a windowed partition without a
        checkpoint before the period (all of it: its groups may have no entry in the records
        read), and every group whose books could not begin in them."""
        again: dict[int, frozenset[str] | None] = {}
        if not self.only:
            again = {p: None for p in self.windowed if p not in self.checkpointed}
        for group_id, books in sorted(self.books.items()):
            partition = self.partition_of[group_id]
            if books.needs_replay and again.get(partition, frozenset()) is not None:
                again[partition] = (again.get(partition) or frozenset()) | {group_id}
        return again

    def unseen(self) -> list[str]:
        """Groups asked for without a record read."""
        return sorted(self.only - self.seen)

    def replace(self, replayed: ReportBuilder) -> None:
        """The groups read again in ``replayed`` take its books instead of these."""
        self.books = {
            g: b for g, b in self.books.items() if not replayed.wanted(self.partition_of[g], g)
        }
        self.books.update(replayed.books)
        self.partition_of.update(replayed.partition_of)
        self.seen |= replayed.seen
        self.unreadable += [u for u in replayed.unreadable if u not in self.unreadable]
        self.records += replayed.records
        self.workers_rss_mb += replayed.workers_rss_mb

    def shed(self) -> None:
        """Once fed every record: drop what only further records need, the audits' windows of
        recent entry ids (a replayed entry is seen among them), some 100,000 ids a busy group;
        a worker's builder then travels back small (``--jobs``)."""
        for books in self.books.values():
            for audit in (books.report.opening, books.report.closing):
                audit.recent_ids = RecentIds()

    def absorb(self, other: ReportBuilder) -> None:
        """The books another builder computed from other partitions (so of other groups)."""
        self.books.update(other.books)
        self.partition_of.update(other.partition_of)
        self.seen |= other.seen
        self.unreadable += other.unreadable
        self.records += other.records
        self.checkpointed |= other.checkpointed

    def report(self) -> Report:
        unknown = sorted(self.only - set(self.books))
        if unknown:
            known = ", ".join(sorted(self.seen)) or "none"
            raise ReportInputError(
                f"no pot group {', '.join(unknown)} in the ledger (groups there: {known})"
            )
        groups = [self.books[g].finish() for g in sorted(self.books)]
        return Report(self.period, groups, list(self.unreadable), self.records, self.workers_rss_mb)


def compute(
    records: Iterable[LedgerRecord],
    period: Period,
    only_groups: Sequence[str] = (),
    awards: SinkFactory = keep_awards,
) -> Report:
    """The report of ``period`` for every group in the ledger (or only the named ones), from
    records read from each partition's first one, streamed: each group's books stay bounded."""
    builder = ReportBuilder(period, only_groups, awards=awards)
    for record in records:
        builder.add(record)
    return builder.report()


# ---------------------------------------------------------------------- entry by entry


def plot_main(series: list[tuple[int, int]], at: int, value: int) -> None:
    """The main pot's course: its value at its last move of each minute (a day is 1,440 points,
    not one per bet), after the opening point."""
    if len(series) > 1 and series[-1][0] // MINUTE_NS == at // MINUTE_NS:
        series[-1] = (at, value)
    else:
        series.append((at, value))


def _note_config(configs: dict[int, ConfigVersion], entry: pot_pb2.LedgerEntry) -> None:
    """Configuration versions with when and by whom (rule C7)."""
    if entry.type not in CONFIG_TYPES:
        return
    detail = json.loads(entry.detail_json or "{}")
    at = iso(_stamp(entry.recorded_at))
    recorded = _stamp(entry.recorded_at)
    if entry.type == pot_pb2.LEDGER_ENTRY_TYPE_CONFIG_ACTIVATED:
        version = int(detail.get("version", 0))
        row = configs.get(version)
        if row is None:  # proposed before the records read: a checkpoint's state says by whom
            row = configs[version] = ConfigVersion(
                version, dict(detail.get("config", {})), "", "", ""
            )
        row.activated_at = at
        row.activated_ns = recorded
        return
    version = int(detail.get("version", detail.get("config_version", 0)))
    opened = entry.type == pot_pb2.LEDGER_ENTRY_TYPE_POT_GROUP_OPENED
    configs[version] = ConfigVersion(
        version,
        dict(detail.get("config", {})),
        at,
        entry.changed_by,
        entry.reason,
        at if opened else "",
        recorded,
        recorded if opened else None,
    )


def _award_row(entry: pot_pb2.LedgerEntry, in_period: bool, kinds: TableKinds) -> AwardRow:
    detail = json.loads(entry.detail_json or "{}")
    studio = kinds.is_studio(entry.table_id, str(detail.get("player", "")))
    return AwardRow(
        str(detail.get("award_id", "")),
        entry.table_id,
        entry.seat,
        entry.round_id,
        entry.prize,
        entry.amount,
        iso(_stamp(entry.occurred_at)),
        iso(_stamp(entry.recorded_at)),
        cards=" ".join(str(card) for card in detail.get("cards", ())),
        in_period=in_period,
        studio=studio,
    )


def _state_row(award: Mapping[str, Any], earlier: str, note: AwardRow | None) -> AwardRow:
    """An award a checkpoint's state remembers (no times: ``earlier``), with the payout steps
    read before the checkpoint (``note``)."""
    message = records.award_from_dict(award)
    row = AwardRow(
        message.award_id,
        message.table_id,
        message.seat,
        message.round_id,
        message.prize,
        message.amount,
        earlier,
        earlier,
        cards=" ".join(message.cards),
        approved_by=earlier,
        paid_by=earlier,
        paid_at=earlier,
    )
    if note is not None:
        row.approved_by = note.approved_by or earlier
        row.paid_by, row.paid_at = note.paid_by or earlier, note.paid_at or earlier
    return row


def _payout_step(row: AwardRow, entry: pot_pb2.LedgerEntry) -> None:
    payout_step(row, entry.type, entry.changed_by, iso(_stamp(entry.recorded_at)))


def payout_step(row: AwardRow, kind: int, changed_by: str, at: str) -> None:
    """A payout lifecycle step (its ledger entry's type, who, when) on an award's row."""
    if kind == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_APPROVED:
        row.approved_by = changed_by
    elif kind == pot_pb2.LEDGER_ENTRY_TYPE_PAYOUT_PAID:
        row.paid_by = changed_by
        row.paid_at = at
