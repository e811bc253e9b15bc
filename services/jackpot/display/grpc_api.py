"""``jackpot.v1.SignService``: a server stream per sign controller, each state the board's sign
as ``SignState`` (the amount, the levels, the winner, the pending prizes and a studio table's
locked rounds; a studio round's hit is its one banner, its winners counted and their total)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import grpc

from jackpot.display import metrics
from jackpot.display.board import Board, Sign, StudioRound, Winner
from jackpot.display.fanout import Subscription
from jackpot.domain.access import Action
from jackpot.platform.authz import Authorizer
from jackpot.platform.codec import timestamp_ns
from jackpot.platform.grpc_edge import Call, answered
from jackpot.platform.tracing import start_span_under, traceparent
from jackpot.v1 import common_pb2, display_pb2, display_pb2_grpc, pot_pb2

SERVICE_NAME = "jackpot.v1.SignService"
PUSH_SPAN = "display.push"  # a traced lock sent to a sign (jackpot.platform.tracing)


def to_proto(sign: Sign) -> display_pb2.SignState:
    """A sign as its controller receives it: the board's state, field for field (the studio
    rounds the board shows, already checked against their pots, M3, as on the web overlay)."""
    state = display_pb2.SignState(
        pot_group_id=sign.pot_group_id,
        amount=sign.amount,
        increment=sign.increment,
        min_bet=sign.min_bet,
        max_bet=sign.max_bet,
        live=sign.live,
        closed_reason=sign.closed_reason,
        pending=[
            display_pb2.PendingPrize(
                award_id=p.award_id,
                table_id=p.table_id,
                seat=p.seat,
                prize=p.prize,
                amount=p.amount,
            )
            for p in sign.pending
        ],
        levels=[
            display_pb2.SignLevel(
                name=level.name, label=level.label, amount=level.amount, increment=level.increment
            )
            for level in sign.levels
        ],
        studio_rounds=[studio_round_proto(studio) for studio in sign.studio],
        pending_rounds=[
            display_pb2.PendingRound(
                table_id=r.table_id, round_id=r.round_id, prizes=r.prizes, total=r.total
            )
            for r in sign.pending_rounds
        ],
    )
    if sign.updated_at:
        state.updated_at.CopyFrom(timestamp_ns(int(sign.updated_at * 1e9)))
    if sign.winner is not None:
        state.winner.CopyFrom(winner_proto(sign.winner))
    return state


def winner_proto(winner: Winner) -> display_pb2.Winner:
    """The banner's hit (D2), named by its level's label (L4), with the envy bonuses it earned
    the other seats (V1, V2); a studio round's banner with its winners counted and their total
    as the board counted them for the overlay (``Winner.counted``, O3, O4; 0 for a land hit)."""
    return display_pb2.Winner(
        table_id=winner.table_id,
        seat=winner.seat,
        prize=winner.prize,
        amount=winner.amount,
        cards=list(winner.cards),
        award_id=winner.award_id,
        level_label=winner.level_label,
        envy=[
            display_pb2.EnvyPrize(
                award_id=e.award_id,
                table_id=e.table_id,
                seat=e.seat,
                prize=e.prize,
                amount=e.amount,
            )
            for e in winner.envy
        ],
        round_id=winner.round_id,
        studio_winners=winner.studio_winners,
        studio_total=winner.studio_total,
    )


def studio_round_proto(studio: StudioRound) -> pot_pb2.StudioRoundShare:
    """A locked studio round's bets and each bet's part of the top prize (O3, O4, S3, S4)."""
    return pot_pb2.StudioRoundShare(
        table_id=studio.table_id,
        round_id=studio.round_id,
        bets=studio.bets,
        bet_total=studio.bet_total,
        prize=studio.prize,
        level=studio.level,
        multiple=studio.multiple,
        share=studio.share,
        lowest_seat=studio.lowest_seat,
        odd_pesos=studio.odd_pesos,
        cap_multiple=studio.cap_multiple,
    )


def pushed(trace: common_pb2.LockTrace, sent_ns: int) -> None:
    """A ``display.push`` span for a traced lock sent to a sign, from the display's read of its
    pot update until the send; the sign receives the push's context in the trace."""
    span = start_span_under(
        PUSH_SPAN, trace.traceparent, trace.display_received_unix_nanos or sent_ns
    )
    if span is not None:
        span.set_attribute("jackpot.table", trace.table_id)
        span.set_attribute("jackpot.round", trace.round_id)
        trace.traceparent = traceparent(span)
        span.end(end_time=sent_ns)


class SignServicer(display_pb2_grpc.SignServiceServicer):
    service_name = SERVICE_NAME

    def __init__(self, board: Board, max_rate: float, authorizer: Authorizer) -> None:
        self._board = board
        self._max_rate = max_rate
        self.authorizer = authorizer

    def register(self, server: grpc.aio.Server) -> None:
        display_pb2_grpc.add_SignServiceServicer_to_server(self, server)  # type: ignore[no-untyped-call]

    @answered
    async def WatchSigns(
        self, request: display_pb2.WatchSignsRequest, call: Call
    ) -> AsyncIterator[display_pb2.WatchSignsResponse]:
        await call.check(Action.WATCH_SIGNS, "WatchSigns")
        groups = list(request.pot_group_ids) or None
        with Subscription(self._board, groups, self._max_rate) as subscription:
            while True:
                for sign in await subscription.next():
                    metrics.UPDATES_SENT.labels("grpc").inc()
                    state = to_proto(sign)
                    traces = subscription.new_traces(sign)
                    if traces:
                        state.lock_traces.extend(traces)
                        sent_ns = time.time_ns()
                        for trace in state.lock_traces:
                            trace.display_sent_unix_nanos = sent_ns
                            pushed(trace, sent_ns)
                    yield display_pb2.WatchSignsResponse(sign=state)
