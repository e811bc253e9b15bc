"""`make bench-history`: takeover, start-up, audit, report and restore against history size.

For each size (``--days``, default 0 1 7, of ``--tables`` 300 at one round a minute per table) it
synthesizes the floor's history (``loadtest.history_synth``: the pot's own processor on the
gateway's own table events, the payout's own payouts, the services' own audit entries), writes it
to topics of its own (``loadtest.history_kafka``, cached under build/history/ while it stays
untouched), then times the real services and tools on it (``loadtest.history_measure``):

- ``pot_takeover_seconds``: ``kill -9`` of the pot owning every partition -> a pot update made
  after the kill has arrived from every group (every table may bet on the progressive again);
  ``pot_takeover_rss_mb``: that new instance's peak RSS;
- ``service_start_seconds``: payout, display and gateway, process start -> gRPC health SERVING
  (the payout: its PayoutService), the slowest of the three;
- ``audit_resume_seconds``: an audit writer's start -> its chain's head found;
- ``report_one_day_seconds`` (and ``_rss_mb``, ``_pdf_pages``, ``_pdf_bytes``): ``jackpot
  report`` of the last day, its PDF included;
- ``report_month_seconds`` (and the same): ``jackpot report`` of the last 30 days, or of the
  whole history when it is shorter (``report_month_days``), from the ledger alone;
  ``report_month_keeping_seconds`` and ``report_month_kept_seconds``: the same month with
  ``--day-books`` (``jackpot.tools.report_days``), first keeping each day it reads, then composed
  of the kept days (the month's target), and ``report_month_kept_same``: whether both say what
  the ledger alone says (every CSV, the annex byte for byte);
- ``audit_entries_per_second``, ``audit_rss_mb``: ``jackpot audit`` of the whole ledger;
- ``restore_seconds`` (and ``_rss_mb``): ``jackpot restore --from-ledger`` (last: it rewrites
  the state, so the history is written again by the next run).

It prints one table (a column per size; with ``--before DIR``, the same figures of an old copy of
the code, ``DIR/services`` on ``PYTHONPATH``, at ``--before-days``) and the issue's targets,
PASS or FAIL; ``--check`` exits 1 on a FAIL. ``--json FILE`` merges the figures into FILE under
``history``: each key at the largest size, the same at 0 days with a ``_0d`` suffix, ratios
(``*_ratio_to_0d``, ``report_one_day_ratio_to_1d``), every size under ``history.sizes`` and the
old code's under ``history.before``; other keys of FILE are left as they are.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any

from loadtest import history_measure as measure
from loadtest.history_kafka import MANIFESTS, delete_topics, manifest_path, topics_exist
from loadtest.history_measure import MONTH_DAYS, Code, Run

LOGS = Path("build/history/logs")
# Keys written even when their measurement failed (null), at the largest size and at 0 days
REQUIRED = (
    "days",
    "ledger_entries",
    "pot_takeover_seconds",
    "pot_takeover_rss_mb",
    "service_start_seconds",
    "audit_resume_seconds",
    "report_one_day_seconds",
    "report_one_day_rss_mb",
    "report_one_day_pdf_pages",
    "report_month_days",
    "report_month_seconds",
    "report_month_kept_seconds",
    "report_month_kept_same",
    "report_month_pdf_pages",
    "audit_entries_per_second",
    "audit_rss_mb",
    "restore_seconds",
    "restore_rss_mb",
)
# (label, key, format) of the printed table
ROWS: tuple[tuple[str, str, str], ...] = (
    ("ledger entries", "ledger_entries", "{:,.0f}"),
    ("rounds", "rounds", "{:,.0f}"),
    ("access log entries", "audit_entries", "{:,.0f}"),
    ("synthesizer s (cached: -)", "synth_seconds", "{:,.1f}"),
    ("synthesizer rounds/s", "synth_rounds_per_second", "{:,.0f}"),
    ("pot first start -> all groups s", "pot_first_start_seconds", "{:.2f}"),
    ("pot kill -9 -> all groups beat s", "pot_takeover_seconds", "{:.2f}"),
    ("pot new instance peak RSS MB", "pot_takeover_rss_mb", "{:.0f}"),
    ("payout start -> SERVING s", "service_start.payout", "{:.2f}"),
    ("display start -> SERVING s", "service_start.display", "{:.2f}"),
    ("gateway start -> SERVING s", "service_start.gateway", "{:.2f}"),
    ("  first starts (upgrade) max s", "service_first_start_max", "{:.2f}"),
    ("audit writer resume s", "audit_resume_seconds", "{:.3f}"),
    ("  first resume s", "audit_resume_first_seconds", "{:.3f}"),
    ("report last day s", "report_one_day_seconds", "{:.2f}"),
    ("report last day peak RSS MB", "report_one_day_rss_mb", "{:.0f}"),
    ("report last day PDF pages", "report_one_day_pdf_pages", "{:,.0f}"),
    ("report last day PDF bytes", "report_one_day_pdf_bytes", "{:,.0f}"),
    ("report month (days of it)", "report_month_days", "{:g}"),
    ("report month s", "report_month_seconds", "{:.2f}"),
    ("report month peak RSS MB", "report_month_rss_mb", "{:.0f}"),
    ("report month PDF pages", "report_month_pdf_pages", "{:,.0f}"),
    ("report month PDF bytes", "report_month_pdf_bytes", "{:,.0f}"),
    ("report month keeping its days s", "report_month_keeping_seconds", "{:.2f}"),
    ("report month of kept days s", "report_month_kept_seconds", "{:.2f}"),
    ("  peak RSS MB", "report_month_kept_rss_mb", "{:.0f}"),
    ("  PDF pages", "report_month_kept_pdf_pages", "{:,.0f}"),
    ("  says what the ledger says", "report_month_kept_same", "{}"),
    ("audit all s", "audit_seconds", "{:.2f}"),
    ("audit entries/s", "audit_entries_per_second", "{:,.0f}"),
    ("audit peak RSS MB", "audit_rss_mb", "{:.0f}"),
    ("restore --from-ledger s", "restore_seconds", "{:.2f}"),
    ("restore peak RSS MB", "restore_rss_mb", "{:.0f}"),
    ("exit report/audit/restore", "exits", "{}"),
    ("measurements that failed", "error_count", "{}"),
)


def reusable(bootstrap: str, tables: int, days: float) -> dict[str, Any] | None:
    """A complete history of ``tables`` and ``days`` still in Kafka, whatever code made it
    (``--reuse-history``: today's code on a history an older version wrote, as after an
    upgrade; a 30-day history takes some 40 minutes to synthesize)."""
    for path in sorted(
        MANIFESTS.glob(f"hist-*-t{tables}-d*.json"), key=lambda p: -p.stat().st_mtime
    ):
        made: dict[str, Any] = json.loads(path.read_text())
        plan = made.get("plan", {})
        if (plan.get("tables"), plan.get("days")) != (tables, days):
            continue
        if made.get("state") == "complete" and asyncio.run(topics_exist(bootstrap, made["prefix"])):
            return {**made, "cached": True}
    return None


def synthesize(
    bootstrap: str, code: Code, tables: int, days: float, fresh: bool, reuse: bool = False
) -> dict[str, Any]:
    """The history's manifest, from ``loadtest.history_kafka`` run with ``code`` (or, with
    ``reuse``, one already in Kafka: :func:`reusable`)."""
    found = reusable(bootstrap, tables, days) if reuse and not fresh else None
    if found is not None:
        return found
    args = [sys.executable, "-m", "loadtest.history_kafka", "--tables", str(tables)]
    args += ["--days", f"{days:g}", "--bootstrap-servers", bootstrap]
    done = subprocess.run(
        [*args, *(["--fresh"] if fresh else [])],
        env={**os.environ, **code.env()},
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"synthesizing {days:g} days failed:\n{done.stderr[-3000:]}")
    made: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return made


async def measure_all(run: Run) -> dict[str, Any]:
    """Every figure of one history, in an order that leaves it usable until the restore; a
    step that fails (a pot that halts its partitions, a service that never serves) leaves its
    figures out and says why under ``errors``."""
    figures: dict[str, Any] = {}
    errors: dict[str, str] = {}

    async def step(name: str, made: Awaitable[dict[str, Any]]) -> None:
        try:
            figures.update(await made)
        except (RuntimeError, TimeoutError, OSError, subprocess.SubprocessError) as error:
            errors[name] = f"{type(error).__name__}: {error}"[:600]
            print(f"  {name}: {errors[name]}", file=sys.stderr, flush=True)

    await step("pot takeover", measure.pot_takeover(run))
    await step("service start", measure.service_starts(run))
    await step("audit resume", asyncio.to_thread(measure.audit_resume, run))
    entries = await measure.ledger_entries(run)
    figures["ledger_entries"] = entries
    await step("tools", asyncio.to_thread(measure.tools, run, entries))
    figures["errors"] = errors
    return figures


def size_figures(
    bootstrap: str,
    code: Code,
    tables: int,
    days: float,
    keep: bool,
    fresh: bool,
    reuse: bool = False,
) -> dict[str, Any]:
    manifest = synthesize(bootstrap, code, tables, days, fresh, reuse)
    prefix, cached = manifest["prefix"], manifest.pop("cached")
    print(
        f"[{code.name} {days:g} d] history {prefix}: {manifest['totals']['rounds']:,} rounds, "
        f"{'cached' if cached else 'synthesized in ' + str(manifest['seconds']) + ' s'}",
        flush=True,
    )
    run = Run(manifest, code, bootstrap, LOGS / f"{code.name}-{prefix}")
    figures = asyncio.run(measure_all(run))
    path = manifest_path(prefix)
    path.write_text(json.dumps({**manifest, "state": "restored"}, indent=2) + "\n")
    if not keep:
        asyncio.run(delete_topics(bootstrap, prefix))
        path.unlink()
    totals = manifest["totals"]
    figures.update(
        days=days,
        tables=tables,
        rounds=totals["rounds"],
        audit_entries=totals["audit_entries"],
        awards=totals["awards"],
        open_payouts=totals["open"],
        synth_seconds=None if cached else manifest["seconds"],
        synth_rounds_per_second=manifest["rounds_per_second"],
        service_first_start_max=max(figures.get("service_first_start", {0: None}).values()),
        error_count=len(figures["errors"]),
        exits="/".join(str(figures.get(f"{t}_exit", "-")) for t in ("report", "audit", "restore")),
    )
    print(f"[{code.name} {days:g} d] {json.dumps(figures)}", flush=True)
    return figures


def value(figures: Mapping[str, Any], key: str) -> Any:
    for part in key.split("."):
        if not isinstance(figures, Mapping) or part not in figures:
            return None
        figures = figures[part]
    return figures


def render(columns: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    head = f"{'history benchmark':36}" + "".join(f"{name:>14}" for name, _ in columns)
    lines = [head]
    for label, key, form in ROWS:
        cells = []
        for _, figures in columns:
            found = value(figures, key)
            cells.append("-" if found is None else form.format(found))
        lines.append(f"{label:36}" + "".join(f"{cell:>14}" for cell in cells))
    return "\n".join(lines)


def _at_most(found: Any, bound: float) -> bool:
    """A figure within its bound; a figure that could not be measured misses it."""
    return found is not None and found <= bound


def _ratio(found: Any, base: Mapping[str, Any] | None, key: str) -> float | None:
    if base is None or found is None or not base.get(key):
        return None
    return float(found) / float(base[key])


def targets(sizes: Mapping[float, Mapping[str, Any]]) -> list[tuple[str, bool | None, str]]:
    """The issue's targets at the largest size: (what, met or None when not measured, shown)."""
    largest = sizes[max(sizes)]
    zero, one = sizes.get(0.0), sizes.get(1.0)
    if one is largest:
        one = None
    take, rss = largest.get("pot_takeover_seconds"), largest.get("pot_takeover_rss_mb")
    report, report_rss = largest.get("report_one_day_seconds"), largest.get("report_one_day_rss_mb")
    rate, audit_rss = largest.get("audit_entries_per_second"), largest.get("audit_rss_mb")
    take_ratio = _ratio(take, zero, "pot_takeover_seconds")
    report_ratio = _ratio(report, one, "report_one_day_seconds")
    slowest = [f.get("service_start_seconds") for f in sizes.values()]
    errors = "; ".join(f"{k}: {v}" for f in sizes.values() for k, v in f.get("errors", {}).items())
    return [
        ("pot takeover <= 5 s", _at_most(take, 5), _shown(take, "{:.2f} s")),
        ("pot takeover <= 1.5x of 0 days",
         None if zero is None else _at_most(take_ratio, 1.5), _shown(take_ratio, "{:.2f}x")),
        ("pot peak RSS <= 256 MB", _at_most(rss, 256), _shown(rss, "{:.0f} MB")),
        ("one-day report <= 10 s", _at_most(report, 10), _shown(report, "{:.2f} s")),
        ("one-day report <= 2x of 1 day",
         None if one is None else _at_most(report_ratio, 2), _shown(report_ratio, "{:.2f}x")),
        ("one-day report peak RSS <= 512 MB", _at_most(report_rss, 512),
         _shown(report_rss, "{:.0f} MB")),
        *_report_targets(largest),
        ("full audit >= 100,000 entries/s", rate is not None and rate >= 100_000,
         _shown(rate, "{:,.0f}/s")),
        ("full audit peak RSS <= 512 MB", _at_most(audit_rss, 512), _shown(audit_rss, "{:.0f} MB")),
        ("every service SERVING <= 3 s (any size)",
         all(_at_most(s, 3) for s in slowest), _shown(max((s or 0) for s in slowest), "{:.2f} s")),
        ("report, audit and restore exit 0 (books match)",
         all(f.get("exits") == "0/0/0" and f.get("report_month_exit", 0) == 0
             and f.get("report_month_kept_exit", 0) == 0 for f in sizes.values()), ""),
        ("every measurement ran", not errors, errors[:300]),
    ]  # fmt: skip


