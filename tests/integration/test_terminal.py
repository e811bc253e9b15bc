"""The reference dealer terminal (rule D3) in a real browser: a real gateway and payout service
over real Kafka and gRPC, the terminal's page in Debian's Chromium (Playwright, as the sign's
test). Screenshots under build/.

The screen speaks Spanish only, in glyphs the kiosk's fonts have (issue 29): in every state the
tests reach (the links up, one down, a prize awaiting approval, each kind of answer) the page
is judged by tests/integration/page_language.py. The API's ``message`` stays the log's English;
its ``text`` is what the screen shows."""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from loadtest.browser import chromium
from loadtest.free_ports import free_port

from jackpot.domain.cards import Game
from jackpot.domain.events import PrizeAwarded
from jackpot.payout.settings import PayoutSettings
from jackpot.pot.records import award_from_dict
from jackpot.terminal.main import run_terminal
from jackpot.terminal.screen import WHO_APPROVES
from jackpot.terminal.settings import TerminalSettings
from jackpot.v1 import payout_pb2, payout_pb2_grpc, pot_pb2
from tests.integration.gateway_harness import (
    GROUP,
    Device,
    PotHeartbeat,
    RunningGateway,
    create_topics,
    settings_for,
    start_gateway,
    wait_until,
)
from tests.integration.page_language import assert_spanish
from tests.integration.test_display import artifacts
from tests.integration.test_payout import Running, award, ledger_types, payout_settings, publish
from tests.integration.test_security import audit_entries
from tests.polling import eventually
from tests.unit.test_levels import (
    FULL_3_4,
    NOTHING,
    NOTHING_2,
    ROYAL_S,
    SF_5_9_C,
    leveled,
    open_group,
)

pytestmark = pytest.mark.integration
__all__ = ["artifacts"]  # the fixture, imported for these tests

TABLE = "CAR-1"
# What the tests' screens may show that is no word of any language.
IDENTIFIERS = (TABLE, "DRW-1", GROUP)
ANSWER_STARTS = "document.getElementById('answer').textContent.startsWith({!r})"
ANSWER_HAS = "document.getElementById('answer').textContent.includes({!r})"


@dataclass
class Floor:
    payout: PayoutSettings
    gateway: RunningGateway
    device: Device
    url: str
    running: Running | None = None  # the payout instance running now (a test may replace it)
    heartbeat: PotHeartbeat | None = None  # the group's pot updates (a test may give it levels)

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST the page's API from another thread (the terminal runs on this event loop)."""

        def send() -> tuple[int, dict[str, Any]]:
            request = urllib.request.Request(
                self.url + path.lstrip("/"),
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    return answer.status, json.loads(answer.read())
            except urllib.error.HTTPError as refused:
                return refused.code, json.loads(refused.read())

        return await asyncio.to_thread(send)

    async def get(self, path: str) -> tuple[int, dict[str, Any]]:
        """GET the page's API from another thread."""

        def fetch() -> tuple[int, dict[str, Any]]:
            with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=30) as answer:
                return answer.status, json.loads(answer.read())

        return await asyncio.to_thread(fetch)


@contextlib.asynccontextmanager
async def started_terminal(
    table_id: str, gateway_address: str, payout_targets: str
) -> AsyncIterator[str]:
    """The dealer terminal of ``table_id`` on this event loop, linked to the gateway and the
    payout service: its page's URL once it listens (a free port), stopped on the way out."""
    settings = TerminalSettings(
        table_id=table_id,
        gateway_address=gateway_address,
        payout_targets=payout_targets,
        http_port=0,
        reconnect_seconds=0.2,
    )
    stop = asyncio.Event()
    bound: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(run_terminal(settings, stop, bound))
    try:
        yield await asyncio.wait_for(bound, 20)
    finally:
        stop.set()
        await task


