"""`make bench-history`'s report figures (issue 37 item 7): the PDF's pages are counted from its
page objects, and the report's targets (a day's PDF at most 40 pages, a month's report of its
kept days at most 60 s, judged only on a history of a month, and saying what the ledger alone
says) pass and fail as they say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from loadtest.history import targets
from loadtest.history_measure import pdf_pages

pytestmark = pytest.mark.unit


def test_the_pages_of_a_pdf_are_its_page_objects_not_its_page_tree(tmp_path: Path) -> None:
    pdf = tmp_path / "report.pdf"
    objects = [b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj"]
    objects.append(b"2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj")
    objects += [f"{n} 0 obj <</Type/Page /Parent 2 0 R>> endobj".encode() for n in (3, 4, 5)]
    pdf.write_bytes(b"%PDF-1.4\n" + b"\n".join(objects) + b"\n%%EOF\n")
    assert pdf_pages(pdf) == 3
    assert pdf_pages(tmp_path / "missing.pdf") is None


def verdicts(**figures: Any) -> dict[str, bool | None]:
    base = {"exits": "0/0/0", "errors": {}, **figures}
    return {what: met for what, met, _ in targets({float(figures.get("days", 7)): base})}


def test_the_report_targets_pass_fail_and_wait_for_a_month_of_history() -> None:
    day = "one-day report PDF <= 40 pages"
    month = "month report of its kept days <= 60 s (30 days)"
    month_pages = "month report PDF <= 40 pages"
    same = "month of kept days says what the ledger says"
    good = verdicts(report_one_day_pdf_pages=31, report_month_days=30.0, report_month_seconds=400.0,
                    report_month_kept_seconds=59.0, report_month_pdf_pages=31,
                    report_month_kept_same=True, days=30)  # fmt: skip
    assert (good[day], good[month], good[month_pages], good[same]) == (True, True, True, True)
    bad = verdicts(report_one_day_pdf_pages=676, report_month_days=30.0, report_month_seconds=20.0,
                   report_month_kept_seconds=61.0, report_month_pdf_pages=41,
                   report_month_kept_same=False, days=30)  # fmt: skip
    assert (bad[day], bad[month], bad[month_pages], bad[same]) == (False, False, False, False)
    week = verdicts(
        report_month_days=7.0, report_month_kept_seconds=30.0, report_month_pdf_pages=31
    )
    assert week[month] is None  # a week's history says nothing of a month's report
    assert week[month_pages] is True
    unmeasured = verdicts(report_month_days=30.0, days=30)
    assert unmeasured[month] is False  # a month that could not be measured misses it
    assert unmeasured[same] is None
    for failed in ({"report_month_exit": 1}, {"report_month_kept_exit": 1}):
        month_exit = verdicts(report_month_days=7.0, **failed)
        assert month_exit["report, audit and restore exit 0 (books match)"] is False, failed
