"""A studio table's dealer terminal in a real browser (issue 39, rules O1, O5, O9): a real gateway
with a studio table driven by the platform's gRPC calls, a real payout service crediting the
reference wallet, the terminal's page in Chromium. The round's bets are counted, never drawn seat
by seat; its winners are shown by count and total as the wallets pay them; only the prize that
waits for a supervisor is listed one by one. Screenshot under build/."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import grpc
import pytest
from loadtest.browser import chromium
from loadtest.free_ports import free_port

from jackpot.domain.engine import PotGroup
from jackpot.domain.events import PrizeAwarded
from jackpot.domain.money import pesos
from jackpot.payout.wallet_payer import WalletPayer
from jackpot.pot.records import award_from_dict
from jackpot.v1 import pot_pb2, studio_pb2, studio_pb2_grpc
from jackpot.wallet.reference import ReferenceWallet, WalletFaults
from tests.integration.gateway_harness import (
    GROUP,
    PotHeartbeat,
    create_topics,
    start_gateway,
    wait_until,
)
from tests.integration.page_language import assert_spanish
from tests.integration.test_display import artifacts  # noqa: F401
from tests.integration.test_payout import Running, payout_settings, publish
from tests.integration.test_studio_platform import STUDIO, chunk, studio_settings
from tests.integration.test_terminal import started_terminal
from tests.unit.test_studio import LIMITS, ROYAL, config

pytestmark = pytest.mark.integration

BETS = 300
IDENTIFIERS = (STUDIO, GROUP, "R1")


def royal_awards() -> list[pot_pb2.Award]:
    """The engine's awards of a shared royal flush on the round's 300 bets, seat 7 folded (O4,
    O5, S3): the pot's 1,000,000 and the bets' 300,000 (no commission) are 1,300,000 =
    299 x 4,347 + 247, the odd pesos to seat 1 (4,594)."""
    group, _ = PotGroup.open(GROUP, config(), {"main": pesos(1_000_000)})
    group.link_table(STUDIO, "caribbean", "studio", **LIMITS, studio_seats=20_000)
    bets = dict.fromkeys(range(1, BETS + 1), 1000)
    group.lock_round(STUDIO, "R1", bets, {seat: f"p{seat}" for seat in bets})
    group.forfeit(STUDIO, "R1", 7, "FOLD")
    events = group.resolve_round(STUDIO, "R1", {}, shared_hand=ROYAL)
    return [award_from_dict(e.to_dict()) for e in events if isinstance(e, PrizeAwarded)]


async def test_O1_O9_the_studio_terminal_counts_the_bets_and_shows_the_winners_by_count_and_total(
    kafka_bootstrap: str,
    unique: str,
    tmp_path: Path,
    artifacts: Path,  # noqa: F811
) -> None:
    wallet = ReferenceWallet(WalletFaults(latency_seconds=0.005, seed=39))
    server = grpc.aio.server()
    wallet.register(server)
    wallet_port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    payout = (await payout_settings(kafka_bootstrap, unique)).replace(
        wallet_target=f"127.0.0.1:{wallet_port}", studio_approval_threshold=4_500
    )
    gateway_settings = studio_settings(kafka_bootstrap, unique, tmp_path / "spool.sqlite")
    gateway_settings = gateway_settings.replace(grpc_address=f"127.0.0.1:{free_port()}")
    await create_topics(gateway_settings)
    beat = PotHeartbeat(gateway_settings)
    beat.start()
    gateway = await start_gateway(gateway_settings)
    try:
        async with (
            started_terminal(STUDIO, gateway_settings.grpc_address, payout.grpc_address) as url,
            Running(payout) as running,
            grpc.aio.insecure_channel(gateway.target) as ch,
        ):
            payer = asyncio.create_task(WalletPayer(running.service).run())
            await wait_until(lambda: gateway.gateway.studio.tables[STUDIO].progressive_open)
            platform = studio_pb2_grpc.StudioPlatformServiceStub(ch)  # type: ignore[no-untyped-call]
            await platform.OpenStudioRound(
                studio_pb2.OpenStudioRoundRequest(table_id=STUDIO, round_id="R1")
            )
            await platform.PlaceStudioBets(
                studio_pb2.PlaceStudioBetsRequest(
                    table_id=STUDIO, round_id="R1", chunk_id="c1", bets=chunk(1, BETS)
                )
            )
            await platform.LockStudioRound(
                studio_pb2.LockStudioRoundRequest(table_id=STUDIO, round_id="R1")
            )
            await platform.FoldStudioBets(
                studio_pb2.FoldStudioBetsRequest(table_id=STUDIO, round_id="R1", seats=[7])
            )
            async with chromium() as browser:
                page = await browser.new_page(viewport={"width": 1280, "height": 720})
                await page.goto(url)
                bets = page.get_by_test_id("studio-bets")
                await bets.wait_for()
                await page.wait_for_function(
                    "document.querySelector('[data-testid=studio-bets]').textContent"
                    ".includes('1 retirada')"
                )
                assert await bets.inner_text() == "300 apuestas · $300.000 apostados · 1 retirada"
                assert await page.locator(".seat").count() == 0  # no seat drawn
                awards = royal_awards()
                assert len(awards) == BETS - 1
                await publish(payout, *awards)
                row = page.get_by_test_id("wallet-round")
                await page.wait_for_function(
                    "document.querySelector('[data-testid=wallet-round]')?.dataset.paid === '298'",
                    timeout=30_000,
                )
                assert await row.get_attribute("data-winners") == "299"
                assert await row.get_attribute("data-total") == "1300000"
                text = await row.inner_text()
                assert "Ronda R1: ESCALERA REAL · 299 ganadores · $1.300.000" in text
                assert "pagados a billeteras 298 ($1.295.406) · 1 espera aprobación" in text
                # only the prize over the studio threshold is listed, for its supervisor
                listed = await page.eval_on_selector_all(
                    "#prizes tr", "r => r.map(x => x.dataset.award)"
                )
                assert listed == [awards[0].award_id]
                assert (awards[0].seat, awards[0].amount) == (1, 4_594)
                await page.screenshot(path=str(artifacts / "terminal-studio.png"))
                await assert_spanish(page, "a studio table's terminal", IDENTIFIERS)
            payer.cancel()
            await asyncio.gather(payer, return_exceptions=True)
    finally:
        await gateway.stop()
        await beat.stop()
        with contextlib.suppress(Exception):
            await server.stop(None)
    assert len(wallet.credits) == BETS - 2  # each credited once; seat 1 waits for approval