@pytest.fixture
async def floor(kafka_bootstrap: str, unique: str, tmp_path: Path) -> AsyncIterator[Floor]:
    payout = await payout_settings(kafka_bootstrap, unique)
    gateway_settings = settings_for(kafka_bootstrap, unique, tmp_path / "spool.sqlite").replace(
        grpc_address=f"127.0.0.1:{free_port()}"
    )
    await create_topics(gateway_settings)
    heartbeat = PotHeartbeat(gateway_settings)
    heartbeat.start()
    gateway = await start_gateway(gateway_settings)
    under_test = Floor(
        payout, gateway, Device(gateway.target, TABLE, Game.CARIBBEAN), "", heartbeat=heartbeat
    )
    try:
        async with started_terminal(
            TABLE, gateway_settings.grpc_address, payout.grpc_address
        ) as url:
            under_test.url = url
            try:
                under_test.running = await Running(payout).__aenter__()
                await wait_until(lambda: gateway.gateway.tables[TABLE].progressive_open, within=20)
                await under_test.device.connect()
                yield under_test
            finally:
                if under_test.running is not None:
                    await under_test.running.__aexit__()
    finally:
        await under_test.device.close()
        await under_test.gateway.stop()  # the one running now (a test may have replaced it)
        await heartbeat.stop()


async def locked_round(device: Device, round_id: str, bets: dict[int, int]) -> None:
    await device.open_round(round_id)
    for seat, credits in bets.items():
        await device.credits(seat, credits)
        await device.bet(seat, credits)
    await device.lock()


async def paid_entries(settings: PayoutSettings, award_id: str, expected: int) -> int:
    """The PAID entries of ``award_id`` in the ledger read to its end offsets, which must hold
    exactly ``expected`` entries in all (a duplicate of any entry fails; issue 24 item 4)."""
    entries = await ledger_types(settings, expected)
    return sum(
        1
        for source, kind in entries
        if (source, kind) == (award_id, "LEDGER_ENTRY_TYPE_PAYOUT_PAID")
    )


async def test_D3_the_terminal_shows_a_locked_rounds_bets_and_a_double_click_pays_once(
    floor: Floor, artifacts: Path
) -> None:
    """D3 and S5: the locked round's bets with lamps, the pot, the prizes in payment order; the
    dealer's double click on "Pagado" pays once (PAID once in the ledger); a second confirmation
    and another table's prize are refused with the reason on screen and in the access log."""
    await locked_round(floor.device, "R1", {2: 3, 5: 1})
    small = award("R1", 5, "FLUSH", 40_000, table=TABLE)
    full = award("R1", 2, "FULL_HOUSE", 90_000, table=TABLE)
    elsewhere = award("R1", 1, "FLUSH", 40_000, table="DRW-1")
    await publish(floor.payout, small, full, elsewhere)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1280, "height": 640})
        await page.goto(floor.url)
        await page.wait_for_selector("[data-testid=round-state][data-state=locked]")
        await page.wait_for_selector("[data-seat='2'][data-locked=true][data-lamp=true]")
        assert await page.get_attribute("[data-seat='2']", "data-bet") == "3000"
        assert await page.get_attribute("[data-seat='3']", "data-lamp") == "false"
        assert await page.get_attribute("[data-testid=pot]", "data-amount") == "1000000"
        assert await page.get_attribute("[data-testid=progressive]", "data-open") == "true"
        await page.wait_for_selector("[data-testid=paid-2]")
        rows = await page.eval_on_selector_all(
            "#prizes tr", "rows => rows.map(r => r.dataset.award)"
        )
        assert rows == [small.award_id, full.award_id]  # S1/S5: payment order from the service
        await page.screenshot(path=str(artifacts / "terminal-locked.png"))
        await assert_spanish(page, "a locked round, two prizes to pay", IDENTIFIERS)

        await page.dblclick("[data-testid=paid-5]")
        answer = page.get_by_test_id("answer")
        await page.wait_for_function(ANSWER_STARTS.format("Pagado"))
        await page.wait_for_selector(f"tr[data-award='{small.award_id}']", state="detached")
        assert await answer.get_attribute("data-award") == small.award_id
        await assert_spanish(page, "a prize paid", IDENTIFIERS)

        status, again = await floor.post("/api/paid", {"award_id": small.award_id})
        assert status == 409
        assert "refused" in again["message"]
        assert "PAID" in again["message"].upper()
        assert again["text"] == "Rechazado: el premio está pagado: no se puede pagar"
        await page.wait_for_function(ANSWER_HAS.format("está pagado"))
        status, other = await floor.post("/api/paid", {"award_id": elsewhere.award_id})
        assert status == 409
        assert "DRW-1" in other["message"]
        await page.wait_for_function(ANSWER_HAS.format("en la mesa DRW-1, no en la CAR-1"))
        await page.screenshot(path=str(artifacts / "terminal-refused.png"))
        await assert_spanish(page, "a prize of another table refused", IDENTIFIERS)
        status, malformed = await floor.post("/api/paid", {"award_id": 7})
        assert (status, malformed["message"]) == (400, "'award_id' must be a non-empty string")
        assert malformed["text"] == "Falta el premio"
    assert await paid_entries(floor.payout, small.award_id, 4) == 1
    audited = [
        e
        for _, e in await audit_entries(
            floor.payout.bootstrap_servers, floor.payout.access.audit_topic
        )
        if e
    ]
    outcomes = {(e.action, e.outcome, e.target) for e in audited}
    assert ("confirm_payment", "applied", small.award_id) in outcomes
    assert ("confirm_payment", "refused", small.award_id) in outcomes
    assert ("confirm_payment", "refused", elsewhere.award_id) in outcomes


