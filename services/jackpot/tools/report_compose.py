"""A long period's report composed of the reports of its days, end to end (rules D4, M2; R1).

A month of a casino's ledger is tens of millions of entries, too many to replay for one
document; a casino files a report every gaming day anyway. :func:`compose` makes the report of
consecutive periods' reports (``pieces``, each read from the ledger as `jackpot report` reads
one) as the one read of the whole period would be: the opening books are the first piece's and
the closing books the last's; what each piece counted is summed (collections per pot and per
hour, overflow, awards, land and studio, each level's flows); the awards' rows follow one
another in award order, and a row still open at its piece's end takes the payout steps the later
pieces read for it (:attr:`GroupReport.steps_before`).

Pieces are joined only where they meet: each group's closing books of one piece must state
exactly the opening books of the next (every figure a checkpoint states, the ledger sequence and
the hash chain), so the composed period's figures are those of its two ends, as the ledger has
them, and a piece that was altered, is missing or overlaps is named as a finding, not summed.

Pure, no I/O: :mod:`jackpot.tools.report_days` keeps and reads the days' pieces.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Iterable, Sequence

from jackpot.pot.ledger_audit import GroupAudit
from jackpot.tools.report_figures import LAST_AWARDS, payout_step, plot_main
from jackpot.tools.report_model import ConfigVersion, GroupReport, LevelRow, Period, Report
from jackpot.tools.report_rows import AwardRow, SinkFactory, keep_awards
from jackpot.tools.report_split import TableBooks

# LevelRow's figures at a period's start (taken from the first piece) and at its end (the last
# piece's); every other figure is a flow, summed.
LEVEL_OPENING = ("opening", "reserves_opening")
LEVEL_CLOSING = ("closing", "reserves_closing")


def meeting_problem(before: GroupAudit, after: GroupAudit) -> str:
    """Why one piece's closing books are not the next piece's opening books ('' when they are):
    the figures a checkpoint states, the ledger sequence, and the hash chain where both know it."""
    stated = after.figures()
    wrong = [
        f"{name} {value} != {stated[name]}"
        for name, value in before.figures().items()
        if stated[name] != value
    ]
    if before.last_sequence != after.last_sequence:
        wrong.append(f"ledger entry {before.last_sequence} != {after.last_sequence}")
    if before.chain is not None and after.chain is not None and before.chain != after.chain:
        wrong.append(f"hash chain {before.chain.hex()[:16]}... != {after.chain.hex()[:16]}...")
    return "; ".join(wrong)


def compose(pieces: Sequence[Report], awards: SinkFactory = keep_awards) -> Report:
    """The report of the pieces' periods end to end, as one read of it would be; their award
    rows go, patched by the later pieces' payout steps, to ``awards``' sinks."""
    if not pieces:
        raise ValueError("no pieces to compose")
    for earlier, later in itertools.pairwise(pieces):
        if earlier.period.end_ns != later.period.start_ns:
            raise ValueError(
                f"the pieces {earlier.period.describe()} and {later.period.describe()} do not "
                "meet end to start"
            )
    period = Period(pieces[0].period.start_ns, pieces[-1].period.end_ns)
    names = sorted({group.group_id for piece in pieces for group in piece.groups})
    groups = [_group(name, pieces, awards) for name in names]
    unreadable = [line for piece in pieces for line in piece.unreadable]
    records = sum(piece.records_read for piece in pieces)
    rss = max((piece.workers_rss_mb for piece in pieces), default=0.0)
    return Report(period, groups, unreadable, records, rss)


def _group(name: str, pieces: Sequence[Report], awards: SinkFactory) -> GroupReport:
    """One group's books over the pieces (from the first piece that has them)."""
    held = [(piece, _find(piece, name)) for piece in pieces]
    first = next(i for i, (_, group) in enumerate(held) if group is not None)
    own = [group for _, group in held[first:] if group is not None]
    problems = [
        f"the day {piece.period.describe()} has no books of it"
        for piece, group in held[first:]
        if group is None
    ]
    if first and own[0].opening.last_sequence:
        problems.append(
            f"its books begin at ledger entry {own[0].opening.last_sequence} on "
            f"{pieces[first].period.describe()}, not in the days before it"
        )
    for before, after in itertools.pairwise(own):
        problem = meeting_problem(before.closing, after.opening)
        if problem:
            problems.append(
                f"the books at the end of one day are not those at the start of the next: {problem}"
            )
    start = own[0]
    composed = GroupReport(name, start.opening, own[-1].closing, annex=awards(name))
    composed.opened_from, composed.opened_checkpoint = start.opened_from, start.opened_checkpoint
    composed.problems = [*(p for group in own for p in group.problems), *problems]
    _sum_flows(composed, own)
    _awards(composed, own)
    composed.configs = _configs(own)
    composed.level_rows = _levels(own) if any(group.levels for group in own) else None
    return composed


