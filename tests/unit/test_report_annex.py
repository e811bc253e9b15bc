"""`jackpot report` stays a document at a casino's size (issue 37 item 7; R1, D4, M2).

The document lists the last 25 prizes of each pot group and prints the annex's name, row count
and SHA-256; every prize of the period is in the annex, ``awards.csv``, written from spools on
disk (the report holds only the awards not yet paid and the last 25). The judges: a document of
10,000 prizes is as large as one of 10 (to the digits of its counts) and has 25 award rows; the
digest it prints is an independent ``hashlib.sha256`` of the written file, and a file changed
after the fact no longer matches it; the spooled annex equals the kept rows, in award order,
also when awards are paid out of that order; and the builder holds only the awards still open.
"""

from __future__ import annotations

import csv
import hashlib
import html
import itertools
import pickle
import re
from pathlib import Path

import pytest

from jackpot.pot.ledger_audit import GroupAudit
from jackpot.tools.report_annex import (
    ANNEX_NAME,
    AWARD_HEADER,
    Annex,
    AwardSpool,
    SpooledAwards,
    write_annex,
)
from jackpot.tools.report_charts import thin
from jackpot.tools.report_document import render_document
from jackpot.tools.report_figures import LAST_AWARDS, ReportBuilder, compute
from jackpot.tools.report_model import GroupReport, LedgerRecord, Period, Report
from jackpot.tools.report_rows import AwardRow, KeptAwards
from jackpot.tools.report_words import Style
from tests.report_ledgers import casino, day
from tests.unit.test_report import START_NS, VERIFIED
from tests.unit.test_report_checkpoints import every_record

pytestmark = pytest.mark.unit

GROUP = "annex-group"
PRINTED = re.compile(r"awards\.csv: ([\d.,]+) (?:filas|rows)\b.*?SHA-256 ([0-9a-f]{64})")
AWARD_ROW = re.compile(r"<tr><td>T\d+</td>")  # a row of the last prizes' table (table first)


def award(n: int) -> AwardRow:
    minute = f"{n // 60 % 24:02d}:{n % 60:02d}"
    return AwardRow(
        f"{GROUP}/T{n % 40}/R{n}/{n % 7}/FLUSH",
        f"T{n % 40}",
        n % 7,
        f"R{n}",
        "FLUSH",
        10_000 + n,
        f"2026-05-29T{minute}:00Z",
        f"2026-05-29T{minute}:00Z",
        cards="AS KS QS JS 9S",
        approved_by="floor@casino",
        paid_by="dealer-1",
        paid_at=f"2026-05-29T{minute}:30Z",
        in_period=True,
    )


def report_of(awards: int, sink: KeptAwards | SpooledAwards) -> Report:
    """A report of one group whose period had ``awards`` prizes (in its sink, as the builder
    leaves them)."""
    group = GroupReport(GROUP, GroupAudit(GROUP), GroupAudit(GROUP), annex=sink)
    rows = [award(n) for n in range(awards)]
    for ordinal, row in enumerate(rows):
        group.annex.add(ordinal, row)
    group.annex.close()
    group.award_count = awards
    group.last_awards = rows[-LAST_AWARDS:]
    return Report(Period(START_NS, START_NS + 86_400 * 10**9), [group])


def document(report: Report, annex: Annex | None, lang: str = "es") -> str:
    return render_document(report, Style(lang), "Casino de prueba", VERIFIED, START_NS, annex)


def printed_annex(page: str) -> tuple[int, str]:
    """The annex's row count and digest as the document prints them."""
    found = PRINTED.search(html.unescape(page))
    assert found, "the document does not name its annex"
    return int(found.group(1).replace(".", "").replace(",", "")), found.group(2)


def test_R1_the_document_is_as_large_at_10000_prizes_as_at_100_and_lists_the_last_25(
    tmp_path: Path,
) -> None:
    pages = {}
    for count in (10, 100, 10_000):
        folder = tmp_path / str(count)
        folder.mkdir()
        report = report_of(count, AwardSpool(folder)(GROUP))
        annex = write_annex(folder / ANNEX_NAME, report)
        pages[count] = document(report, annex)
        with (folder / ANNEX_NAME).open(newline="") as handle:
            rows = list(csv.reader(handle))
        assert rows[0] == AWARD_HEADER
        assert len(rows) == 1 + count  # every prize is in the annex
        assert printed_annex(pages[count]) == (count, annex.sha256)
    small, large = pages[100], pages[10_000]
    assert len(AWARD_ROW.findall(pages[10])) == 10
    assert len(AWARD_ROW.findall(small)) == len(AWARD_ROW.findall(large)) == LAST_AWARDS
    assert "R9974<" not in large  # the 26th from last is only in the annex
    assert "R9975<" in large
    assert "R9999<" in large
    # Bounded: the same page but for the digits of the counts, the rows and the digest.
    assert len(large) < 100_000
    assert abs(len(large) - len(small)) < 200, (len(small), len(large))