async def test_two_concurrent_confirmations_at_the_terminals_api_pay_once(floor: Floor) -> None:
    """Issue 24 item 5: a double click that the page did not stop (two `POST /api/paid` of one
    prize at the same moment, as two tabs or a retrying client would send): one is answered
    paid, the other refused; the ledger, read to its end, holds one PAID."""
    prize = award("R6", 2, "FLUSH", 40_000, table=TABLE)
    await publish(floor.payout, prize)

    async def shown() -> bool:
        _, state = await floor.get("/api/state")
        links = state["links"]
        listed = [p["award_id"] for p in state["payouts"] if p["payable"]]
        return links["payout"]["up"] and links["gateway"]["up"] and prize.award_id in listed

    await eventually(shown, "the prize never shown payable on the terminal", 20)
    body = {"award_id": prize.award_id}
    answers = await asyncio.gather(floor.post("/api/paid", body), floor.post("/api/paid", body))
    assert sorted(status for status, _ in answers) == [200, 409], answers
    [refusal] = [answer for status, answer in answers if status == 409]
    assert "refused" in refusal["message"], refusal
    assert refusal["text"].startswith("Rechazado: "), refusal
    assert await paid_entries(floor.payout, prize.award_id, 2) == 1  # ORDERED, PAID: no more


async def test_D3_a_prize_awaiting_approval_is_locked_on_the_terminal_until_approved(
    floor: Floor, artifacts: Path
) -> None:
    """The jackpot lock at the table: a large prize shows locked with who must approve it and
    no button; confirming it anyway is refused (not approved); once a supervisor approved it
    the dealer pays it."""
    await locked_round(floor.device, "R2", {4: 1})
    large = award("R2", 4, "ROYAL_FLUSH", 2_000_000, table=TABLE)
    await publish(floor.payout, large)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1280, "height": 640})
        await page.goto(floor.url)
        row = page.locator(f"tr[data-award='{large.award_id}']")
        await row.wait_for()
        assert await row.get_attribute("data-state") == "awaiting_approval"
        assert f"Debe aprobarlo {WHO_APPROVES}" in await row.inner_text()
        assert await page.locator("[data-testid=paid-4]").count() == 0
        await page.screenshot(path=str(artifacts / "terminal-pending.png"))
        await assert_spanish(page, "a prize awaiting approval", IDENTIFIERS)
        status, refused = await floor.post("/api/paid", {"award_id": large.award_id})
        assert status == 409
        assert "refused" in refused["message"]
        await page.wait_for_function(ANSWER_HAS.format("esperando aprobación"))
        await assert_spanish(page, "a prize awaiting approval refused", IDENTIFIERS)

        async with grpc_channel(floor.payout.grpc_address) as stub:
            await stub.ApprovePayout(
                payout_pb2.ApprovePayoutRequest(
                    award_id=large.award_id, supervisor="ana", reason="camera checked"
                )
            )
        await page.click("[data-testid=paid-4]")
        await page.wait_for_function(ANSWER_STARTS.format("Pagado"))
    assert await paid_entries(floor.payout, large.award_id, 3) == 1


async def cut_gateway(floor: Floor) -> None:
    await floor.device.close()
    await floor.gateway.stop()


async def restore_gateway(floor: Floor) -> None:
    """The gateway back on the same address (the device reconnects later)."""
    floor.gateway = await start_gateway(floor.gateway.settings)
    floor.device = Device(floor.gateway.target, TABLE, Game.CARIBBEAN)


async def cut_payout(floor: Floor) -> None:
    assert floor.running is not None
    await floor.running.__aexit__()
    floor.running = None


async def restore_payout(floor: Floor) -> None:
    floor.running = await Running(floor.payout).__aenter__()


# link -> (take it away, bring it back, the word the banner names it by, the refusal's words in
# the log, and on the screen)
Step = Callable[[Floor], Awaitable[None]]
LINKS: dict[str, tuple[Step, Step, str, str, str]] = {
    "gateway": (cut_gateway, restore_gateway, "mesa", "gateway", "Sin conexión con la mesa"),
    "payout": (
        cut_payout,
        restore_payout,
        "pagos",
        "payout service",
        "Sin conexión con el servicio de pagos",
    ),
}


@pytest.mark.parametrize("link", list(LINKS))
async def test_D3_a_lost_link_disables_the_buttons_and_they_come_back(
    floor: Floor, artifacts: Path, link: str
) -> None:
    """The gateway or the payout service goes away: the screen says which link is lost, the
    buttons are disabled and a confirmation is refused; the service comes back on the same
    address, the terminal recovers by itself and the dealer's press pays the prize once."""
    cut, restore, banner_word, refusal_words, shown_words = LINKS[link]
    prize = award("R3", 1, "FLUSH", 40_000, table=TABLE)
    await publish(floor.payout, prize)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1280, "height": 640})
        await page.goto(floor.url)
        button = page.locator("[data-testid=paid-1]")
        await page.wait_for_selector("[data-testid=paid-1]:enabled")
        await cut(floor)
        await page.wait_for_selector(f"[data-testid=link-{link}][data-up=false]", timeout=15_000)
        assert await button.is_disabled()
        assert banner_word in (await page.get_by_test_id("link-lost").inner_text()).lower()
        await page.screenshot(path=str(artifacts / f"terminal-{link}-lost.png"))
        await assert_spanish(page, f"the {link} link lost", IDENTIFIERS)
        status, refused = await floor.post("/api/paid", {"award_id": prize.award_id})
        assert status == 409
        assert refusal_words in refused["message"]
        assert refused["text"].startswith(shown_words), refused
        await page.wait_for_function(ANSWER_STARTS.format(shown_words))
        await assert_spanish(page, f"a payment refused with the {link} link lost", IDENTIFIERS)

        await restore(floor)
        await page.wait_for_selector(f"[data-testid=link-{link}][data-up=true]", timeout=20_000)
        await page.wait_for_selector("[data-testid=paid-1]:enabled", timeout=10_000)
        await page.click("[data-testid=paid-1]")
        await page.wait_for_function(ANSWER_STARTS.format("Pagado"))
    assert await paid_entries(floor.payout, prize.award_id, 2) == 1


