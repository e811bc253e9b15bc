"""`jackpot report` figures from ledger entries alone, without Kafka (rules D4, M2, C7; R1).

A ledger is made by the real pot processor with a clock that advances a minute per entry batch,
so a period can be cut in the middle of it; every figure is checked against a sum taken straight
from the entries and against `jackpot audit`'s replay of the same ledger.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from loadtest.rounds import CONFIG, interleaved_rounds, simulated_tables

from jackpot import cli
from jackpot.domain.cards import Game
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.platform.manifest import Verification
from jackpot.pot import commands
from jackpot.pot.ledger_audit import AWARD_TYPES, CHECKPOINT, GroupAudit
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.tools.report import sections, write_csv
from jackpot.tools.report_document import render_document
from jackpot.tools.report_figures import compute
from jackpot.tools.report_model import LedgerRecord, Period, Report, ReportInputError, parse_period
from jackpot.tools.report_words import Style
from jackpot.v1 import pot_pb2

GROUP = "report-group"
START_NS = 1_780_000_000 * 10**9
MINUTE_NS = 60 * 10**9
VERIFIED = Verification(Path("/opt/jackpot"), digest="ab" * 32)


def render_html(report: Report, lang: str = "en") -> str:
    """The report's document, as `jackpot report` writes it, in ``lang``."""
    return render_document(report, Style(lang), "Casino de prueba", VERIFIED, START_NS)


def ledger(rounds: int = 120, checkpoint_entries: int = 10_000) -> list[pot_pb2.LedgerEntry]:
    rng = random.Random(16)
    tables = simulated_tables(GROUP, [Game.CARIBBEAN, Game.GO_POKER, Game.DRAW], rng)
    for table in tables:
        table.royal_rate = 0.08
    events = [
        commands.create_group(GROUP, CONFIG, requested_by="ana@casino", reason="opening"),
        *(t.link_command() for t in tables),
        *interleaved_rounds(tables, rounds, rng),
    ]
    clock = itertools.count(START_NS, MINUTE_NS)
    processor = PotBook(0, clock_ns=lambda: next(clock), checkpoint_entries=checkpoint_entries)
    entries: list[pot_pb2.LedgerEntry] = []
    for offset, event in enumerate(events):  # one batch per event: its own minute
        out = processor.apply_batch(
            [InputRecord(event.SerializeToString(), "t", 0, offset, GROUP.encode())]
        )
        processor.commit(out)
        assert not out.dead_letters
        entries += out.ledger
    return entries


def as_records(entries: list[pot_pb2.LedgerEntry]) -> list[LedgerRecord]:
    return [LedgerRecord(0, n, e.SerializeToString()) for n, e in enumerate(entries)]


def recorded(entry: pot_pb2.LedgerEntry) -> int:
    return entry.recorded_at.seconds * 10**9 + entry.recorded_at.nanos


