"""The load test's HTML report (loadtest.report) from a small synthetic report.json."""

from __future__ import annotations

import copy
import re
from typing import Any

from loadtest.report import (
    NOT_MEASURED,
    PERCENTILES,
    STEP_CHARTS,
    TIME_CHARTS,
    empty_charts,
    render,
    step_figure,
    summary_rows,
    time_figure,
)


def step(
    rpm: float, rate: float, p50: float, p95: float, p99: float, rejects: dict[str, int]
) -> dict[str, Any]:
    return {
        "rounds_per_minute_per_table": rpm,
        "rounds_per_second": rate,
        "device_events_per_second": rate * 20,
        "rejects": rejects,
        "latency": {"lock_to_sign": {"count": 40, "p50_ms": p50, "p95_ms": p95, "p99_ms": p99}},
    }


def sample(
    t: float, number: int, rate: float, p50: float, p95: float, p99: float
) -> dict[str, Any]:
    return {
        "t": t,
        "step": number,
        "rounds_per_second": rate,
        "device_events_per_second": rate * 20,
        "rejects_per_second": 0.0,
        "lock_to_sign": {"p50_ms": p50, "p95_ms": p95, "p99_ms": p99},
        "spool_depth_records": 3.0,
        "consumer_lag_records": {"pot": 1.0, "payout": 0.0},
    }


REPORT: dict[str, Any] = {
    "mutual_tls": True,
    "limit_p99_ms": 250.0,
    "highest_sustainable_rounds_per_second": 7.5,
    "steps": [
        step(30.0, 2.5, 21.0, 48.0, 61.5, {}),
        step(48.0, 7.5, 35.0, 120.0, 198.25, {"BET_ABOVE_LIMIT": 2}),
        step(76.8, 9.1, 90.0, 300.0, 412.0, {"BET_ABOVE_LIMIT": 1, "ROUND_NOT_OPEN": 4}),
    ],
    "accounting": {
        "bets_accepted": 1_234_000,
        "collected": 1_234_000,
        "lost": 0,
        "duplicated": 0,
        "audit_ok": True,
    },
    # each second over the last five (loadtest.timeline), near the step's own percentiles
    "timeline": [
        sample(1.0, 1, 2.0, 19.5, 44.0, 52.0),
        sample(2.0, 1, 2.5, 21.0, 48.0, 61.5),
        sample(3.0, 1, 2.5, 21.5, 49.0, 63.0),
        sample(9.0, 2, 7.0, 33.0, 112.0, 185.0),
        sample(10.0, 2, 7.5, 35.0, 120.0, 198.25),
        sample(17.0, 3, 9.1, 88.0, 290.0, 405.0),
        sample(18.0, 3, 9.1, 90.0, 300.0, 412.0),
    ],
}


def without_lock_to_sign() -> dict[str, Any]:
    """REPORT as the load test wrote it while no sample's window had a lock-to-sign."""
    report = copy.deepcopy(REPORT)
    for one in report["timeline"]:
        one["lock_to_sign"] = dict.fromkeys(PERCENTILES)
    return report


def with_hops() -> dict[str, Any]:
    report = copy.deepcopy(REPORT)
    report["hops_order"] = ["device_to_spool", "spool_to_kafka", "pot_apply", "pot_to_sign"]
    for number, one in enumerate(report["steps"], 1):
        one["hops"] = {
            hop: {"p50_ms": 1.0 * number, "p95_ms": 2.0 * number, "p99_ms": 3.5 * n, "count": 40}
            for n, hop in enumerate(report["hops_order"], 1)
        }
    return report


def test_the_summary_names_the_sustainable_rate_latencies_rejects_and_the_books() -> None:
    rows = dict(summary_rows(REPORT))
    assert rows["highest sustainable rate"] == "7.5 rounds/s (p99 lock-to-sign ≤ 250.0 ms)"
    # The fastest step within the limit is step 2, not the faster step 3 past it.
    assert rows["lock to sign p50 / p95 / p99 (step 2, 7.5 rounds/s)"] == (
        "35.0 ms / 120.0 ms / 198.2 ms"
    )
    assert rows["rejects"] == "7 (BET_ABOVE_LIMIT 3, ROUND_NOT_OPEN 4)"
    assert rows["the books"] == (
        "OK: $1,234,000 collected of $1,234,000 in bets accepted (lost $0, duplicated $0); "
        "audit passed"
    )
    assert rows["per-hop latency"] == NOT_MEASURED