@contextlib.asynccontextmanager
async def grpc_channel(address: str) -> AsyncIterator[payout_pb2_grpc.PayoutServiceStub]:
    import grpc

    async with grpc.aio.insecure_channel(address) as channel:
        yield payout_pb2_grpc.PayoutServiceStub(channel)  # type: ignore[no-untyped-call]


async def test_a_supervisor_approves_at_the_terminal_with_a_one_time_code_as_themselves(
    floor: Floor, artifacts: Path
) -> None:
    """The jackpot lock at the table: the supervisor asks for a one-time code with their own
    identity (IssueApprovalCode, as `jackpot payouts --code`), enters it at the terminal and the
    payout is approved as that supervisor, never the terminal; a wrong code and a reused one are
    refused; every attempt is on the access log's chain."""
    await locked_round(floor.device, "R4", {3: 1})
    large = award("R4", 3, "ROYAL_FLUSH", 3_000_000, table=TABLE)
    await publish(floor.payout, large)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1280, "height": 640})
        await page.goto(floor.url)
        await page.wait_for_selector("[data-testid=code-3]")
        async with grpc_channel(floor.payout.grpc_address) as stub:
            issued = await stub.IssueApprovalCode(
                payout_pb2.IssueApprovalCodeRequest(award_id=large.award_id)
            )
        assert issued.supervisor == "local"  # plaintext: the development supervisor's name
        wrong = "0" * 8 if issued.code != "0" * 8 else "1" * 8
        body = {"award_id": large.award_id, "code": wrong, "decision": "approve"}
        status, refused = await floor.post("/api/decide", body)
        assert status == 409
        assert "wrong code" in refused["message"]
        await page.wait_for_function(ANSWER_STARTS.format("Rechazado: código incorrecto"))
        await assert_spanish(page, "a wrong code refused", IDENTIFIERS)

        await page.fill("[data-testid=code-3]", issued.code)
        await page.screenshot(path=str(artifacts / "terminal-supervisor-code.png"))
        await page.click("[data-testid=approve-3]")
        await page.wait_for_function(ANSWER_STARTS.format("Aprobado por el supervisor"))
        await assert_spanish(page, "a prize approved at the terminal", IDENTIFIERS)
        await page.click("[data-testid=paid-3]")
        await page.wait_for_function(ANSWER_STARTS.format("Pagado"))
        body["code"] = issued.code
        status, reused = await floor.post("/api/decide", body)
        assert status == 409
        assert "already used" in reused["message"]
        await page.wait_for_function(ANSWER_HAS.format("este código ya fue usado"))
        await assert_spanish(page, "a used code refused", IDENTIFIERS)
    async with grpc_channel(floor.payout.grpc_address) as stub:
        listing = await stub.ListPayouts(payout_pb2.ListPayoutsRequest())
    [payout] = [p for p in listing.payouts if p.award_id == large.award_id]
    approved = [t.by for t in payout.history if t.state == payout_pb2.PAYOUT_STATE_APPROVED]
    assert approved == ["local"]  # the supervisor, not the terminal
    entries = [
        e
        for _, e in await audit_entries(
            floor.payout.bootstrap_servers, floor.payout.access.audit_topic
        )
        if e is not None and e.target == large.award_id
    ]
    seen = {(e.principal, e.action, e.outcome) for e in entries}
    assert ("local", "issue_approval_code", "applied") in seen
    assert ("local", "approve_payout", "applied") in seen
    refusals = [
        e.detail for e in entries if e.action == "approve_payout" and e.outcome == "refused"
    ]
    assert any("wrong code" in d for d in refusals)
    assert any("already used" in d for d in refusals)