def test_R1_the_printed_digest_is_the_annexs_and_a_changed_annex_no_longer_matches(
    tmp_path: Path,
) -> None:
    report = report_of(300, KeptAwards())
    path = tmp_path / ANNEX_NAME
    annex = write_annex(path, report)
    for lang in ("es", "en"):
        rows, digest = printed_annex(document(report, annex, lang))
        assert digest == hashlib.sha256(path.read_bytes()).hexdigest()  # independent
        assert rows == 300 == sum(1 for _ in csv.reader(path.open(newline=""))) - 1
    # After the fact: one amount changed by one peso in the annex, the document as issued.
    text = path.read_text(encoding="utf-8")
    assert ",10150," in text
    path.write_text(text.replace(",10150,", ",10151,", 1), encoding="utf-8")
    _, digest = printed_annex(document(report, annex))
    assert hashlib.sha256(path.read_bytes()).hexdigest() != digest
    assert Annex.of(path, 300).sha256 != annex.sha256
    # A row removed: the same.
    path.write_text(text.replace(text.splitlines()[5] + "\n", ""), encoding="utf-8")
    assert hashlib.sha256(path.read_bytes()).hexdigest() != digest


def test_a_document_without_its_annex_says_so() -> None:
    page = html.unescape(document(report_of(3, KeptAwards()), None))
    assert "awards.csv: no escrito" in page
    assert not PRINTED.search(page)


@pytest.fixture(scope="module")
def records() -> list[LedgerRecord]:
    return every_record(casino())


def test_R1_the_spooled_annex_is_the_kept_rows_in_award_order_though_paid_out_of_it(
    records: list[LedgerRecord], tmp_path: Path
) -> None:
    """A day of the four-day casino, every fourth award paid 26 hours later (after the ones
    made after it): the annex written from spools equals the rows kept in memory, byte for
    byte, in the order the awards were made; the spools hold no row in memory."""
    period = Period(day(1), day(2))
    kept = compute(records, period)
    spooled = compute(records, period, awards=AwardSpool(tmp_path))
    assert [g.awards for g in spooled.groups] == [g.awards for g in kept.groups]
    (tmp_path / "kept").mkdir()
    (tmp_path / "spooled").mkdir()
    kept_annex = write_annex(tmp_path / "kept" / ANNEX_NAME, kept)
    spooled_annex = write_annex(tmp_path / "spooled" / ANNEX_NAME, spooled)
    assert kept_annex == spooled_annex
    assert kept_annex.rows == sum(g.award_count for g in kept.groups) > 50
    out_of_order = 0
    for group in spooled.groups:
        sink = group.annex
        assert isinstance(sink, SpooledAwards)
        assert sink.batch == []  # closed: every row on disk, none in memory
        written = [offset for offset in sink.offsets if offset >= 0]
        out_of_order += sum(b < a for a, b in itertools.pairwise(written))
        times = [a.recorded_at for a in group.awards]
        assert times == sorted(times)
    assert out_of_order > 0  # the spool's order is not award order, the annex's is


def test_the_builder_holds_only_the_awards_still_open(
    records: list[LedgerRecord], tmp_path: Path
) -> None:
    """Fed a day with a spooling sink, each group's books hold the awards not paid or voided
    by the end of what was read (and the last 25), not every award of the period."""
    builder = ReportBuilder(Period(day(1), day(2)), awards=AwardSpool(tmp_path))
    for record in records:
        builder.add(record)
    for books in builder.books.values():
        sink = books.report.annex
        assert isinstance(sink, SpooledAwards)
        spooled = sum(offset >= 0 for offset in sink.offsets)
        assert len(books.recent) <= LAST_AWARDS
        assert all(not row.paid_by for _, row in books.during.values())  # the open ones
        assert spooled + len(books.during) == books.report.award_count
        if books.report.award_count:  # every fourth is paid a day later: about a quarter open
            assert len(books.during) < books.report.award_count / 2, books.report.group_id
    assert max(books.report.award_count for books in builder.books.values()) > LAST_AWARDS
    report = builder.report()
    assert all(not books.during for books in builder.books.values())  # finished: all spooled
    assert sum(g.award_count for g in report.groups) == sum(
        len(g.awards) for g in compute(records, Period(day(1), day(2))).groups
    )


def test_a_line_chart_is_thinned_to_its_resolution_keeping_each_spans_extremes() -> None:
    minute = 60 * 10**9
    # A month of a pot climbing and falling back every 97 minutes, a point a minute.
    points = [(n * minute, 1_000 + n % 97 * 10) for n in range(30 * 1440)]
    thinned = thin(points, spans=500)
    assert len(thinned) <= 2 * 500 + 1
    assert thinned[0] == points[0]
    assert thinned[-1] == points[-1]
    assert max(y for _, y in thinned) == max(y for _, y in points)
    assert min(y for _, y in thinned) == min(y for _, y in points)
    assert [x for x, _ in thinned] == sorted({x for x, _ in thinned})
    few = points[:300]
    assert thin(few, spans=500) == few


def test_a_fed_builder_sheds_its_windows_of_ids_and_reports_the_same(
    records: list[LedgerRecord],
) -> None:
    """What a `--jobs` worker sends back: without the audits' windows of recent ids (some
    100,000 a busy group), a fraction of the size, and the same report."""
    period = Period(day(1), day(2))
    whole, shed = ReportBuilder(period), ReportBuilder(period)
    for record in records:
        whole.add(record)
        shed.add(record)
    shed.shed()
    assert len(pickle.dumps(shed)) < len(pickle.dumps(whole)) / 2
    assert all(not b.report.closing.recent_ids for b in shed.books.values())
    mine, theirs = shed.report(), whole.report()
    assert [(g.closing.figures(), g.awards, g.problems) for g in mine.groups] == [
        (g.closing.figures(), g.awards, g.problems) for g in theirs.groups
    ]
