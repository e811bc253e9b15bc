"""`jackpot report` on a real floor (R1, D4, M2): every figure equals `jackpot audit`'s and the
simulator's books; and every service put the software digest it verified on its chain (R6).

Real Kafka, every service as its own process (``jackpot.tools.demo_floor.Demo``, 5 tables,
mutual TLS), simulated tables playing for a few seconds; then the books are judged as the fault
suite judges them (``jackpot.sim.books``: bet by bet, award by award), and the report of the whole
run, read from the ledger alone, must say the same to the picopeso.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from pathlib import Path

import pytest
from loadtest.browser import chromium
from loadtest.free_ports import free_port

from jackpot.domain.money import MINOR_PER_PESO
from jackpot.platform.access_log import read_entries
from jackpot.platform.kafka import KafkaConnection
from jackpot.platform.manifest import package_root, verify
from jackpot.sim.books import judge
from jackpot.sim.floor import Floor
from jackpot.tools import report as report_tool
from jackpot.tools.audit import audit
from jackpot.tools.demo_floor import (
    METRICS,
    PORTS,
    REPO,
    Demo,
    sim_config,
    wait_progressive_open,
)
from jackpot.tools.demo_report import report as demo_report
from jackpot.tools.report_figures import compute
from jackpot.tools.report_model import Period
from tests.report_ledgers import read_whole_ledger

pytestmark = pytest.mark.integration

PLAY_SECONDS = 12


async def test_R1_the_report_of_a_floor_equals_the_audit_and_the_books(
    kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    run_id = uuid.uuid4().hex[:8]
    demo = Demo(  # free ports, not the demo's fixed ones: other floors may run on this machine
        5,
        REPO / ".run" / "test-report" / run_id,
        run_id,
        ports={name: free_port() for name in PORTS},
        metrics_ports={name: free_port() for name in METRICS},
        http_port=free_port(),
    )
    demo.state.mkdir(parents=True, exist_ok=True)
    demo.start_kafka()
    await demo.create_topics()
    demo.issue_certificates()
    demo.start_services()
    try:
        await demo.wait_healthy(within_seconds=120)
        await demo.create_groups()
        await wait_progressive_open(demo, within_seconds=60)
        stats = await Floor(sim_config(demo, rig_rate=0.2, rounds_per_minute=90)).run(PLAY_SECONDS)
        books = await judge(demo, stats, await demo_report(demo, stats))
        done = await audit(
            {"bootstrap_servers": demo.bootstrap}, demo.topic("ledger"), demo.topic("pot-updates")
        )
        groups = done.groups
        records = await read_whole_ledger(
            {"bootstrap_servers": demo.bootstrap}, demo.topic("ledger")
        )
        streamed = await report_tool.report_from_kafka(
            {"bootstrap_servers": demo.bootstrap}, demo.topic("ledger"), Period(0, 2**62)
        )
        connection = KafkaConnection({"bootstrap_servers": demo.bootstrap})
        verified_entries = [  # streamed: only these few entries are kept
            entry
            async for _, entry in read_entries(connection, demo.topic("audit"))
            if entry is not None and entry.action == "software_verified"
        ]
    finally:
        demo.stop_services()
    assert books["books_ok"], books
    assert stats.rounds > 0
    # R6: every service instance put the digest of the software it verified on its chain.
    digest = f"sha256:{verify(package_root()).digest}"
    verified = {e.chain.split(":")[0] for e in verified_entries}
    assert verified >= {"pot-api", "payout", "display", "gateway"}, verified
    assert all(e.detail == digest for e in verified_entries)
    report = compute(records, Period(0, 2**62))
    assert report.reconciles, [g.problems for g in report.groups]
    # What the command computes, streamed from Kafka (a period from before the ledger: every
    # partition from its first record, once), is the same to the picopeso.
    assert streamed.records_read == len(records)
    assert [
        (g.group_id, g.opening.figures(), g.closing.figures(), g.awards) for g in streamed.groups
    ] == [(g.group_id, g.opening.figures(), g.closing.figures(), g.awards) for g in report.groups]
    by_id = {g.group_id: g for g in report.groups}
    assert set(by_id) == {g.group_id for g in groups}
    for audited in groups:
        got = by_id[audited.group_id]
        assert got.closing.pots == audited.pots
        assert got.collected == audited.collected
        assert got.commission == audited.accounts["commission"]
        assert got.awarded == audited.accounts["awards"]
        assert got.house_advances == audited.house_advances
        assert got.overflow == audited.overflow
        assert {p: h for p, (h, _) in got.prizes.items()} == dict(audited.hits)
        assert {p: w for p, (_, w) in got.prizes.items()} == dict(audited.wins)
        accepted = books["books_by_group"][audited.group_id]["accepted"]
        assert got.collected == accepted * MINOR_PER_PESO  # the simulator's books, to the peso
        paid = [a for a in got.awards if a.paid_by]
        assert len(paid) == audited.paid_count
    assert sum(len(g.awards) for g in report.groups) == books["payouts"]
    # The command writes the same report: exit 0, every CSV and the page.
    out = tmp_path / "report"
    status = await asyncio.to_thread(
        report_tool.run,
        {"bootstrap_servers": demo.bootstrap},
        demo.topic("ledger"),
        str(out),
        "2000-01-01",
        "2100-01-01",
    )
    assert status == 0
    assert (out / "report.html").read_text().count("<svg") == 2 * len(groups)
    assert (out / "report.pdf").read_bytes().startswith(b"%PDF-")  # printed beside the page
    assert (out / "awards.csv").read_text().count("\n") == 1 + sum(
        len(g.awards) for g in report.groups
    )
    page_text = (out / "report.html").read_text()
    digest = hashlib.sha256((out / "awards.csv").read_bytes()).hexdigest()
    assert f"SHA-256 {digest}" in page_text  # the annex bound to the document (R1)

    # A person opens the page without a server: a real browser shows the verdict and the charts.
    async with chromium() as browser:
        page = await browser.new_page()
        await page.goto((out / "report.html").as_uri())
        verdict = await page.locator(".cover .verdict").inner_text()
        assert "cuadran en este período (M2)" in verdict  # Spanish unless --lang en
        assert await page.locator("svg").count() == 2 * len(groups)
        rows = await page.locator("table.last-awards tbody tr").count()
        assert rows == sum(min(25, len(g.awards)) for g in report.groups)  # the last 25 (R1)