async def test_D3_a_supervisors_press_without_a_code_or_a_reason_is_answered_in_spanish(
    floor: Floor, artifacts: Path
) -> None:
    """The page's own malformed request (no code typed, a void without its reason) is refused
    with 400 before the payout service hears of it; the screen says why, in Spanish, and the
    prize stays awaiting approval."""
    large = award("R7", 2, "ROYAL_FLUSH", 2_200_000, table=TABLE)
    await publish(floor.payout, large)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1280, "height": 640})
        await page.goto(floor.url)
        await page.wait_for_selector("[data-testid=approve-2]:enabled")
        await page.click("[data-testid=approve-2]")
        await page.wait_for_function(ANSWER_STARTS.format("Falta el código del supervisor"))
        await assert_spanish(page, "an approval without a code", IDENTIFIERS)
        await page.fill("[data-testid=code-2]", "12345678")
        await page.wait_for_selector("[data-testid=void-2]:enabled")
        await page.click("[data-testid=void-2]")
        await page.wait_for_function(ANSWER_STARTS.format("Para anular hay que escribir el motivo"))
        await page.screenshot(path=str(artifacts / "terminal-void-without-reason.png"))
        await assert_spanish(page, "a void without a reason", IDENTIFIERS)
        row = page.locator(f"tr[data-award='{large.award_id}']")
        assert await row.get_attribute("data-state") == "awaiting_approval"


async def test_the_demos_dealer_and_supervisor_use_the_terminals_api(floor: Floor) -> None:
    """What `jackpot demo` does at its terminal tables: the simulated supervisor approves a large
    prize with a one-time code entered at the terminal, the simulated dealer presses "Pagado"
    through the screen's API; the prize is PAID once."""
    from jackpot.sim.floor import Floor as FloorSimulator
    from jackpot.sim.floor import FloorConfig

    large = award("R5", 6, "ROYAL_FLUSH", 2_500_000, table=TABLE)
    await publish(floor.payout, large)

    async def payout_linked() -> bool:  # else the code entered finds no link (a CI flake)
        _, state = await floor.get("/api/state")
        return bool(state["links"]["payout"]["up"])

    await eventually(payout_linked, "the terminal never linked to the payout service", 20)
    simulator = FloorSimulator(
        FloorConfig(
            tables=[],
            payout_target=floor.payout.grpc_address,
            terminal_urls={TABLE: floor.url},
            supervisor_delay=0.3,
        )
    )
    parts = [
        asyncio.create_task(simulator.staff.screen_dealer(TABLE, floor.url)),
        asyncio.create_task(simulator.staff.supervisor()),
    ]
    try:
        await eventually(
            lambda: simulator.stats.payouts_paid >= 1, "the simulated dealer never paid", 30
        )
    finally:
        simulator.stop()
        for part in parts:
            part.cancel()
        await asyncio.gather(*parts, return_exceptions=True)
    assert simulator.stats.approvals == 1
    assert await paid_entries(floor.payout, large.award_id, 3) == 1
    async with grpc_channel(floor.payout.grpc_address) as stub:
        listing = await stub.ListPayouts(payout_pb2.ListPayoutsRequest())
    [payout] = [p for p in listing.payouts if p.award_id == large.award_id]
    assert [t.by for t in payout.history if t.state == payout_pb2.PAYOUT_STATE_APPROVED] == [
        "local"
    ]


def envy_floor_awards() -> list[pot_pb2.Award]:
    """The awards the real engine gives, in its order (V3), for two tables of a group whose
    royal flush pays a linked envy bonus (V2) and whose straight flush an envy bonus at its own
    table (V1): DRW-1's royal flush (seat 1) while CAR-1's round is locked, then CAR-1's round
    (a full house at seat 2, a straight flush at seat 3)."""
    data = leveled(
        {
            "STRAIGHT_FLUSH": {"level": "sf", "envy": {"amount": 300}},
            "ROYAL_FLUSH": {"envy": {"amount": 1_000, "level": "sf", "linked": True}},
        }
    )
    group = open_group(data, {"main": 100_000, "sf": 30_000}, ("DRW-1", TABLE))
    group.lock_round("DRW-1", "R9", {1: 1000, 2: 1000})
    group.lock_round(TABLE, "R1", {1: 1000, 2: 1000, 3: 1000})
    events = group.resolve_round("DRW-1", "R9", {1: ROYAL_S, 2: NOTHING})
    events += group.resolve_round(TABLE, "R1", {1: NOTHING_2, 2: FULL_3_4, 3: SF_5_9_C})
    return [award_from_dict(e.to_dict()) for e in events if isinstance(e, PrizeAwarded)]


