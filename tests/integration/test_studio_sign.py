"""The studio sign in a real browser (issue 39, rules O2-O5): the overlay a studio's stream shows
reads the real display service, fed through Kafka with the real pot book's records of a studio
round of 2,000 bets: the pot, the round's bets, each bet's share of the top prize now and who
takes the odd pesos (as a hardware sign is sent them too, SignService/WatchSigns); then the round's
royal flush as one banner of its 2,000 winners and their total, on the overlay and on the hardware
sign alike.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from loadtest.browser import chromium

from jackpot.pot import commands
from jackpot.v1 import display_pb2, display_pb2_grpc, table_events_pb2
from tests.book_pot import BookPot
from tests.integration.page_language import assert_spanish
from tests.integration.test_display import (  # noqa: F401
    DisplayUnderTest,
    artifacts,
    beat_updates,
    display,
)
from tests.unit.test_display_studio import GROUP, LAND, ROYAL, STUDIO, studio_pot

pytestmark = pytest.mark.integration

IDENTIFIERS = (GROUP, STUDIO, LAND, "R1")


async def grpc_sign(
    under_test: DisplayUnderTest, until: Callable[[display_pb2.SignState], bool]
) -> display_pb2.SignState:
    """The first state a hardware sign of the group is sent (SignService/WatchSigns) that
    ``until`` accepts; failing that, the last one it was sent within 20 s (for the caller's
    assertion to show)."""
    async with grpc.aio.insecure_channel(under_test.settings.grpc_address) as channel:
        stub = display_pb2_grpc.SignServiceStub(channel)
        stream = stub.WatchSigns(display_pb2.WatchSignsRequest(pot_group_ids=[GROUP]))
        sign = display_pb2.SignState()
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(20):
                    sign = (await stream.read()).sign
                    while not until(sign):
                        sign = (await stream.read()).sign
            return sign
        finally:
            stream.cancel()


async def the_winners_shown(
    under_test: DisplayUnderTest, page: Any, pot: BookPot, shots: Path
) -> None:
    """The round's royal flush: one banner of its 2,000 winners and their total, on the overlay
    and on a hardware sign (SignState.winner) alike."""
    result = table_events_pb2.RoundResult(shared_hand=ROYAL)
    pot.apply(pot.event(STUDIO, 2, round_result=result))
    assert {a.amount for a in pot.awards} == {1002, 2002}  # the figure the sign showed
    # read as they come: the banner counts up award by award, down winner_seconds after the last
    banner = asyncio.create_task(
        grpc_sign(under_test, lambda sign: sign.winner.studio_winners == 2000)
    )
    try:
        await under_test.send(under_test.settings.awards_topic, GROUP, pot.awards)
        winner = page.get_by_test_id("winner")
        await page.wait_for_function("document.getElementById('winner').dataset.winners === '2000'")
        shown = (await banner).winner
    finally:
        banner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await banner
    assert (shown.round_id, shown.prize, shown.studio_winners, shown.studio_total) == (
        "R1",
        "ROYAL_FLUSH",
        2000,
        2_005_000,
    )
    assert await winner.get_attribute("data-total") == "2005000"
    text = await winner.inner_text()
    assert "¡ESCALERA REAL!" in text
    assert "Ronda R1 · 2.000 ganadores · $2.005.000 repartidos" in text
    await page.screenshot(path=str(shots / "studio-sign-winners.png"))
    await assert_spanish(page, "the studio overlay's winners", IDENTIFIERS)


async def test_O4_S3_the_studio_overlay_shows_the_round_and_each_bets_share_then_its_winners(
    display: DisplayUnderTest,  # noqa: F811
    artifacts: Path,  # noqa: F811
) -> None:
    pot = studio_pot()
    bets = {seat: 1000 for seat in range(1, 2001)}
    players = {seat: f"player-{seat}" for seat in bets}
    pot.apply(pot.event(LAND, 1, round_locked=commands.locked({1: 5000})))
    beating = asyncio.create_task(beat_updates(display, lambda: pot.update, GROUP))
    try:
        async with chromium() as browser:
            page = await browser.new_page(viewport={"width": 1280, "height": 300})
            await page.goto(f"{display.base_url}/studio/{GROUP}/{STUDIO}")
            await page.wait_for_function(
                "document.getElementById('amount').dataset.amount === '5000'"
            )
            share = page.get_by_test_id("share")
            assert "al cerrar las apuestas" in await share.inner_text()  # no round locked yet
            await assert_spanish(page, "the studio overlay, bets open", IDENTIFIERS)

            pot.apply(pot.event(STUDIO, 1, round_locked=commands.locked(bets, players)))
            # 2,000,000 + 5,000 = 2,005,000 = 2,000 x 1,002 + 1,000: the odd pesos to seat 1
            await page.wait_for_function("document.getElementById('share').dataset.bets === '2000'")
            round_text = await page.get_by_test_id("round").inner_text()
            assert "Ronda R1 · 2.000 apuestas · $2.000.000 apostados" in round_text
            assert await share.inner_text() == "Si sale ESCALERA REAL: $1.002 por apuesta"
            assert await page.get_by_test_id("odd").inner_text() == "la posición 1 recibe $2.002"
            assert await page.get_by_test_id("amount").inner_text() == "$2.005.000"
            locked = await grpc_sign(display, lambda sign: bool(sign.studio_rounds))
            [shown] = locked.studio_rounds  # a hardware sign: the same figures
            assert (shown.round_id, shown.bets, shown.bet_total, shown.share, shown.odd_pesos) == (
                "R1",
                2000,
                2_000_000,
                1002,
                1000,
            )
            await page.screenshot(path=str(artifacts / "studio-sign.png"))
            await assert_spanish(page, "the studio overlay, a round locked", IDENTIFIERS)
            await the_winners_shown(display, page, pot, artifacts)
    finally:
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating
