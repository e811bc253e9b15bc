"""The display service against real Kafka: gRPC sign stream, web page in a real browser (#6).

The browser test drives Debian's Chromium with Playwright (installed by `make setup`) and saves
a screenshot under build/. The sign and the floor page are judged in every state they reach:
Spanish only, in glyphs the kiosk's fonts have (issue 29; tests/integration/page_language.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from google.protobuf.message import Message
from loadtest.browser import CHROMIUM, chromium
from loadtest.free_ports import free_port

from jackpot.display.main import run_display
from jackpot.display.settings import DisplaySettings
from jackpot.platform.kafka import ensure_topics, idempotent_producer
from jackpot.pot import commands
from jackpot.tools.demo_tables import LEVELS_POKER_CONFIG
from jackpot.topics import TopicSpec
from jackpot.v1 import (
    common_pb2,
    display_pb2,
    display_pb2_grpc,
    payout_pb2,
    pot_pb2,
)
from tests.book_pot import BookPot, caribbean
from tests.integration.page_language import assert_spanish

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
GROUP = "scl-main"
IDENTIFIERS = (GROUP, "CAR-1", "CAR-2")  # what the signs show that is no word of a language


@dataclass
class DisplayUnderTest:
    settings: DisplaySettings
    producer: object
    amount: int = 1_000_000
    beating: bool = True

    async def heartbeat(self) -> None:
        """Re-send the current amount twice a second, as the pot service does, while beating."""
        while True:
            if self.beating:
                await self.pot(self.amount)
            await asyncio.sleep(0.5)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.http_port}"

    async def pot(self, amount: int, increment: int = 0) -> None:
        self.amount = amount
        update = pot_pb2.PotUpdate(
            pot_group_id=GROUP,
            sign_value=amount,
            increment=increment,
            min_bet=1000,
            max_bet=5000,
            credit_value=1000,
            pots=[
                pot_pb2.PotBalance(
                    name="main", balance=common_pb2.ExactAmount(numerator=amount, denominator=1)
                )
            ],
        )
        await self.producer.send_and_wait(  # type: ignore[attr-defined]
            self.settings.pot_updates_topic, update.SerializeToString(), key=GROUP.encode()
        )

    async def award(self, amount: int) -> None:
        award = pot_pb2.Award(
            award_id=f"{GROUP}/CAR-1/R7/4/ROYAL_FLUSH",
            pot_group_id=GROUP,
            table_id="CAR-1",
            round_id="R7",
            seat=4,
            prize="ROYAL_FLUSH",
            bet=1000,
            amount=amount,
            cards=["AS", "KS", "QS", "JS", "TS"],
        )
        await self.producer.send_and_wait(  # type: ignore[attr-defined]
            self.settings.awards_topic, award.SerializeToString(), key=GROUP.encode()
        )

    async def payout(self, state: int, award_id: str = f"{GROUP}/CAR-2/R9/3/ROYAL_FLUSH") -> None:
        """A payout's latest state on the payouts topic (key award id), as the payout service
        writes it."""
        payout = payout_pb2.Payout(
            award_id=award_id,
            pot_group_id=GROUP,
            table_id="CAR-2",
            round_id="R9",
            seat=3,
            prize="ROYAL_FLUSH",
            amount=2_500_000,
            state=state,  # type: ignore[arg-type]
            order=1,
        )
        await self.producer.send_and_wait(  # type: ignore[attr-defined]
            self.settings.payouts_topic, payout.SerializeToString(), key=award_id.encode()
        )

    async def studio_payouts(self, state: int, seats: range) -> None:
        """A studio round's payouts (S-1, round R5), one per seat, at ``state``: each a prize to
        its player's wallet (O9) of 1,000,000 + seat pesos."""
        payouts = [
            payout_pb2.Payout(
                award_id=f"{GROUP}/S-1/R5/{seat}/FLUSH",
                pot_group_id=GROUP,
                table_id="S-1",
                round_id="R5",
                seat=seat,
                prize="FLUSH",
                amount=1_000_000 + seat,
                state=state,  # type: ignore[arg-type]
                order=seat,
                player=f"player-{seat}",
            )
            for seat in seats
        ]
        for payout in payouts:
            await self.producer.send(  # type: ignore[attr-defined]
                self.settings.payouts_topic,
                payout.SerializeToString(),
                key=payout.award_id.encode(),
            )
        await self.producer.flush()  # type: ignore[attr-defined]

    async def send(self, topic: str, group: str, messages: Iterable[Message]) -> None:
        """A pot's records to ``topic`` in order, keyed by their group, as the pot writes them."""
        for message in messages:
            await self.producer.send(  # type: ignore[attr-defined]
                topic, message.SerializeToString(), key=group.encode()
            )
        await self.producer.flush()  # type: ignore[attr-defined]

    async def signs(self) -> list[dict[str, object]]:
        """GET /api/signs from another thread (the server runs on this test's event loop)."""

        def get() -> list[dict[str, object]]:
            with urllib.request.urlopen(f"{self.base_url}/api/signs", timeout=5) as answer:
                data: list[dict[str, object]] = json.loads(answer.read())
                return data

        return await asyncio.to_thread(get)


@pytest.fixture
async def display(kafka_bootstrap: str, unique: str) -> AsyncIterator[DisplayUnderTest]:
    settings = DisplaySettings(
        bootstrap_servers=kafka_bootstrap,
        grpc_address=f"127.0.0.1:{free_port()}",
        http_port=free_port(),
        metrics_port=0,
        stale_seconds=2.0,
        winner_seconds=3.0,
        max_rate=10.0,
        pot_updates_topic=f"test.pot-updates.{unique}",
        awards_topic=f"test.awards.{unique}",
        payouts_topic=f"test.payouts.{unique}",
    )
    await ensure_topics(
        kafka_bootstrap,
        [
            TopicSpec(settings.pot_updates_topic, 1),
            TopicSpec(settings.awards_topic, 1),
            TopicSpec(settings.payouts_topic, 2),
        ],
    )
    producer = idempotent_producer(kafka_bootstrap)
    await producer.start()
    stop = asyncio.Event()
    task = asyncio.create_task(run_display(settings, stop))
    under_test = DisplayUnderTest(settings, producer)
    beat = asyncio.create_task(under_test.heartbeat())
    try:
        for _ in range(100):  # the feed starts at the topics' end: beat until it is heard
            await under_test.pot(1_000_000)
            with contextlib.suppress(OSError):
                if any(s["live"] for s in await under_test.signs()):
                    break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the display never showed the pot live")
        yield under_test
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
        stop.set()
        await task
        await producer.stop()


async def test_grpc_sign_stream_shows_amount_winner_and_closed(display: DisplayUnderTest) -> None:
    async with grpc.aio.insecure_channel(display.settings.grpc_address) as channel:
        stub = display_pb2_grpc.SignServiceStub(channel)
        stream = stub.WatchSigns(display_pb2.WatchSignsRequest(pot_group_ids=[GROUP]))
        first = (await stream.read()).sign
        assert (first.pot_group_id, first.amount, first.live) == (GROUP, 1_000_000, True)
        assert (first.min_bet, first.max_bet) == (1000, 5000)
        await display.pot(1_000_850, increment=850)
        seen = (await asyncio.wait_for(stream.read(), 5)).sign
        assert (seen.amount, seen.increment) == (1_000_850, 850)
        await display.award(1_000_850)
        display.beating = False
        banner = (await asyncio.wait_for(stream.read(), 5)).sign
        assert banner.winner.prize == "ROYAL_FLUSH"
        assert (banner.winner.table_id, banner.winner.seat) == ("CAR-1", 4)
        closed = banner
        while closed.live:  # no more updates: closed after the stale limit (D5)
            closed = (await asyncio.wait_for(stream.read(), 5)).sign
        assert "no update" in closed.closed_reason
        stream.cancel()


