"""The load test's HTML report: one self-contained page (plotly, its JavaScript inlined).

    python -m loadtest.report build/loadtest/report.json [--html OUT.html] [--screenshot OUT.png]

``render(report)`` takes the dict the load test writes to report.json: first a summary table (the
highest sustainable rate, lock-to-sign and per-hop p50/p95/p99 at that step, refusals, the books'
verdict), then the time charts sampled once a second (``loadtest.timeline``: rounds/s, device
events/s, latency percentiles, refusals, spool depth, consumer lag) and the per-step charts. The
per-hop latency budget (``hops`` per step, ``hops_order``) is shown when the report has it.

``screenshot()`` opens the page in Chromium and reports what it drew, among it the data points of
every chart (:data:`CHART_POINTS_JS`); ``empty_charts()`` names the charts that drew none, and
``--screenshot`` fails on them.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from loadtest.browser import chromium
from loadtest.timeline import WINDOW_SECONDS

# The charts over time, top to bottom.
TIME_CHARTS = (
    "rounds per second",
    "device events per second",
    "lock to sign (ms)",
    "rejects per second",
    "gateway spool depth (records)",
    "consumer lag (records)",
)

STEP_CHARTS = ("lock to sign by achieved rate", "per-hop p99 by step")
# The page's own check of what it drew: per chart (each figure's layout.meta names its charts,
# each data trace its chart in trace.meta), the points its traces have a value at. Limit lines
# are shapes, not traces, so a chart with nothing but its limit counts 0.
CHART_POINTS_JS = """
() => Object.fromEntries([...document.querySelectorAll('.plotly-graph-div')].flatMap(div => {
  const points = Object.fromEntries((div.layout.meta?.charts ?? []).map(chart => [chart, 0]));
  for (const trace of div.data) {
    const chart = trace.meta?.chart;
    if (chart in points) {
      points[chart] += Array.from(trace.y ?? []).filter(y => y != null && !Number.isNaN(y)).length;
    }
  }
  return Object.entries(points);
}))
"""

PERCENTILES = ("p50_ms", "p95_ms", "p99_ms")
COLOURS = {"p50_ms": "#2e7d32", "p95_ms": "#f9a825", "p99_ms": "#c62828"}
NOT_MEASURED = "per-hop budget not measured"

Report = dict[str, Any]


def lock_to_sign(step: Report) -> dict[str, float]:
    latency: dict[str, float] = step.get("latency", {}).get("lock_to_sign", {})
    return latency


def sustainable(report: Report, step: Report) -> bool:
    p99 = lock_to_sign(step).get("p99_ms")
    return p99 is not None and p99 <= report["limit_p99_ms"]


def operating_step(report: Report) -> tuple[int, Report] | None:
    """(1-based number, step) of the fastest step within the limit, else of the first step."""
    steps = report.get("steps", [])
    within = [(n, s) for n, s in enumerate(steps, 1) if sustainable(report, s)]
    if within:
        return max(within, key=lambda ns: ns[1]["rounds_per_second"])
    return (1, steps[0]) if steps else None


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f} ms"


def triple(latency: dict[str, Any]) -> str:
    return " / ".join(ms(latency.get(p)) for p in PERCENTILES)


def verdict(accounting: Report) -> str:
    bets, collected = accounting.get("bets_accepted", 0), accounting.get("collected", 0)
    lost, duplicated = accounting.get("lost", 0), accounting.get("duplicated", 0)
    ok = accounting.get("audit_ok") is True and lost == 0 and duplicated == 0
    return (
        f"{'OK' if ok else 'FAILED'}: ${collected:,} collected of ${bets:,} in bets accepted "
        f"(lost ${lost:,}, duplicated ${duplicated:,}); audit "
        f"{'passed' if accounting.get('audit_ok') else 'failed'}"
    )


def summary_rows(report: Report) -> list[tuple[str, str]]:
    """The summary table, row by row: (what, value)."""
    limit = report["limit_p99_ms"]
    rows = [
        (
            "highest sustainable rate",
            f"{report['highest_sustainable_rounds_per_second']:,} rounds/s "
            f"(p99 lock-to-sign ≤ {limit:,} ms)",
        )
    ]
    found = operating_step(report)
    if found:
        number, step = found
        at = f" (step {number}, {step['rounds_per_second']:,} rounds/s)"
        rows.append((f"lock to sign p50 / p95 / p99{at}", triple(lock_to_sign(step))))
        order = report.get("hops_order") or list(step.get("hops", {}))
        if step.get("hops"):
            rows += [
                (f"hop {hop} p50 / p95 / p99", triple(step["hops"][hop]))
                for hop in order
                if hop in step["hops"]
            ]
        else:
            rows.append(("per-hop latency", NOT_MEASURED))
    rejects: dict[str, int] = {}
    for step in report.get("steps", []):
        for reason, count in step.get("rejects", {}).items():
            rejects[reason] = rejects.get(reason, 0) + count
    listed = ", ".join(f"{reason} {count:,}" for reason, count in sorted(rejects.items()))
    rows.append(("rejects", f"{sum(rejects.values()):,}" + (f" ({listed})" if listed else "")))
    rows.append(("the books", verdict(report.get("accounting", {}))))
    rows.append(("mutual TLS", "yes" if report.get("mutual_tls") else "no (plaintext)"))
    return rows


def step_rows(report: Report) -> list[list[str]]:
    rows = []
    for number, step in enumerate(report.get("steps", []), 1):
        rows.append(
            [
                str(number),
                f"{step.get('rounds_per_minute_per_table', 0):,}",
                f"{step['rounds_per_second']:,}",
                f"{step.get('device_events_per_second', 0):,}",
                triple(lock_to_sign(step)),
                f"{sum(step.get('rejects', {}).values()):,}",
                "yes" if sustainable(report, step) else "no",
            ]
        )
    return rows


def table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def summary_table(report: Report) -> str:
    rows = "".join(
        f'<tr><th scope="row">{html.escape(what)}</th><td>{html.escape(value)}</td></tr>'
        for what, value in summary_rows(report)
    )
    return f'<table class="summary" data-testid="summary">{rows}</table>'


def time_figure(report: Report) -> go.Figure | None:
    samples = report.get("timeline", [])
    if not samples:
        return None
    t = [s["t"] for s in samples]
    figure = make_subplots(
        rows=6,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.04,
        subplot_titles=TIME_CHARTS,
    )

    def line(row: int, name: str, values: list[Any], colour: str | None = None) -> None:
        figure.add_trace(
            go.Scatter(
                x=t,
                y=values,
                name=name,
                mode="lines",
                line={"color": colour},
                meta={"chart": TIME_CHARTS[row - 1]},
            ),
            row=row,
            col=1,
        )

    line(1, "rounds/s", [s["rounds_per_second"] for s in samples], "#1565c0")
    line(2, "device events/s", [s["device_events_per_second"] for s in samples], "#6a1b9a")
    for p in PERCENTILES:
        line(3, p.removesuffix("_ms"), [s["lock_to_sign"].get(p) for s in samples], COLOURS[p])
    line(4, "rejects/s", [s["rejects_per_second"] for s in samples], "#d84315")
    line(5, "spool depth", [s["spool_depth_records"] for s in samples], "#455a64")
    for service in ("pot", "payout"):
        line(6, f"lag {service}", [s["consumer_lag_records"].get(service) for s in samples])
    figure.add_hline(y=report["limit_p99_ms"], line_dash="dot", line_color="#999", row=3, col=1)
    for number, start in step_starts(samples):
        figure.add_vline(x=start, line_dash="dot", line_color="#bbb")
        figure.add_annotation(
            x=start, y=1.0, yref="paper", text=f"step {number}", showarrow=False, xanchor="left"
        )
    figure.update_xaxes(title_text="seconds since the first step", row=6, col=1)
    figure.update_layout(
        height=1500,
        title=f"Over time (sampled once a second, each over the last {WINDOW_SECONDS:g} s)",
        hovermode="x",
        meta={"charts": list(TIME_CHARTS)},
    )
    return figure


def step_starts(samples: list[Report]) -> list[tuple[int, float]]:
    starts: list[tuple[int, float]] = []
    for sample in samples:
        if not starts or starts[-1][0] != sample["step"]:
            starts.append((sample["step"], sample["t"]))
    return starts


def step_figure(report: Report) -> go.Figure:
    steps = report.get("steps", [])
    rate = [s["rounds_per_second"] for s in steps]
    hops = report.get("hops_order") or sorted({h for s in steps for h in s.get("hops", {})})
    titles = STEP_CHARTS[: 2 if hops else 1]
    figure = make_subplots(rows=len(titles), cols=1, vertical_spacing=0.15, subplot_titles=titles)
    for p in PERCENTILES:
        figure.add_trace(
            go.Scatter(
                x=rate,
                y=[lock_to_sign(s).get(p) for s in steps],
                name=f"lock to sign {p.removesuffix('_ms')}",
                mode="lines+markers",
                line={"color": COLOURS[p]},
                meta={"chart": STEP_CHARTS[0]},
            ),
            row=1,
            col=1,
        )
    figure.add_hline(
        y=report["limit_p99_ms"], line_dash="dot", line_color="#999", annotation_text="limit"
    )
    figure.update_xaxes(title_text="rounds per second (achieved)", row=1, col=1)
    figure.update_yaxes(title_text="ms", row=1, col=1)
    for hop in hops:
        figure.add_trace(
            go.Bar(
                x=[f"step {n}" for n in range(1, len(steps) + 1)],
                y=[s.get("hops", {}).get(hop, {}).get("p99_ms") for s in steps],
                name=f"hop {hop} p99",
                meta={"chart": STEP_CHARTS[1]},
            ),
            row=2,
            col=1,
        )
    figure.update_layout(
        height=900 if hops else 450, title="Per step", barmode="group", meta={"charts": titles}
    )
    return figure


STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 24px; }
th, td { border: 1px solid #ccc; padding: 4px 10px; text-align: left; }
table.summary th { background: #f3f3f3; }
"""