def _find(piece: Report, name: str) -> GroupReport | None:
    return next((group for group in piece.groups if group.group_id == name), None)


def _sum_flows(composed: GroupReport, own: Sequence[GroupReport]) -> None:
    """What each piece counted over its own period: summed, or run on end to end."""
    composed.received = sum((Counter(group.received) for group in own), Counter())
    composed.overflow = sum(group.overflow for group in own)
    composed.collected_by_hour = sum((Counter(group.collected_by_hour) for group in own), Counter())
    composed.land = _table_books(group.land for group in own)
    composed.studio = _table_books(group.studio for group in own)
    composed.studio_tables = set().union(*(group.studio_tables for group in own))
    series = list(own[0].main_series)
    for group in own[1:]:  # each piece's opening point is the last one's closing value
        for at, value in group.main_series[1:]:
            plot_main(series, at, value)
    composed.main_series = series


def _table_books(books: Iterable[TableBooks]) -> TableBooks:
    total = TableBooks()
    for part in books:
        total.collected += part.collected
        total.commission += part.commission
        total.awarded += part.awarded
        total.award_count += part.award_count
        total.hits.update(part.hits)
        total.wins.update(part.wins)
    return total


def _awards(composed: GroupReport, own: Sequence[GroupReport]) -> None:
    """The rows in award order, each completed by the later pieces' payout steps; the last 25;
    the payments of awards from before the whole period."""
    known = {row.award_id for row in own[0].last_awards if not row.in_period}
    composed.earlier_payments = own[0].earlier_payments  # with those before its period
    ordinal = 0
    for index, group in enumerate(own):
        later = own[index + 1 :]
        earlier = [award for award in group.earlier_paid if award not in known]
        composed.earlier_paid += earlier
        if index:
            composed.earlier_payments += len(earlier)
        for row in group.annex.rows():
            composed.annex.add(ordinal, _completed(row, later))
            known.add(row.award_id)
            ordinal += 1
    composed.annex.close()
    composed.award_count = ordinal
    rows = [_completed(r, own[1:]) for r in own[0].last_awards if not r.in_period]
    for index, group in enumerate(own):
        rows += [_completed(r, own[index + 1 :]) for r in group.last_awards if r.in_period]
    composed.last_awards = rows[-LAST_AWARDS:]
    composed.steps_before = {
        award: steps
        for group in own
        for award, steps in group.steps_before.items()
        if award not in known
    }


def _completed(row: AwardRow, later: Sequence[GroupReport]) -> AwardRow:
    """``row`` with the payout steps the later pieces read for its award, in their order."""
    steps = [step for group in later for step in group.steps_before.get(row.award_id, ())]
    if not steps:
        return row
    row = dataclasses.replace(row)
    for kind, changed_by, at in steps:
        payout_step(row, kind, changed_by, at)
    return row


def _configs(own: Sequence[GroupReport]) -> list[ConfigVersion]:
    """Each version once: as the first piece that lists it says, with its activation from the
    piece that read it."""
    merged: dict[int, ConfigVersion] = {}
    for group in own:
        for config in group.configs:
            known = merged.get(config.version)
            if known is None:
                merged[config.version] = dataclasses.replace(config)
            elif known.activated_ns is None and config.activated_ns is not None:
                known.activated_at, known.activated_ns = config.activated_at, config.activated_ns
    return [merged[version] for version in sorted(merged)]


def _levels(own: Sequence[GroupReport]) -> list[LevelRow]:
    """Each level's rows: its balances at the first piece's start and the last's end, its flows
    summed (a level added on the way begins at zero)."""
    rows: dict[str, LevelRow] = {}
    for group in own:
        for row in group.levels:
            known = rows.get(row.name)
            if known is None:
                rows[row.name] = row
                continue
            flows = {
                f.name: getattr(known, f.name) + getattr(row, f.name)
                for f in dataclasses.fields(LevelRow)
                if isinstance(getattr(row, f.name), int)
                and f.name not in LEVEL_OPENING + LEVEL_CLOSING
            }
            flows.update({name: getattr(row, name) for name in LEVEL_CLOSING})
            rows[row.name] = dataclasses.replace(known, **flows)
    return list(rows.values())
