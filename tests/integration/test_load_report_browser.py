"""The load test's report in a real browser: Debian's Chromium, driven by Playwright, draws every
chart of the page offline (plotly.js is inline) and shows the summary table; the screenshot is
kept at build/loadtest/report.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from loadtest.browser import CHROMIUM
from loadtest.report import render, screenshot

from tests.unit.test_load_report import REPORT

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "build" / "loadtest"
PNG = OUT / "report.png"


@pytest.fixture
def page() -> str:
    """The synthetic report rendered into build/loadtest/ (the screenshot goes beside it)."""
    assert Path(CHROMIUM).exists(), "make setup installs Debian's chromium"
    OUT.mkdir(parents=True, exist_ok=True)
    PNG.unlink(missing_ok=True)
    page = OUT / "report-synthetic.html"
    page.write_text(render(REPORT), encoding="utf-8")
    return page.absolute().as_uri()


async def test_the_report_draws_its_charts_in_chromium(page: str) -> None:
    shown = await screenshot(page, PNG)
    assert shown["charts_drawn"] == 2
    assert "highest sustainable rate\t7.5 rounds/s" in shown["summary"]
    assert "the books\tOK: $1,234,000 collected" in shown["summary"]
    assert PNG.stat().st_size > 50_000  # a page of charts, not a blank one
