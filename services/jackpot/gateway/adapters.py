"""Per-game adapters: device protocol messages to the table state machine's inputs.

Every game speaks the same device protocol; what differs is which events make sense (Draw Poker
exchanges cards, Blackjack neither folds nor exchanges) and what a result holds. Adding a game is
adding one adapter to ``ADAPTERS`` (and its rules to ``jackpot.domain.cards.GAME_RULES``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from jackpot.domain.cards import Game
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.table_messages import (
    AddCredits,
    CancelBet,
    CashOut,
    DeviceInput,
    ExchangeCards,
    Fold,
    LampFault,
    LampRepaired,
    Lock,
    LockRound,
    OpenRound,
    PlaceBet,
    Results,
    SettleRound,
    VoidRound,
    one_per_seat,
)
from jackpot.platform import codec
from jackpot.v1 import device_pb2


class GameAdapter(Protocol):
    game: Game

    def to_input(self, event: device_pb2.DeviceEvent) -> DeviceInput: ...


class PokerAdapter:
    """Shared by the games: every event of the protocol, minus those a game does not have."""

    def __init__(self, game: Game, unsupported: frozenset[str] = frozenset()) -> None:
        self.game = game
        self._unsupported = unsupported

    def to_input(self, event: device_pb2.DeviceEvent) -> DeviceInput:
        kind = event.WhichOneof("payload")
        if kind is None:
            raise DomainError(Reason.MALFORMED, f"event {event.sequence} has no payload")
        if kind in self._unsupported:
            raise DomainError(
                Reason.INVALID_STATE, f"{self.game.value} tables have no {kind.replace('_', ' ')}"
            )
        match kind:
            case "round_opened":
                if not event.round_id:
                    raise DomainError(Reason.MALFORMED, "round_opened needs a round_id")
                return OpenRound(event.round_id)
            case "credits_added":
                return AddCredits(event.credits_added.seat, event.credits_added.credits)
            case "credits_cashed_out":
                return CashOut(event.credits_cashed_out.seat, event.credits_cashed_out.credits)
            case "bet_placed":
                return PlaceBet(event.bet_placed.seat, event.bet_placed.credits)
            case "bet_cancelled":
                return CancelBet(event.bet_cancelled.seat)
            case "lamp_fault":
                return LampFault(event.lamp_fault.seat)
            case "lamp_repaired":
                return LampRepaired(event.lamp_repaired.seat)
            case "dealer_lock":
                return Lock()
            case "cards_exchanged":
                return ExchangeCards(event.cards_exchanged.seat)
            case "folded":
                return Fold(event.folded.seat)
            case "round_void":
                return VoidRound(event.round_void.reason)
            case "hand_results":
                hand_results = event.hand_results
                return Results(_hands(hand_results.hands), tuple(hand_results.community_cards))
            case "lock_round":
                if not event.round_id:
                    raise DomainError(Reason.MALFORMED, "lock_round needs a round_id")
                bets = one_per_seat(((b.seat, b.credits) for b in event.lock_round.bets), "bets")
                return LockRound(event.round_id, bets)
            case "settle_round":
                settle = event.settle_round
                forfeits = one_per_seat(
                    ((f.seat, codec.forfeit_reason_from_proto(f.reason)) for f in settle.forfeits),
                    "forfeits",
                )
                return SettleRound(forfeits, _hands(settle.hands), tuple(settle.community_cards))
        raise DomainError(Reason.MALFORMED, f"unknown device event {kind}")


def _hands(hands: Iterable[device_pb2.HandCards]) -> dict[int, tuple[str, ...]]:
    return one_per_seat(((hand.seat, tuple(hand.cards)) for hand in hands), "hands")


ADAPTERS: dict[Game, GameAdapter] = {
    Game.CARIBBEAN: PokerAdapter(Game.CARIBBEAN, frozenset({"cards_exchanged"})),
    Game.DRAW: PokerAdapter(Game.DRAW),
    Game.GO_POKER: PokerAdapter(Game.GO_POKER, frozenset({"cards_exchanged"})),
    Game.BLACKJACK: PokerAdapter(Game.BLACKJACK, frozenset({"cards_exchanged", "folded"})),
}
