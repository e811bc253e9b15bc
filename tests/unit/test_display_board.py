"""The signs' state (rules D2, D5, M3) and the fan-out's coalescing (jackpot.display)."""

from __future__ import annotations

import asyncio
import random

from jackpot.display.board import Board, SignReading, Winner
from jackpot.display.fanout import Subscription
from jackpot.display.feed import apply_payout, pending_prize
from jackpot.display.grpc_api import to_proto
from jackpot.display.pending import PendingPrize, PendingRound
from jackpot.domain.money import MINOR_PER_PESO
from jackpot.v1 import payout_pb2

WINNER = Winner("T1", 3, "ROYAL_FLUSH", 1_234_567, ("AS", "KS", "QS", "JS", "TS"), "a1")


def update(board: Board, value: int, now: float, main: int | None = None) -> None:
    board.pot_update(SignReading("g", value, 100, 1000, 5000, main), now, 1_790_000_000.0)


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


def payout(award_id: str, state: int, order: int, group: str = "g") -> payout_pb2.Payout:
    return payout_pb2.Payout(
        award_id=award_id,
        pot_group_id=group,
        table_id="T1",
        seat=order,
        prize="ROYAL_FLUSH",
        amount=2_000_000 + order,
        state=state,  # type: ignore[arg-type]
        order=order,
    )


def test_D2_a_prize_awaiting_approval_is_pending_until_approved_paid_or_voided() -> None:
    """D2, the jackpot lock: every sign of the group shows the pending prizes in payment order
    (S5) next to the live amount; approval, payment or void takes each down."""
    board = Board(stale_after=100, winner_seconds=10)
    update(board, 500, now=0)
    awaiting = payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
    apply_payout(board, payout("b", awaiting, order=2))
    apply_payout(board, payout("a", awaiting, order=1))
    apply_payout(board, payout("c", payout_pb2.PAYOUT_STATE_ORDERED, order=3))  # not locked
    shown = board.signs["g"].to_json()
    assert [(p["award_id"], p["seat"], p["amount"]) for p in shown["pending"]] == [
        ("a", 1, 2_000_001),
        ("b", 2, 2_000_002),
    ]
    assert (shown["amount"], shown["live"]) == (500, True)
    assert [p.table_id for p in to_proto(board.signs["g"]).pending] == ["T1", "T1"]
    apply_payout(board, payout("a", payout_pb2.PAYOUT_STATE_APPROVED, order=1))
    apply_payout(board, payout("b", payout_pb2.PAYOUT_STATE_VOIDED, order=2))
    assert board.signs["g"].pending == ()
    apply_payout(board, payout("d", awaiting, order=4))
    apply_payout(board, payout("d", payout_pb2.PAYOUT_STATE_PAID, order=4))
    assert board.signs["g"].pending == ()


