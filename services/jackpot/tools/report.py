"""`jackpot report`: a period's books of every pot group, from the ledger alone (D4, M2; R1).

Reads jackpot.ledger.v1 from its beginning (read_committed), computes the figures with
:mod:`jackpot.tools.report_figures` and writes, into ``--out``:

- one CSV file per section, for a spreadsheet: ``summary.csv`` (period figures and the M2
  reconciliation per group), ``pots.csv`` (opening, received, closing per pot), ``prizes.csv``
  (hits and amounts per category), ``awards.csv`` (each award: table, seat, round, hand, time,
  who approved and who paid), ``configs.csv`` (versions in force: base, percentages, ceilings,
  paytable, when and by whom), ``last_awards.csv`` (the last 25), ``contributions_by_hour.csv``
  and ``main_pot.csv`` (the chart's points);
- ``report.html``: the same, self-contained (inline SVG charts of each main pot over the period and
  of contributions per hour, no script, no server), with the verdict at the top.

Exit 0 when every group reconciles, 1 when one does not or a ledger record cannot be read (the
page and the CSV say so at the top), 2 on refused input (``--from`` not before ``--to``, an unknown
group, an unreadable date) or an unreadable topic; refused input writes nothing.
"""

from __future__ import annotations

import asyncio
import csv
import html
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiokafka.errors import KafkaError

from jackpot.domain.money import floor_pesos, format_amount
from jackpot.platform.kafka import KafkaConnection, read_records
from jackpot.tools.report_figures import (
    LedgerRecord,
    Report,
    ReportInputError,
    compute,
    iso,
    parse_period,
)

CHART_WIDTH, CHART_HEIGHT, PAD = 720, 240, 48


async def read_ledger(kafka_options: Mapping[str, Any], topic: str) -> list[LedgerRecord]:
    options = dict(kafka_options)
    bootstrap = str(options.pop("bootstrap_servers"))
    return [
        LedgerRecord(r.partition, r.offset, r.value)
        async for r in read_records(
            KafkaConnection({"bootstrap_servers": bootstrap, **options}), topic
        )
        if r.value is not None
    ]


# ------------------------------------------------------------------------------------- CSV


def sections(report: Report) -> dict[str, list[list[str]]]:
    """Every CSV file's rows (header first), whole pesos where the boundary wants them."""
    verdict = "reconciles" if report.reconciles else "DOES NOT RECONCILE"
    summary = [["pot_group", "figure", "value"]]
    summary.append(["*", "period", report.period.describe()])
    summary.append(["*", "verdict", verdict])
    summary += [["*", "unreadable", line] for line in report.unreadable]
    pots = [["pot_group", "pot", "opening", "received", "closing"]]
    prizes = [["pot_group", "prize", "hits", "amount"]]
    award_header = [
        "pot_group",
        "award_id",
        "table",
        "seat",
        "round",
        "prize",
        "amount",
        "hand",
        "occurred_at",
        "recorded_at",
        "approved_by",
        "paid_by",
        "paid_at",
    ]
    awards, last_awards = [award_header], [award_header]
    configs = [
        [
            *("pot_group", "version", "base", "commission_percent", "pots", "paytable"),
            *("proposed_at", "proposed_by", "reason", "activated_at"),
        ]
    ]
    hourly = [["pot_group", "hour", "collected"]]
    series = [["pot_group", "at", "main"]]
    for group in report.groups:
        g = group.group_id
        line = group.reconciliation()[1]
        summary += [
            [g, "verdict", "reconciles" if group.reconciles else "DOES NOT RECONCILE"],
            [g, "collected", format_amount(group.collected)],
            [g, "commission", format_amount(group.commission)],
            [g, "house advances", format_amount(group.house_advances)],
            [g, "overflow", format_amount(group.overflow)],
            [g, "awarded", format_amount(group.awarded)],
            [g, "awards", str(len(group.awards))],
            [g, "reconciliation (M2)", line],
        ]
        summary += [[g, "problem", p] for p in group.problems]
        for pot in sorted({*group.opening.pots, *group.closing.pots}):
            pots.append(
                [
                    g,
                    pot,
                    format_amount(group.opening.pots.get(pot, 0)),
                    format_amount(group.received[pot]),
                    format_amount(group.closing.pots.get(pot, 0)),
                ]
            )
        prizes += [[g, p, str(h), str(a)] for p, (h, a) in group.prizes.items()]
        for rows, listed in ((awards, group.awards), (last_awards, group.last_awards)):
            rows += [
                [
                    *(g, a.award_id, a.table_id, str(a.seat), a.round_id, a.prize, str(a.amount)),
                    a.cards,
                    *(a.occurred_at, a.recorded_at, a.approved_by, a.paid_by, a.paid_at),
                ]
                for a in listed
            ]
        for c in group.configs:
            config = c.config
            configs.append(
                [
                    *(g, str(c.version), str(config.get("base", ""))),
                    *(
                        str(config.get("commission_percent", "")),
                        json.dumps(config.get("pots", [])),
                    ),
                    _paytable_name(config.get("paytable", "")),
                    *(c.proposed_at, c.proposed_by, c.reason, c.activated_at),
                ]
            )
        hourly += [
            [g, iso(hour), format_amount(amount)]
            for hour, amount in sorted(group.collected_by_hour.items())
        ]
        series += [[g, iso(at), format_amount(main)] for at, main in group.main_series]
    return {
        "summary": summary,
        "pots": pots,
        "prizes": prizes,
        "awards": awards,
        "configs": configs,
        "last_awards": last_awards,
        "contributions_by_hour": hourly,
        "main_pot": series,
    }


