"""The load test's report in a real browser: Debian's Chromium, driven by Playwright, draws every
chart of the page offline (plotly.js is inline), each with data, and shows the summary table; the
screenshot is kept at build/loadtest/report.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from loadtest.browser import CHROMIUM
from loadtest.report import STEP_CHARTS, TIME_CHARTS, empty_charts, render, screenshot

from tests.unit.test_load_report import REPORT, with_hops, without_lock_to_sign

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


def rendered(report: dict[str, object], where: Path) -> str:
    where.write_text(render(report), encoding="utf-8")
    return where.absolute().as_uri()


async def test_the_report_draws_its_charts_in_chromium(page: str) -> None:
    shown = await screenshot(page, PNG)
    assert shown["charts_drawn"] == 2
    assert list(shown["points"]) == [*TIME_CHARTS, STEP_CHARTS[0]]
    assert empty_charts(shown) == []
    samples = len(REPORT["timeline"])
    assert shown["points"]["lock to sign (ms)"] == 3 * samples  # p50, p95, p99 at every second
    assert shown["points"]["rounds per second"] == samples
    assert "highest sustainable rate\t7.5 rounds/s" in shown["summary"]
    assert "the books\tOK: $1,234,000 collected" in shown["summary"]
    assert PNG.stat().st_size > 50_000  # a page of charts, not a blank one


async def test_every_chart_of_a_report_with_hops_has_data(tmp_path: Path) -> None:
    shown = await screenshot(rendered(with_hops(), tmp_path / "hops.html"), tmp_path / "hops.png")
    assert list(shown["points"]) == [*TIME_CHARTS, *STEP_CHARTS]
    assert empty_charts(shown) == []
    assert shown["points"]["per-hop p99 by step"] == 4 * len(REPORT["steps"])


async def test_the_check_refuses_a_chart_with_only_its_limit_line(tmp_path: Path) -> None:
    # the timeline the load test wrote before issue 29: lock-to-sign null at every second, so
    # the chart drew nothing but its 250 ms limit
    address = rendered(without_lock_to_sign(), tmp_path / "no-locks.html")
    shown = await screenshot(address, tmp_path / "no-locks.png")
    assert shown["charts_drawn"] == 2
    assert empty_charts(shown) == ["lock to sign (ms)"]
    assert shown["points"]["rounds per second"] == len(REPORT["timeline"])