def test_D2_S5_O9_pending_prizes_listed_and_counted_through_any_sequence_of_records() -> None:
    """D2, S5, O9: land prizes and a studio table's prizes awaiting approval, their approvals,
    payments, replays, moves between groups, tombstones and a restore, in random order: every
    sign lists exactly the land prizes whose latest record awaits approval, in payment order,
    and counts the studio ones by round (how many, their total), as a plain recomputation from
    every latest record says."""
    board = Board(stale_after=100, winner_seconds=10)
    rng = random.Random(39)
    latest: dict[str, payout_pb2.Payout] = {}
    states = [
        payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL,
        payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL,
        payout_pb2.PAYOUT_STATE_APPROVED,
        payout_pb2.PAYOUT_STATE_PAID,
        payout_pb2.PAYOUT_STATE_ORDERED,
    ]
    for step in range(8_000):
        number = rng.randrange(3_000)
        award = f"a{number:04}"
        if step == 4_000:  # a restore that no longer finds a fifth (their tombstones compacted)
            for gone in rng.sample(sorted(latest), len(latest) // 5):
                del latest[gone]
            board.replace_pending(_pending_by_group(latest))
            continue
        if rng.random() < 0.05 and award in latest:
            board.settled(award)  # the open topic's tombstone
            del latest[award]
            continue
        record = payout(award, rng.choice(states), rng.randrange(500), rng.choice("gh"))
        if number % 3:  # two in three are a studio table's, in one of its 200 rounds
            record.table_id, record.round_id = "S-1", f"R{number % 600 // 3}"
            record.player = f"player-{number}"
        apply_payout(board, record)
        latest[award] = record
    expected = _pending_by_group(latest)
    listed = {g: tuple(p for p in prizes if not p.studio) for g, prizes in expected.items()}
    counted = {g: _counted([p for p in prizes if p.studio]) for g, prizes in expected.items()}
    assert sum(len(prizes) for prizes in listed.values()) > 200  # the judge sees a crowd
    assert sum(r.prizes for rounds in counted.values() for r in rounds) > 400
    for group in "gh":
        assert board.signs[group].pending == listed.get(group, ())
        assert board.signs[group].pending_rounds == counted.get(group, ())
    assert [p.to_json()["table_id"] for p in board.signs["g"].pending] == ["T1"] * len(listed["g"])


def _pending_by_group(latest: dict[str, payout_pb2.Payout]) -> dict[str, tuple[PendingPrize, ...]]:
    """The reference: each group's awaiting prizes sorted by (order, award id), from scratch."""
    groups: dict[str, list[PendingPrize]] = {}
    for record in latest.values():
        found = pending_prize(record)
        if found is not None and found[2]:
            groups.setdefault(found[0], []).append(found[1])
    return {
        group: tuple(sorted(prizes, key=lambda p: (p.order, p.award_id)))
        for group, prizes in groups.items()
    }


def _counted(prizes: list[PendingPrize]) -> tuple[PendingRound, ...]:
    """The reference: studio prizes counted by (table, round), in that order."""
    rounds: dict[tuple[str, str], list[int]] = {}
    for prize in prizes:
        rounds.setdefault((prize.table_id, prize.round_id), []).append(prize.amount)
    return tuple(PendingRound(t, r, len(a), sum(a)) for (t, r), a in sorted(rounds.items()))


def test_a_payout_without_a_group_or_with_a_negative_amount_changes_no_sign() -> None:
    board = Board(stale_after=100, winner_seconds=10)
    awaiting = payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
    apply_payout(board, payout("a", awaiting, order=1, group=""))
    negative = payout("b", awaiting, order=1)
    negative.amount = -5
    apply_payout(board, negative)
    assert board.signs == {}


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
        board.pot_update(SignReading("other", 5, 0, 1, 1), 0, 0)  # not watched: not woken
        update(board, 200, now=200)
        assert [s.amount for s in await subscription.next()] == [200]


def test_an_update_that_changes_only_the_time_heard_is_told_at_most_once_a_second() -> None:
    """Results, forfeits and heartbeats change only when the group was last heard from: told
    each time, they took the signs' rate limit from the updates that move the amount (issue 26).
    The time heard is still kept, and told within HEARD_REFRESH_SECONDS."""
    board = Board(stale_after=5, winner_seconds=10)
    heard: list[str] = []
    board.subscribe(heard.append)

    def at(wall: float, value: int = 500) -> None:
        board.pot_update(SignReading("g", value, 100, 1000, 5000), wall, wall)

    at(100.0)
    assert heard == ["g"]  # a new sign
    at(100.2)
    at(100.9)
    assert heard == ["g"]  # only the time moved, under a second after the last told
    assert board.signs["g"].updated_at == 100.9  # kept, and sent with the next push
    at(101.0, value=501)
    assert heard == ["g", "g"]  # the amount moved: told at once
    at(101.5, value=501)
    assert heard == ["g", "g"]
    at(102.0, value=501)
    assert heard == ["g", "g", "g"]  # a second since the last told: the time heard is told
    board.tick(110.0)  # stale (D5): a change that shows, told at once
    assert heard == ["g", "g", "g", "g"]