def _paytable_name(paytable: Any) -> str:
    """A paytable by its name (its prizes are in the configuration the operator reported)."""
    return str(paytable.get("name", "")) if isinstance(paytable, dict) else str(paytable)


def write_csv(out: Path, report: Report) -> list[Path]:
    written = []
    for name, rows in sections(report).items():
        path = out / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(rows)
        written.append(path)
    return written


# ------------------------------------------------------------------------------------ HTML


def _chart(title: str, points: Sequence[tuple[int, int]], bars: bool) -> str:
    """An inline SVG chart of whole-peso values over time (a line, or bars per hour)."""
    if not points:
        return f"<h3>{html.escape(title)}</h3><p>nothing in the period</p>"
    xs = [x for x, _ in points]
    ys = [floor_pesos(y) for _, y in points]
    left, right = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    top = max(max(ys), 1)
    inner_w, inner_h = CHART_WIDTH - 2 * PAD, CHART_HEIGHT - 2 * PAD

    def at(x: int, y: int) -> tuple[float, float]:
        return PAD + (x - left) / (right - left) * inner_w, PAD + inner_h - y / top * inner_h

    if bars:
        width = max(4.0, inner_w / max(len(points), 1) - 4)
        shapes = "".join(
            f'<rect x="{at(x, y)[0] - width / 2:.1f}" y="{at(x, y)[1]:.1f}" width="{width:.1f}" '
            f'height="{PAD + inner_h - at(x, y)[1]:.1f}" fill="#1565c0"><title>{iso(x)}: '
            f"${y:,}</title></rect>"
            for x, y in zip(xs, ys, strict=True)
        )
    else:
        path = " ".join(f"{at(x, y)[0]:.1f},{at(x, y)[1]:.1f}" for x, y in zip(xs, ys, strict=True))
        shapes = f'<polyline fill="none" stroke="#2e7d32" stroke-width="2" points="{path}"/>'
    return (
        f"<h3>{html.escape(title)}</h3>"
        f'<svg role="img" aria-label="{html.escape(title)}" width="{CHART_WIDTH}" '
        f'height="{CHART_HEIGHT}" font-size="11" font-family="sans-serif">'
        f'<line x1="{PAD}" y1="{PAD + inner_h}" x2="{PAD + inner_w}" y2="{PAD + inner_h}" '
        f'stroke="#000"/><line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{PAD + inner_h}" '
        f'stroke="#000"/><text x="{PAD}" y="{PAD - 8}">${top:,}</text>'
        f'<text x="{PAD}" y="{CHART_HEIGHT - 12}">{iso(left)}</text>'
        f'<text x="{PAD + inner_w}" y="{CHART_HEIGHT - 12}" text-anchor="end">{iso(right)}</text>'
        f"{shapes}</svg>"
    )