def render(report: Report) -> str:
    """The whole page; the first chart carries plotly.js inline, so it opens offline."""
    charts = [f for f in (time_figure(report), step_figure(report)) if f is not None]
    divs = [
        chart.to_html(full_html=False, include_plotlyjs=(n == 0)) for n, chart in enumerate(charts)
    ]
    headers = ["step", "rpm/table", "rounds/s", "events/s", "lock to sign p50/p95/p99"]
    steps = table([*headers, "rejects", "sustainable"], step_rows(report))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Jackpot load test</title>
<style>{STYLE}</style></head><body>
<h1>Jackpot load test</h1>
<h2>Summary</h2>
{summary_table(report)}
<h2>Steps</h2>
{steps}
{"".join(divs)}
</body></html>
"""


async def screenshot(
    address: str, png: Path, width: int = 1280, height: int = 1800
) -> dict[str, Any]:
    """Open the report (a file:// address) in Debian's Chromium (Playwright, headless), wait
    for plotly to draw, save a PNG; what the page showed: the figures drawn, the data points of
    each chart (``points``: chart title -> count) and the summary's text."""
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": width, "height": height})
        await page.goto(address)
        await page.wait_for_selector(".plotly-graph-div .main-svg")
        drawn = await page.evaluate(
            "[...document.querySelectorAll('.plotly-graph-div')]"
            ".filter(d => d._fullLayout && d.querySelector('.main-svg')).length"
        )
        points = await page.evaluate(CHART_POINTS_JS)
        summary = await page.get_by_test_id("summary").inner_text()
        await page.screenshot(path=str(png))
        return {"charts_drawn": drawn, "points": points, "summary": summary}


def empty_charts(shown: dict[str, Any]) -> list[str]:
    """The charts of a :func:`screenshot` that drew no data point (a limit line is no data)."""
    return [chart for chart, points in shown["points"].items() if points == 0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("report", help="report.json of a load test")
    parser.add_argument("--html", help="where to write the page (default: report.html beside it)")
    parser.add_argument("--screenshot", help="also save a PNG of the page as Chromium shows it")
    args = parser.parse_args()
    source = Path(args.report)
    page_file = Path(args.html) if args.html else source.with_name("report.html")
    page_file.write_text(render(json.loads(source.read_text())), encoding="utf-8")
    print(page_file)
    if args.screenshot:
        shown = asyncio.run(screenshot(page_file.absolute().as_uri(), Path(args.screenshot)))
        print(args.screenshot)
        if empty_charts(shown):
            raise SystemExit(f"charts without data: {', '.join(empty_charts(shown))}")


if __name__ == "__main__":
    main()