async def test_V1_V2_V3_the_terminal_lists_the_winners_and_envy_bonuses_in_payment_order(
    floor: Floor, artifacts: Path
) -> None:
    """V1-V3, S5: CAR-1's screen lists, in the order the engine paid them, the linked envy bonus
    DRW-1's royal flush earned its three seats (V2: paid at CAR-1, so on CAR-1's screen), then
    its own round's full house, the straight flush's envy bonus to seats 1 and 2 (V3: before the
    percentage) and the straight flush; each by its Spanish name. DRW-1's own prizes are not on
    CAR-1's screen."""
    awards = envy_floor_awards()
    here = [a for a in awards if a.table_id == TABLE]
    assert [a.table_id for a in awards].count("DRW-1") == 2  # its envy to seat 2 and its royal
    await locked_round(floor.device, "R1", {1: 1, 2: 1, 3: 1})
    await publish(floor.payout, *awards)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1280, "height": 720})
        await page.goto(floor.url)
        await page.wait_for_selector(f"tr[data-award='{here[-1].award_id}']")
        shown = await page.eval_on_selector_all(
            "#prizes tr",
            "rows => rows.map(r => [r.dataset.award, r.cells[1].textContent,"
            " r.cells[2].firstChild.textContent])",  # the prize's name, above its level and hit
        )
        assert [award for award, _, _ in shown] == [a.award_id for a in here]
        assert [(int(seat), name) for _, seat, name in shown] == [
            (1, "ENVIDIA: ESCALERA REAL"),
            (2, "ENVIDIA: ESCALERA REAL"),
            (3, "ENVIDIA: ESCALERA REAL"),
            (2, "FULL"),
            (1, "ENVIDIA: ESCALERA DE COLOR"),
            (2, "ENVIDIA: ESCALERA DE COLOR"),
            (3, "ESCALERA DE COLOR"),
        ]
        await page.screenshot(path=str(artifacts / "terminal-envy.png"))
        await assert_spanish(page, "a winner and envy bonuses to pay", (*IDENTIFIERS, "R1"))


# The levels of envy_floor_awards' group (royal, sf) and one more, as its pot updates name them.
TERMINAL_LEVELS = [
    pot_pb2.LevelValue(name="royal", label="Escalera real", sign_value=1_000_000, pot="main"),
    pot_pb2.LevelValue(name="sf", label="Escalera de color", sign_value=120_540, pot="sf"),
    pot_pb2.LevelValue(name="quads", label="Póker", sign_value=30_000, pot="quads"),
]
PRIZE_TEST_IDS = "ids => ids.map(b => b.dataset.testid)"


