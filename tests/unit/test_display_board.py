"""The signs' state (rules D2, D5, M3) and the fan-out's coalescing (jackpot.display)."""

from __future__ import annotations

import asyncio

from jackpot.display.board import Board, Winner
from jackpot.display.fanout import Subscription
from jackpot.domain.money import MINOR_PER_PESO

WINNER = Winner("T1", 3, "ROYAL_FLUSH", 1_234_567, ("AS", "KS", "QS", "JS", "TS"), "a1")


def update(board: Board, value: int, now: float, main: int | None = None) -> None:
    board.pot_update("g", value, main, 100, 1000, 5000, now, 1_790_000_000.0)


def test_M3_sign_never_shows_more_than_the_main_pot_holds() -> None:
    board = Board(stale_after=5, winner_seconds=10)
    update(board, 1001, now=0, main=1000 * MINOR_PER_PESO + MINOR_PER_PESO // 2)
    assert board.signs["g"].amount == 1000
    update(board, 999, now=1, main=1000 * MINOR_PER_PESO)
    assert board.signs["g"].amount == 999


def test_D5_stale_group_is_shown_closed_and_recovers() -> None:
    board = Board(stale_after=5, winner_seconds=10)
    update(board, 500, now=0)
    board.tick(4.9)
    assert board.signs["g"].live
    board.tick(5.1)
    sign = board.signs["g"]
    assert not sign.live
    assert "5 s" in sign.closed_reason
    assert board.stale_count() == 1
    update(board, 600, now=6)
    assert board.signs["g"].live
    assert board.signs["g"].amount == 600


def test_D2_sign_shows_the_pot_its_increment_the_limits_and_the_prize() -> None:
    """D2: a sign carries the main pot, its increment, the placard's minimum and maximum bet, and
    the prize to pay as soon as a winning hand is registered."""
    board = Board(stale_after=100, winner_seconds=10)
    update(board, 500, now=0)
    sign = board.signs["g"]
    assert (sign.amount, sign.increment, sign.min_bet, sign.max_bet) == (500, 100, 1000, 5000)
    assert sign.winner is None
    board.award("g", WINNER, now=1)
    shown = board.signs["g"].to_json()
    assert shown["winner"]["prize"] == "ROYAL_FLUSH"
    assert shown["winner"]["amount"] == 1_234_567
    assert (shown["winner"]["table_id"], shown["winner"]["seat"]) == ("T1", 3)
    assert (shown["amount"], shown["increment"]) == (500, 100)


def test_D2_winner_banner_stays_for_the_configured_time() -> None:
    board = Board(stale_after=100, winner_seconds=10)
    update(board, 500, now=0)
    board.award("g", WINNER, now=1)
    board.tick(10.9)
    assert board.signs["g"].winner == WINNER
    board.tick(11.0)
    assert board.signs["g"].winner is None


def test_listeners_hear_only_real_changes() -> None:
    board = Board(stale_after=100, winner_seconds=10)
    heard: list[str] = []
    board.subscribe(heard.append)
    update(board, 500, now=0)
    update(board, 500, now=0)  # identical: nothing to tell
    update(board, 501, now=1)
    assert heard == ["g", "g"]


async def test_fanout_sends_everything_first_then_changes_at_once_and_coalesces_under_load() -> (
    None
):
    board = Board(stale_after=100, winner_seconds=10)
    update(board, 1, now=0)
    with Subscription(board, ["g"], max_rate=5, burst=2) as subscription:
        first = await subscription.next()
        assert [s.amount for s in first] == [1]
        update(board, 2, now=2)  # idle: a change goes out at once (the bucket's second token)
        assert [s.amount for s in await subscription.next()] == [2]
        for value in range(3, 200):  # under load: only the latest is worth sending
            update(board, value, now=value)
        loop = asyncio.get_running_loop()
        started = loop.time()
        burst = await subscription.next()
        assert [s.amount for s in burst] == [199]
        assert loop.time() - started >= 0.15  # the bucket is empty: at most max_rate a second
        board.pot_update("other", 5, None, 0, 1, 1, 0, 0)  # not watched: not woken
        update(board, 200, now=200)
        assert [s.amount for s in await subscription.next()] == [200]