async def test_R9_R10_a_win_is_shown_with_table_amount_and_new_base_within_30_s(
    display: DisplayUnderTest,
) -> None:
    """R9, R10, D2: the pot recognises a royal flush at CAR-1 and writes the award with the pot's
    new base (500,000 after the reset, S8); every sign must show which table won, the amount and
    the new base within 30 s of the award (the regulation's bound, polled, never measured)."""
    async with grpc.aio.insecure_channel(display.settings.grpc_address) as channel:
        stub = display_pb2_grpc.SignServiceStub(channel)
        stream = stub.WatchSigns(display_pb2.WatchSignsRequest(pot_group_ids=[GROUP]))
        assert (await stream.read()).sign.live
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30  # R9: from the system recognising the jackpot
        await display.award(1_000_850)
        await display.pot(500_000)  # the same transaction as the award, in the pot service
        shown = None
        while loop.time() < deadline:
            sign = (await asyncio.wait_for(stream.read(), deadline - loop.time())).sign
            if sign.HasField("winner") and sign.amount == 500_000:
                shown = sign
                break
        assert shown is not None, "no sign showed the win and the new base within 30 s (R9)"
        assert (shown.winner.table_id, shown.winner.seat) == ("CAR-1", 4)  # R10: which table
        assert shown.winner.amount == 1_000_850  # R10: the amount won
        assert shown.amount == 500_000  # R10: the new base
        stream.cancel()


@pytest.fixture
def artifacts() -> Path:
    assert Path(CHROMIUM).exists(), "make setup installs Debian's chromium"
    folder = REPO / "build"
    folder.mkdir(exist_ok=True)
    return folder


# The drums' CSS transitions (not the page's own animations: the lights and the winner's flash).
DRUMS_AT_REST = "document.getAnimations().every(a => !(a instanceof CSSTransition))"


async def test_sign_page_in_a_real_browser(display: DisplayUnderTest, artifacts: Path) -> None:
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1200, "height": 700})
        await page.goto(f"{display.base_url}/sign/{GROUP}")
        amount = page.get_by_test_id("amount")
        await page.wait_for_function(
            "document.getElementById('amount').dataset.amount === '1000000'"
        )
        await page.wait_for_function(
            "document.getElementById('amount').dataset.shown === '1000000'"
        )
        assert await page.evaluate("document.body.classList.contains('is-closed')") is False
        assert "5.000" in await page.locator("#max").inner_text()

        await display.pot(1_002_550, increment=2550)  # a round was locked: the pot rises
        await page.wait_for_function(
            "document.getElementById('amount').dataset.shown === '1002550'"
        )
        assert "2.550" in await page.get_by_test_id("increment").inner_text()
        await page.wait_for_function(DRUMS_AT_REST)  # the drums stopped, for the picture
        await page.screenshot(path=str(artifacts / "sign-live.png"))
        await assert_spanish(page, "the sign live", IDENTIFIERS)

        await display.award(1_002_550)
        winner = page.get_by_test_id("winner")
        await winner.wait_for(state="visible", timeout=5000)
        assert "ESCALERA REAL" in await winner.inner_text()
        assert "CAR-1" in await winner.inner_text()
        await page.screenshot(path=str(artifacts / "sign-winner.png"))
        await assert_spanish(page, "the sign's winner", IDENTIFIERS)

        display.beating = False
        closed = page.get_by_test_id("closed")
        await closed.wait_for(state="visible", timeout=8000)  # updates stopped (D5)
        assert "CERRADO" in await closed.inner_text()
        assert "sin noticias del pozo" in await closed.inner_text()
        await page.screenshot(path=str(artifacts / "sign-closed.png"))
        await assert_spanish(page, "the sign closed", IDENTIFIERS)

        display.beating = True  # and it recovers by itself
        await closed.wait_for(state="hidden", timeout=5000)
        assert await amount.get_attribute("data-amount") == "1002550"


async def test_the_floor_page_shows_every_sign_and_a_win_in_spanish(
    display: DisplayUnderTest, artifacts: Path
) -> None:
    """The floor overview (``/``): each group's card live, then its win, named in Spanish."""
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1200, "height": 500})
        await page.goto(display.base_url + "/")
        card = page.locator("a.card", has_text=GROUP)
        await card.locator(".value", has_text="1.000.000").wait_for()
        await assert_spanish(page, "the floor live", IDENTIFIERS)
        await display.award(1_000_000)
        await card.locator(".win", has_text="¡ESCALERA REAL! Mesa CAR-1").wait_for()
        await page.screenshot(path=str(artifacts / "floor-winner.png"))
        await assert_spanish(page, "a win on the floor", IDENTIFIERS)