def test_R1_the_report_gives_each_pot_its_meters_and_the_last_25_awards() -> None:
    """R1, M2: a period cut out of the middle of the ledger; every figure equals the sums over
    the entries recorded in it, the closing books equal the audit's, the period reconciles."""
    entries = ledger()
    times = sorted(recorded(e) for e in entries)
    period = Period(times[len(times) // 3], times[2 * len(times) // 3])
    inside = [e for e in entries if period.start_ns <= recorded(e) < period.end_ns]
    before = [e for e in entries if recorded(e) < period.end_ns]
    report = compute(as_records(entries), period)
    assert report.reconciles, report.groups[0].problems
    (group,) = report.groups
    bets = [e for e in inside if e.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED]
    awards = [e for e in inside if e.type in AWARD_TYPES]
    assert bets
    assert awards
    assert group.collected == sum(e.amount for e in bets) * MINOR_PER_PESO
    assert group.awarded == sum(e.amount for e in awards) * MINOR_PER_PESO
    commission = sum(
        t.amount.numerator * MINOR_PER_PESO // t.amount.denominator
        for e in inside
        for t in e.transfers
        if t.target == "commission"
    )
    assert group.commission == commission
    assert [a.award_id for a in group.awards] == [
        e.detail_json.split('"award_id":"')[1].split('"')[0] for e in awards
    ]
    assert sum(hits for hits, _ in group.prizes.values()) == len(awards)
    assert sum(amount for _, amount in group.prizes.values()) == sum(e.amount for e in awards)
    audit = GroupAudit(GROUP)  # what `jackpot audit` computes of the ledger up to the cut
    for entry in before:
        audit.add(entry)
    assert group.closing.pots == audit.pots
    assert group.closing.accounts == audit.accounts
    received = sum(group.received.values())
    assert received == group.collected - group.commission
    every_award = [e for e in before if e.type in AWARD_TYPES]
    assert len(every_award) > 25
    assert [a.amount for a in group.last_awards] == [e.amount for e in every_award[-25:]]
    first = group.awards[0]
    assert len(first.cards.split()) == 5  # the winning hand
    assert (first.table_id, first.seat, first.prize) == (
        awards[0].table_id,
        awards[0].seat,
        awards[0].prize,
    )
    (v1,) = group.configs  # in force the whole period: who opened the group, its base and pots
    assert (v1.version, v1.proposed_by, v1.reason) == (1, "ana@casino", "opening")
    assert v1.config["base"] == CONFIG["base"]
    assert sum(group.collected_by_hour.values()) == group.collected
    assert group.main_series[-1][1] == group.closing.pots["main"]


def test_the_csv_and_html_state_every_section_and_the_verdict(tmp_path: Path) -> None:
    entries = ledger(40)
    report = compute(as_records(entries), Period(0, 2**62))
    written = write_csv(tmp_path, report)
    assert {p.stem for p in written} == {*sections(report), "awards"}  # the annex apart
    summary = (tmp_path / "summary.csv").read_text()
    assert "reconciles" in summary
    assert "DOES NOT" not in summary
    assert f"*,records read,{len(entries)}" in summary  # what the report cost
    assert f"{GROUP},opening books from,the ledger's first entry" in summary
    page = render_html(report)
    assert page.count("<svg") == 2  # the main pot over the period, contributions per hour
    assert "do not reconcile" not in page.lower()
    assert "<script" not in page


def test_an_unreadable_entry_is_named_by_offset_and_the_report_does_not_reconcile() -> None:
    records = as_records(ledger(20))
    records.insert(7, LedgerRecord(0, 99, b"\xff\xff\xff not a ledger entry"))
    report = compute(records, Period(0, 2**62))
    assert not report.reconciles
    assert report.unreadable
    assert "partition 0 offset 99" in report.unreadable[0]
    assert render_html(report).count("THESE BOOKS DO NOT RECONCILE") == 1


def test_a_tampered_amount_does_not_reconcile() -> None:
    entries = ledger(20)
    bets = next(e for e in entries if e.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED)
    bets.amount += 1  # the entry now claims more bets than its transfers moved
    report = compute(as_records(entries), Period(0, 2**62))
    assert not report.reconciles
    assert any("moved from bets" in p for p in report.groups[0].problems)


def test_bad_periods_and_unknown_groups_are_refused() -> None:
    now = START_NS
    assert parse_period(None, None, now) == Period(now - 86_400 * 10**9, now)
    assert (
        parse_period("2026-12-01", "2026-12-02T00:00:00Z", now).end_ns
        - parse_period("2026-12-01", "2026-12-02T00:00:00Z", now).start_ns
        == 86_400 * 10**9
    )
    with pytest.raises(ReportInputError, match="is not before --to"):
        parse_period("2026-12-02", "2026-12-01", now)
    with pytest.raises(ReportInputError, match="--from 'yesterday' is not a date"):
        parse_period("yesterday", None, now)
    with pytest.raises(ReportInputError, match="no pot group nope in the ledger"):
        compute(as_records(ledger(2)), Period(0, 2**62), ["nope"])


def test_the_command_refuses_a_reversed_period_before_reading_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    argv = ["report", "--from", "2026-12-02", "--to", "2026-12-01", "--out", str(out)]
    assert cli.main(argv) == 2
    assert "is not before --to" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "environ", "said"),
    [
        (["--lang", "fr"], {}, "argument --lang: invalid choice: 'fr'"),
        (["--time-zone", "Mars/Base"], {}, "argument --time-zone: 'Mars/Base' is not a time zone"),
        ([], {"JACKPOT_REPORT_TIME_ZONE": "Mars/Base"}, "JACKPOT_REPORT_TIME_ZONE='Mars/Base'"),
        ([], {"JACKPOT_REPORT_LANG": "fr"}, "JACKPOT_REPORT_LANG='fr'"),
    ],
)
def test_a_bad_language_or_time_zone_is_refused_with_one_line_naming_it(
    argv: list[str],
    environ: dict[str, str],
    said: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "report"
    try:
        status = cli.main(["report", "--out", str(out), *argv])
    except SystemExit as exit_:  # argparse's refusal
        status = int(exit_.code or 0)
    assert status == 2
    assert said in capsys.readouterr().err
    assert not out.exists()


def test_checkpoints_are_verified_but_are_no_events_of_the_report() -> None:
    """A ledger checkpointed every 25 entries: each checkpoint in it is checked against the
    entries before it (figures and hash chain), and none is an award, a configuration, a
    collection or a point of the main pot's chart; the figures are those of the entries."""
    entries = ledger(checkpoint_entries=25)
    times = sorted(recorded(e) for e in entries)
    period = Period(times[len(times) // 3], times[2 * len(times) // 3])
    inside = [e for e in entries if period.start_ns <= recorded(e) < period.end_ns]
    assert sum(e.type == CHECKPOINT for e in inside) >= 5
    report = compute(as_records(entries), period)
    assert report.reconciles, report.groups[0].problems
    (group,) = report.groups
    assert group.closing.checkpoints == sum(
        e.type == CHECKPOINT for e in entries if recorded(e) < period.end_ns
    )
    assert group.closing.chain is not None  # followed from the first entry
    assert len(group.awards) == sum(e.type in AWARD_TYPES for e in inside)
    moves_main = [e for e in inside if any("pot:main" in (t.source, t.target) for t in e.transfers)]
    # the opening value, then the main pot at its last move of each minute that moved it
    minutes = {recorded(e) // MINUTE_NS for e in moves_main}
    assert len(minutes) < len(moves_main)  # the chart is bounded by minutes, not by bets
    assert len(group.main_series) == 1 + len(minutes)
    assert [at // MINUTE_NS for at, _ in group.main_series[1:]] == sorted(minutes)
    assert group.main_series[-1][1] == group.closing.pots["main"]
    assert group.main_series[0][0] == min(recorded(e) for e in inside if e.type != CHECKPOINT)
    bets = [e for e in inside if e.type == pot_pb2.LEDGER_ENTRY_TYPE_BETS_COLLECTED]
    assert group.collected == sum(e.amount for e in bets) * MINOR_PER_PESO


def test_the_report_is_computed_from_a_stream() -> None:
    """compute() takes any iterable of records, one at a time (the command streams Kafka)."""
    entries = ledger(20)
    stream = (LedgerRecord(0, n, e.SerializeToString()) for n, e in enumerate(entries))
    report = compute(stream, Period(0, 2**62))
    assert report.reconciles
    assert report.records_read == len(entries)
    assert next(stream, None) is None