async def test_L4_V1_the_pozo_shows_every_level_and_a_seat_paid_twice_has_unique_buttons(
    floor: Floor, artifacts: Path
) -> None:
    """Issue 37 item 2 (L4, V1, V2, S5): a one-level pot shows one amount; once the group's
    updates carry levels, the terminal's "Pozo" shows the main level's label and amount and every
    other level's. Each prize names its level and an envy bonus the hit that earned it, as the
    payout service wrote them (Payout.level, envy_of). A seat paid three times (two envy bonuses
    and its full house) has three "Pagado" buttons with three test ids, the seat's first
    ``paid-2``, then ``paid-2-2``, ``paid-2-3``; pressing ``paid-2-2`` pays the full house, once."""
    assert floor.heartbeat is not None
    awards = envy_floor_awards()
    here = [a for a in awards if a.table_id == TABLE]
    await locked_round(floor.device, "R1", {1: 1, 2: 1, 3: 1})
    await publish(floor.payout, *awards)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1280, "height": 760})
        await page.goto(floor.url)
        await page.wait_for_selector(f"tr[data-award='{here[-1].award_id}']")
        assert await page.evaluate("document.body.classList.contains('has-levels')") is False
        assert await page.get_by_test_id("main-level").text_content() == ""

        floor.heartbeat.levels = TERMINAL_LEVELS
        await page.wait_for_function("document.body.classList.contains('has-levels')")
        main = page.get_by_test_id("main-level")
        assert (await main.text_content(), await main.get_attribute("data-level")) == (
            "Escalera real",
            "royal",
        )
        assert await page.get_attribute("[data-testid=pot]", "data-amount") == "1000000"
        levels = page.get_by_test_id("level")
        assert await levels.count() == 2
        for n, level in enumerate(TERMINAL_LEVELS[1:]):
            row = levels.nth(n)
            assert await row.get_attribute("data-level") == level.name
            assert await row.get_attribute("data-amount") == str(level.sign_value)
            assert await row.locator(".label").text_content() == level.label
            assert f"${level.sign_value:,}".replace(",", ".") in await row.inner_text()

        shown = await page.eval_on_selector_all(
            "#prizes tr",
            "rows => rows.map(r => [r.dataset.award, r.dataset.level, r.cells[2].innerText])",
        )
        assert [award for award, _, _ in shown] == [a.award_id for a in here]  # S5
        assert [level for _, level, _ in shown] == [a.level for a in here]
        names = [" / ".join(text.split("\n")) for _, _, text in shown]
        assert names == [  # the royal's envy bonus is paid from the sf level (its "level")
            "ENVIDIA: ESCALERA REAL / nivel Escalera de color / por la mesa DRW-1, posición 1",
            "ENVIDIA: ESCALERA REAL / nivel Escalera de color / por la mesa DRW-1, posición 1",
            "ENVIDIA: ESCALERA REAL / nivel Escalera de color / por la mesa DRW-1, posición 1",
            "FULL / nivel Escalera real",
            "ENVIDIA: ESCALERA DE COLOR / nivel Escalera de color / por la posición 3",
            "ENVIDIA: ESCALERA DE COLOR / nivel Escalera de color / por la posición 3",
            "ESCALERA DE COLOR / nivel Escalera de color",
        ]
        buttons = await page.eval_on_selector_all("#prizes button", PRIZE_TEST_IDS)
        assert len(buttons) == len(set(buttons)) == len(here)  # unique however often a seat wins
        assert buttons == [  # seats 1, 2, 3, 2, 1, 2, 3 in payment order
            "paid-1", "paid-2", "paid-3", "paid-2-2", "paid-1-2", "paid-2-3", "paid-3-2"
        ]  # fmt: skip
        full = next(a for a in here if a.prize == "FULL_HOUSE")
        assert await page.get_attribute("[data-testid=paid-2-2]", "data-award") == full.award_id
        await page.screenshot(path=str(artifacts / "terminal-levels.png"))
        await assert_spanish(page, "every level and a seat paid three times", (*IDENTIFIERS, "R1"))

        await page.click("[data-testid=paid-2-2]")
        await page.wait_for_function(ANSWER_STARTS.format("Pagado"))
        await page.wait_for_selector(f"tr[data-award='{full.award_id}']", state="detached")
        assert await page.get_by_test_id("answer").get_attribute("data-award") == full.award_id
        buttons = await page.eval_on_selector_all("#prizes button", PRIZE_TEST_IDS)
        assert buttons == ["paid-1", "paid-2", "paid-3", "paid-1-2", "paid-2-2", "paid-3-2"]
    assert await paid_entries(floor.payout, full.award_id, len(awards) + 1) == 1
    async with grpc_channel(floor.payout.grpc_address) as stub:
        listing = await stub.ListPayouts(payout_pb2.ListPayoutsRequest())
    written = {p.award_id: (p.level, p.envy_of) for p in listing.payouts}
    assert written == {a.award_id: (a.level, a.envy_of) for a in awards}  # as the pot awarded