async def test_D2_a_prize_awaiting_approval_is_pending_on_the_sign_until_approved(
    display: DisplayUnderTest, artifacts: Path
) -> None:
    """D2, the jackpot lock: a payout of the group awaiting approval shows on the web sign and on
    the gRPC SignService as pending (table, seat, prize, amount) next to the live amount, and
    goes away once a supervisor approved it."""
    async with grpc.aio.insecure_channel(display.settings.grpc_address) as channel:
        stub = display_pb2_grpc.SignServiceStub(channel)
        stream = stub.WatchSigns(display_pb2.WatchSignsRequest(pot_group_ids=[GROUP]))
        assert not (await stream.read()).sign.pending
        async with chromium() as browser:
            page = await browser.new_page(viewport={"width": 1200, "height": 760})
            await page.goto(f"{display.base_url}/sign/{GROUP}")
            await page.wait_for_function(
                "document.getElementById('amount').dataset.shown === '1000000'"
            )
            await display.payout(payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL)
            pending = page.get_by_test_id("pending")
            await pending.wait_for(state="visible", timeout=10_000)
            text = await pending.inner_text()
            for shown in ("ESCALERA REAL", "Mesa CAR-2", "Posición 3", "2.500.000"):
                assert shown in text
            assert await page.evaluate("document.body.classList.contains('is-closed')") is False
            await page.wait_for_function(DRUMS_AT_REST)
            await page.screenshot(path=str(artifacts / "sign-pending.png"))
            await assert_spanish(page, "a prize pending on the sign", IDENTIFIERS)
            sign = (await asyncio.wait_for(stream.read(), 10)).sign
            while not sign.pending:
                sign = (await asyncio.wait_for(stream.read(), 10)).sign
            assert [(p.table_id, p.seat, p.prize, p.amount) for p in sign.pending] == [
                ("CAR-2", 3, "ROYAL_FLUSH", 2_500_000)
            ]

            await display.payout(payout_pb2.PAYOUT_STATE_APPROVED)
            await pending.wait_for(state="hidden", timeout=10_000)
            while sign.pending:
                sign = (await asyncio.wait_for(stream.read(), 10)).sign
            assert sign.amount == 1_000_000
        stream.cancel()


async def test_D2_O9_a_studio_rounds_prizes_awaiting_approval_are_counted_on_the_sign(
    display: DisplayUnderTest, artifacts: Path
) -> None:
    """D2, O4, O9: a studio round's 500 prizes awaiting approval are one counted line on the web
    sign and one PendingRound on the SignService (how many, their total), not 500 listed; the
    count follows the approvals and the line goes once every prize is approved."""
    async with grpc.aio.insecure_channel(display.settings.grpc_address) as channel:
        stub = display_pb2_grpc.SignServiceStub(channel)
        stream = stub.WatchSigns(display_pb2.WatchSignsRequest(pot_group_ids=[GROUP]))
        async with chromium() as browser:
            page = await browser.new_page(viewport={"width": 1200, "height": 760})
            await page.goto(f"{display.base_url}/sign/{GROUP}")
            await page.wait_for_function(
                "document.getElementById('amount').dataset.shown === '1000000'"
            )
            awaiting = payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
            await display.studio_payouts(awaiting, range(1, 501))
            line = page.locator("#pending-list li[data-round='R5']")
            total = sum(1_000_000 + seat for seat in range(1, 501))  # 500,125,250
            await line.filter(has_text="500 premios").wait_for(timeout=10_000)
            assert await line.inner_text() == "500 premios · Mesa S-1 · Ronda R5 · $500.125.250"
            assert await page.locator("#pending-list li").count() == 1
            heading = await page.locator("#pending-head").inner_text()
            assert heading == "PREMIOS PENDIENTES DE APROBACIÓN"
            await page.wait_for_function(DRUMS_AT_REST)
            await page.screenshot(path=str(artifacts / "sign-pending-studio.png"))
            await assert_spanish(page, "a studio round pending on the sign", (*IDENTIFIERS, "S-1"))
            sign = (await asyncio.wait_for(stream.read(), 10)).sign
            while [r.prizes for r in sign.pending_rounds] != [500]:
                sign = (await asyncio.wait_for(stream.read(), 10)).sign
            assert not sign.pending
            assert [(r.table_id, r.round_id, r.total) for r in sign.pending_rounds] == [
                ("S-1", "R5", total)
            ]

            await display.studio_payouts(payout_pb2.PAYOUT_STATE_APPROVED, range(1, 201))
            await line.filter(has_text="300 premios").wait_for(timeout=10_000)
            await display.studio_payouts(payout_pb2.PAYOUT_STATE_APPROVED, range(201, 501))
            await page.get_by_test_id("pending").wait_for(state="hidden", timeout=10_000)
            while sign.pending_rounds:
                sign = (await asyncio.wait_for(stream.read(), 10)).sign
        stream.cancel()