def test_the_books_verdict_fails_on_a_lost_peso() -> None:
    report = copy.deepcopy(REPORT)
    report["accounting"].update(collected=1_233_999, lost=1)
    assert dict(summary_rows(report))["the books"].startswith("FAILED: $1,233,999 collected")


def test_hops_are_listed_in_the_budgets_order_when_measured() -> None:
    rows = summary_rows(with_hops())
    hops = [what for what, _ in rows if what.startswith("hop ")]
    assert hops == [
        "hop device_to_spool p50 / p95 / p99",
        "hop spool_to_kafka p50 / p95 / p99",
        "hop pot_apply p50 / p95 / p99",
        "hop pot_to_sign p50 / p95 / p99",
    ]
    assert dict(rows)["hop pot_apply p50 / p95 / p99"] == "2.0 ms / 4.0 ms / 10.5 ms"
    assert NOT_MEASURED not in render(with_hops())


def test_the_page_has_the_summary_first_then_the_charts_with_plotly_inline() -> None:
    page = render(REPORT)
    summary = page.index('data-testid="summary"')
    charts = [m.start() for m in re.finditer(r'class="plotly-graph-div"', page)]
    assert len(charts) == 2  # over time, per step
    assert summary < charts[0]
    assert "<td>7.5 rounds/s (p99 lock-to-sign ≤ 250.0 ms)</td>" in page
    assert NOT_MEASURED in page
    # Self-contained: plotly.js inline once, nothing fetched from a network.
    assert page.count("plotly.js v") >= 1
    assert not re.search(r"<script[^>]+src=", page)
    assert len(TIME_CHARTS) == 6
    for title in TIME_CHARTS:
        assert title in page


def test_a_report_without_a_timeline_still_renders_its_step_chart() -> None:
    report = copy.deepcopy(REPORT)
    del report["timeline"]
    assert len(re.findall(r'class="plotly-graph-div"', render(report))) == 1


def charted(figure: Any) -> dict[str, list[Any]]:
    """Per chart the figure names for the page's check: the values of the traces naming it."""
    values: dict[str, list[Any]] = {chart: [] for chart in figure.layout.meta["charts"]}
    for trace in figure.data:
        values[trace.meta["chart"]] += list(trace.y)
    return values


def test_every_trace_names_its_chart_for_the_pages_check() -> None:
    over_time = charted(time_figure(REPORT))
    assert list(over_time) == list(TIME_CHARTS)
    assert over_time["lock to sign (ms)"][:3] == [19.5, 21.0, 21.5]  # p50, then p95 and p99
    assert len(over_time["lock to sign (ms)"]) == 3 * len(REPORT["timeline"])
    assert len(over_time["consumer lag (records)"]) == 2 * len(REPORT["timeline"])
    per_step = charted(step_figure(with_hops()))
    assert list(per_step) == list(STEP_CHARTS)
    assert len(per_step["per-hop p99 by step"]) == 4 * len(REPORT["steps"])
    assert list(charted(step_figure(REPORT))) == [STEP_CHARTS[0]]


def test_the_limit_line_is_no_trace_so_a_null_lock_to_sign_chart_has_no_data() -> None:
    lock = charted(time_figure(without_lock_to_sign()))["lock to sign (ms)"]
    assert len(lock) == 3 * len(REPORT["timeline"])
    assert set(lock) == {None}


def test_empty_charts_names_the_charts_without_a_data_point() -> None:
    shown = {"points": {"rounds per second": 7, "lock to sign (ms)": 0, "rejects per second": 7}}
    assert empty_charts(shown) == ["lock to sign (ms)"]
    assert empty_charts({"points": {"rounds per second": 1}}) == []