def _table(rows: list[list[str]], css_class: str) -> str:
    head, *body = rows
    cells = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    lines = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body
    )
    return f'<table class="{css_class}"><tr>{cells}</tr>{lines}</table>'


def render_html(report: Report) -> str:
    verdict = (
        '<p class="verdict ok">The books of every pot group reconcile for this period (M2).</p>'
        if report.reconciles
        else '<p class="verdict bad">THESE BOOKS DO NOT RECONCILE: '
        + html.escape("; ".join(report.unreadable + _group_problems(report)))
        + "</p>"
    )
    parts = [
        "<!doctype html><html lang='en'><meta charset='utf-8'>",
        f"<title>Jackpot report {html.escape(report.period.describe())}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #999;padding:2px 6px;text-align:right}"
        ".verdict{font-size:1.3em;padding:.5em}.ok{background:#e8f5e9}.bad{background:#ffebee;"
        "color:#b71c1c}</style>",
        f"<h1>Jackpot report</h1><p>period {html.escape(report.period.describe())}, "
        "from the ledger alone</p>",
        verdict,
    ]
    tables = sections(report)
    for group in report.groups:
        g = group.group_id
        parts.append(f'<section id="group-{html.escape(g)}"><h2>pot group {html.escape(g)}</h2>')
        parts.append(f"<p class='reconciliation'>{html.escape(group.reconciliation()[1])}</p>")
        for name in ("summary", "pots", "prizes", "awards", "configs", "last_awards"):
            rows = [tables[name][0]] + [r for r in tables[name][1:] if r[0] == g]
            parts.append(f"<h3>{name.replace('_', ' ')}</h3>" + _table(rows, name))
        parts.append(_chart(f"{g}: main pot over the period", group.main_series, bars=False))
        hourly = sorted(group.collected_by_hour.items())
        parts.append(_chart(f"{g}: contributions per hour", hourly, bars=True))
        parts.append("</section>")
    parts.append("</html>")
    return "\n".join(parts)


def _group_problems(report: Report) -> list[str]:
    lines = []
    for group in report.groups:
        ok, line = group.reconciliation()
        lines += [f"{group.group_id}: {p}" for p in group.problems]
        if not ok:
            lines.append(f"{group.group_id}: {line}")
    return lines


# ------------------------------------------------------------------------------ the command


def render_text(report: Report, out: Path) -> str:
    lines = [f"jackpot report {report.period.describe()} -> {out}"]
    if not report.reconciles:
        lines.append("DOES NOT RECONCILE")
        lines += [f"  ! {p}" for p in report.unreadable + _group_problems(report)]
    for group in report.groups:
        lines.append(
            f"pot group {group.group_id}: collected {format_amount(group.collected)}, commission "
            f"{format_amount(group.commission)}, awarded {format_amount(group.awarded)} in "
            f"{len(group.awards)} awards, house advances {format_amount(group.house_advances)}"
        )
        lines.append(f"  {group.reconciliation()[1]}")
    return "\n".join(lines)


def run(
    kafka_options: Mapping[str, Any],
    ledger_topic: str,
    out: str,
    start: str | None,
    end: str | None,
    only_groups: Sequence[str] = (),
) -> int:
    try:
        period = parse_period(start, end, time.time_ns())
        records = asyncio.run(read_ledger(kafka_options, ledger_topic))
        report = compute(records, period, only_groups)
    except ReportInputError as error:
        print(f"jackpot report: {error}", file=sys.stderr)
        return 2
    except (LookupError, OSError, KafkaError) as error:
        print(f"jackpot report: cannot read {ledger_topic}: {error}", file=sys.stderr)
        return 2
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    write_csv(folder, report)
    (folder / "report.html").write_text(render_html(report), encoding="utf-8")
    print(render_text(report, folder))
    return 0 if report.reconciles else 1