# Before the page's own script: every sign state the page receives, timed, heard before the page
# handles it (the listener is added first).
RECORD_RECEIVED = """
window.__received = [];
const PageEventSource = window.EventSource;
window.EventSource = class extends PageEventSource {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", e => {
      window.__received.push({t: performance.now(), amount: JSON.parse(e.data).amount});
    });
  }
};
"""
# Every animation frame: the figure the odometer renders (data-shown), the number its drums are
# set to spell, and whether every drum stands still on a digit (no transition under way).
SAMPLE_EVERY_FRAME = """() => {
  window.__samples = [];
  window.__sampling = true;
  const frame = () => {
    let digits = "", resting = true;
    for (const cell of document.getElementById("digits").children) {
      if (!cell.classList.contains("drum")) continue;
      const strip = cell.firstChild;
      digits += Math.round(-Number(/-?[\\d.]+/.exec(strip.style.transform)[0]) / 1.15);
      const at = -new DOMMatrixReadOnly(getComputedStyle(strip).transform).m42
        / cell.getBoundingClientRect().height;
      if (Math.abs(at - Math.round(at)) > 0.01) resting = false;
    }
    window.__samples.push({t: performance.now(), resting, digits: Number(digits),
                           shown: Number(document.getElementById("amount").dataset.shown)});
    if (window.__sampling) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}"""
RESET_TO = 500_000
RISE = 30_000  # rolls for 900 ms: long enough to catch it between figures on a loaded machine


async def test_M3_sign_page_never_shows_more_than_the_pot_during_and_after_a_win(
    display: DisplayUnderTest,
) -> None:
    """M3 on the web sign: a win drops the pot from 1,002,550 to its base 500,000; the page must
    jump down at once (the odometer used to count down through higher amounts for 1.5 s) and
    roll only upward (to 530,000 after more locks). Sampled every animation frame: the figure
    shown and the digits set are never above the latest amount the page received, and from the
    drop until the rise every drum stands on its digit (none rolls down through higher ones)."""
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1200, "height": 700})
        await page.add_init_script(RECORD_RECEIVED)
        await display.pot(1_002_550, increment=2550)
        await page.goto(f"{display.base_url}/sign/{GROUP}")
        await page.wait_for_function(
            "document.getElementById('amount').dataset.shown === '1002550'"
        )
        await page.wait_for_function(DRUMS_AT_REST)
        await page.evaluate(SAMPLE_EVERY_FRAME)

        await display.award(1_002_550)  # the royal flush took the main pot...
        await display.pot(RESET_TO)  # ...which was reseeded to its base (S8)
        await page.get_by_test_id("winner").wait_for(state="visible", timeout=5000)
        # Sample for longer than the old 1.5 s countdown after the page heard the drop.
        await page.wait_for_function(
            f"""() => {{
              const drop = window.__received.find(r => r.amount === {RESET_TO});
              return drop !== undefined && performance.now() - drop.t > 2000;
            }}"""
        )
        await display.pot(RESET_TO + RISE)  # more locks: up again, rolling
        await page.wait_for_function(
            f"document.getElementById('amount').dataset.shown === '{RESET_TO + RISE}'"
        )
        await page.wait_for_function(DRUMS_AT_REST)
        await page.evaluate("window.__sampling = false")
        received = await page.evaluate("window.__received")
        samples = await page.evaluate("window.__samples")

    def latest(t: float) -> int | None:
        heard = [r["amount"] for r in received if r["t"] <= t]
        return heard[-1] if heard else None

    dropped = next(r["t"] for r in received if r["amount"] == RESET_TO)
    rose = next(r["t"] for r in received if r["amount"] == RESET_TO + RISE)
    assert {r["amount"] for r in received if dropped <= r["t"] < rose} == {RESET_TO}
    for sample in samples:
        pot = latest(sample["t"])
        assert pot is not None
        assert sample["shown"] <= pot, (sample, pot)
        assert sample["digits"] <= pot, (sample, pot)
    after_drop = [s for s in samples if dropped <= s["t"] < rose]
    assert len(after_drop) >= 20, f"only {len(after_drop)} frames sampled after the drop"
    assert after_drop[0]["shown"] == after_drop[0]["digits"] == RESET_TO  # at once
    rolling = [s for s in after_drop if not s["resting"]]
    assert not rolling, f"drums rolling after the drop: {rolling[:3]}"
    after_rise = [s for s in samples if s["t"] >= rose]
    assert any(RESET_TO < s["shown"] < RESET_TO + RISE for s in after_rise)  # it rolled up
    assert after_rise[-1]["shown"] == after_rise[-1]["digits"] == RESET_TO + RISE