def _report_targets(largest: Mapping[str, Any]) -> list[tuple[str, bool | None, str]]:
    """Issue 37: the report stays a document (at most ~40 pages, a day's or a month's) and a
    month's report takes at most 60 s (n/a on a history shorter than a month)."""
    pages = largest.get("report_one_day_pdf_pages")
    month_pages, month = (
        largest.get("report_month_pdf_pages"),
        largest.get("report_month_kept_seconds"),
    )
    days = largest.get("report_month_days") or 0
    same = largest.get("report_month_kept_same")
    return [
        ("one-day report PDF <= 40 pages", _at_most(pages, 40), _shown(pages, "{} pages")),
        ("month report of its kept days <= 60 s (30 days)",
         _at_most(month, 60) if days >= MONTH_DAYS else None,
         _shown(month, "{:.2f} s") + (f" for {days:g} days" if month is not None else "")),
        ("month of kept days says what the ledger says", same, _shown(same, "{}")),
        ("month report PDF <= 40 pages", None if days < 2 else _at_most(month_pages, 40),
         _shown(month_pages, "{} pages") + (f" for {days:g} days" if days else "")),
    ]  # fmt: skip


def _shown(found: Any, form: str) -> str:
    return "not measured" if found is None else form.format(found)


def summary(
    sizes: Mapping[float, Mapping[str, Any]], before: Mapping[float, Mapping[str, Any]]
) -> dict[str, Any]:
    """The ``history`` section of bench.json."""
    largest, zero, one = sizes[max(sizes)], sizes.get(0.0), sizes.get(1.0)
    numbers = [
        k for k, v in largest.items() if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    keys = [*REQUIRED, *(k for k in numbers if k not in REQUIRED)]
    out: dict[str, Any] = {k: largest.get(k) for k in keys}
    out["service_start"] = largest.get("service_start")
    out["errors"] = largest.get("errors")
    if zero is not None:
        for k in keys:
            out[f"{k}_0d"] = zero.get(k)
        for k in (
            "pot_takeover_seconds",
            "pot_takeover_rss_mb",
            "service_start_seconds",
            "audit_resume_seconds",
            "audit_rss_mb",
            "report_one_day_seconds",
        ):
            ratio = _ratio(largest.get(k), zero, k)
            out[f"{k}_ratio_to_0d"] = None if ratio is None else round(ratio, 3)
    if one is not None and one is not largest:
        ratio = _ratio(largest.get("report_one_day_seconds"), one, "report_one_day_seconds")
        out["report_one_day_ratio_to_1d"] = None if ratio is None else round(ratio, 3)
    out["sizes"] = {f"{d:g}": f for d, f in sorted(sizes.items())}
    if before:
        out["before"] = {f"{d:g}": f for d, f in sorted(before.items())}
    return out


def merge_json(path: Path, section: Mapping[str, Any]) -> None:
    """``history`` of FILE replaced; everything else kept."""
    figures: dict[str, Any] = {}
    if path.exists():
        figures = json.loads(path.read_text())
    figures["history"] = section
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(figures, indent=2) + "\n")
    temporary.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--days", type=float, nargs="+", default=[0.0, 1.0, 7.0])
    parser.add_argument("--json", type=Path, help="merge the figures into this file (history.*)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--before", type=Path, help="a checkout of older code to measure too")
    parser.add_argument("--before-days", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--keep", action="store_true", help="keep the histories' topics")
    parser.add_argument("--fresh", action="store_true", help="synthesize even if cached")
    parser.add_argument(
        "--reuse-history",
        action="store_true",
        help="measure on a complete history of the same size already in Kafka, even one that "
        "older code synthesized (today's code on an upgraded floor's history)",
    )
    parser.add_argument(
        "--bootstrap-servers", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    )
    args = parser.parse_args(argv)
    bootstrap, today = args.bootstrap_servers, Code("after")
    print(f"after: jackpot from {today.origin()}", flush=True)
    sizes = {
        d: size_figures(bootstrap, today, args.tables, d, args.keep, args.fresh, args.reuse_history)
        for d in sorted(set(args.days))
    }
    before: dict[float, dict[str, Any]] = {}
    if args.before:
        old = Code("before", args.before.resolve() / "services")
        print(f"before: jackpot from {old.origin()}", flush=True)
        for d in sorted(set(args.before_days)):
            before[d] = size_figures(bootstrap, old, args.tables, d, args.keep, args.fresh)
    columns = [(f"{d:g} d", f) for d, f in sizes.items()]
    columns += [(f"before {d:g} d", f) for d, f in before.items()]
    print(render(columns))
    missed = False
    for what, met, shown in targets(sizes):
        verdict = "n/a" if met is None else ("PASS" if met else "FAIL")
        missed |= met is False
        print(f"  {verdict:4}  {what:48} {shown}")
    if args.json:
        merge_json(args.json, summary(sizes, before))
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