LEVELS_GROUP = "scl-five"
LEVEL_LABELS = ["ESCALERA REAL", "ESCALERA DE COLOR", "PÓKER", "FULL", "COLOR"]


def five_level_pot() -> BookPot:
    """A five-level group (`jackpot demo`'s) at two tables in the real pot book; the tests publish
    its records to the display's topics as the pot service writes them (updates, beating;
    awards)."""
    tables = [caribbean(table, site="SCL") for table in ("CAR-1", "CAR-2")]
    return BookPot(LEVELS_GROUP, LEVELS_POKER_CONFIG, tables)


BEAT_SECONDS = 0.5  # the pot service's heartbeat pace (D5), as the tests' pots keep it


async def beat_updates(
    under_test: DisplayUnderTest, latest: Callable[[], pot_pb2.PotUpdate | None], group: str
) -> None:
    """``latest()`` sent to the display every BEAT_SECONDS until cancelled, as the pot service
    beats (D5): a pace, not a wait for anything (the tests wait on the page)."""
    while True:
        update = latest()
        if update is not None:
            await under_test.producer.send_and_wait(  # type: ignore[attr-defined]
                under_test.settings.pot_updates_topic,
                update.SerializeToString(),
                key=group.encode(),
            )
        await asyncio.sleep(BEAT_SECONDS)


async def test_L4_V1_a_five_level_sign_in_a_real_browser_shows_every_level_and_the_envy(
    display: DisplayUnderTest, artifacts: Path
) -> None:
    """L4, M3, D2 on the web sign: a five-level group's sign shows five labelled amounts, each
    its level's pot floored as the pot processor gives it, with its rise; a royal flush with an
    envy bonus (V1, V2) puts up a banner naming the level and the bonuses paid to the other
    seats, at this table and the other linked one; all in Spanish (issue 29)."""
    pot = five_level_pot()
    beat = asyncio.create_task(beat_updates(display, lambda: pot.update, LEVELS_GROUP))
    try:
        pot.apply(pot.event("CAR-2", 1, round_locked=commands.locked({3: 2000})))
        pot.apply(pot.event("CAR-1", 1, round_locked=commands.locked({1: 5000, 2: 1000})))
        assert pot.update is not None
        update = pot.update
        async with chromium() as browser:
            page = await browser.new_page(viewport={"width": 1200, "height": 900})
            await page.goto(f"{display.base_url}/sign/{LEVELS_GROUP}")
            await page.wait_for_function(
                f"document.getElementById('amount').dataset.shown === '{update.sign_value}'"
            )
            main = page.get_by_test_id("main-label")
            assert (await main.inner_text()) == LEVEL_LABELS[0]
            rows = page.get_by_test_id("level")
            assert await rows.count() == 4
            for n, level in enumerate(update.levels[1:]):
                row = rows.nth(n)
                assert await row.get_attribute("data-amount") == str(level.sign_value)
                assert (await row.locator(".label").inner_text()) == LEVEL_LABELS[n + 1]
                assert f"{level.sign_value:,}".replace(",", ".") in await row.inner_text()
                assert f"+ ${level.increment:,}".replace(",", ".") in await row.inner_text()
            await page.wait_for_function(DRUMS_AT_REST)
            await page.screenshot(path=str(artifacts / "sign-levels.png"))
            await assert_spanish(page, "the five-level sign", (*IDENTIFIERS, LEVELS_GROUP))

            royal = ["AS", "KS", "QS", "JS", "TS"]
            hands = {1: royal, 2: ["2C", "7D", "9S", "JC", "4C"]}
            awards = pot.apply(pot.event("CAR-1", 2, round_result=commands.result(hands)))
            assert [a.prize for a in awards] == ["ENVY_ROYAL_FLUSH"] * 2 + ["ROYAL_FLUSH"]
            # in the order the pot wrote them: the bonuses first (V3)
            await display.send(display.settings.awards_topic, LEVELS_GROUP, awards)
            winner = page.get_by_test_id("winner")
            await winner.wait_for(state="visible", timeout=5000)
            await page.wait_for_function(
                "document.getElementById('winner-amount').textContent !== ''"
            )
            assert "NIVEL ESCALERA REAL" in (await page.get_by_test_id("winner-level").inner_text())
            envy = await page.get_by_test_id("winner-envy").inner_text()
            assert envy == "BONO ENVIDIA · 2 posiciones en 2 mesas · $10.000"
            named = await page.evaluate("prize('ENVY_ROYAL_FLUSH')")
            assert named == "BONO ENVIDIA ESCALERA REAL"
            assert f"{awards[-1].amount:,}".replace(",", ".") in await winner.inner_text()
            await page.screenshot(path=str(artifacts / "sign-levels-winner.png"))
            await assert_spanish(page, "the five-level sign's winner", (*IDENTIFIERS, LEVELS_GROUP))
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat


async def test_L4_the_floor_page_shows_every_level_of_every_group(
    display: DisplayUnderTest, artifacts: Path
) -> None:
    """Issue 37 item 2 (L4, M3, V1): the floor overview shows a one-level group's card as before
    (one amount, no level) and a five-level group's with the main level's label over its amount
    and every other level's label and amount (each its pot floored, as the pot processor gives
    it); a royal flush's win on that card names its level; all in Spanish (issue 29)."""
    pot = five_level_pot()
    beat = asyncio.create_task(beat_updates(display, lambda: pot.update, LEVELS_GROUP))
    try:
        pot.apply(pot.event("CAR-1", 1, round_locked=commands.locked({1: 5000, 2: 1000})))
        assert pot.update is not None
        update = pot.update
        async with chromium() as browser:
            page = await browser.new_page(viewport={"width": 1200, "height": 700})
            await page.goto(display.base_url + "/")
            single = page.locator("a.card", has_text=GROUP)
            card = page.locator("a.card", has_text=LEVELS_GROUP)
            value = f"{update.sign_value:,}".replace(",", ".")
            await card.locator(".value", has_text=value).wait_for()
            await single.locator(".value", has_text="1.000.000").wait_for()
            assert await single.get_by_test_id("level").count() == 0
            assert await single.get_by_test_id("main-label").text_content() == ""

            main = card.get_by_test_id("main-label")
            assert await main.text_content() == "Escalera real"
            assert await main.get_attribute("data-level") == update.levels[0].name
            rows = card.get_by_test_id("level")
            await page.wait_for_function(
                "document.querySelectorAll('[data-testid=level]').length === 4"
            )
            for n, level in enumerate(update.levels[1:]):
                row = rows.nth(n)
                assert await row.get_attribute("data-level") == level.name
                assert await row.get_attribute("data-amount") == str(level.sign_value)
                assert await row.locator(".label").text_content() == level.label
                assert (await row.locator(".label").inner_text()) == LEVEL_LABELS[n + 1]
                amount = f"${level.sign_value:,}".replace(",", ".")
                assert await row.locator(".amount").text_content() == amount
            await page.screenshot(path=str(artifacts / "floor-levels.png"))
            await assert_spanish(page, "the floor with levels", (*IDENTIFIERS, LEVELS_GROUP))

            royal = ["AS", "KS", "QS", "JS", "TS"]
            hands = {1: royal, 2: ["2C", "7D", "9S", "JC", "4C"]}
            awards = pot.apply(pot.event("CAR-1", 2, round_result=commands.result(hands)))
            # the envy bonuses first (V3), then the royal
            await display.send(display.settings.awards_topic, LEVELS_GROUP, awards)
            win = card.locator(".win", has_text="¡ESCALERA REAL! Mesa CAR-1")
            await win.wait_for()
            await page.wait_for_function(
                "[...document.querySelectorAll('.win')].some(w => w.textContent.includes('nivel'))"
            )
            assert (await win.text_content() or "").endswith(" · nivel Escalera real")
            await page.screenshot(path=str(artifacts / "floor-levels-winner.png"))
            await assert_spanish(page, "a level's win on the floor", (*IDENTIFIERS, LEVELS_GROUP))
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
