"""The life of one prize after it is awarded (rules D3, S5): exactly one payout per award.

States: ORDERED (the dealer may pay), AWAITING_APPROVAL (at or above the approval threshold:
locked until a supervisor approves), APPROVED, PAID (the dealer's terminal confirmed), VOIDED
(a supervisor's decision, with a reason). Every transition records who and when. PAID and VOIDED
are final; nothing is ever paid twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum

from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import EnvyHit


class PayoutState(Enum):
    ORDERED = "ORDERED"
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    APPROVED = "APPROVED"
    PAID = "PAID"
    VOIDED = "VOIDED"


PAYABLE = frozenset({PayoutState.ORDERED, PayoutState.APPROVED})
OPEN = frozenset({PayoutState.ORDERED, PayoutState.AWAITING_APPROVAL, PayoutState.APPROVED})


@dataclass(frozen=True, slots=True)
class Transition:
    state: PayoutState
    by: str
    at_ns: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Payout:
    award_id: str
    pot_group_id: str
    table_id: str
    round_id: str
    seat: int
    prize: str
    amount: int  # whole pesos
    cards: tuple[str, ...]
    order: int  # payment order (S5): the order the pot awarded the prizes
    history: tuple[Transition, ...]
    level: str = ""  # L4: the level that pays it ("" in a one-level group, the mystery prize)
    envy_of: EnvyHit | None = None  # V1, V2: the hit an envy bonus is paid for
    player: str = ""  # O1: a studio prize's player, whose wallet is credited

    @property
    def to_wallet(self) -> bool:
        """A studio prize: paid by a credit to the player's wallet, not at a terminal."""
        return bool(self.player)

    @property
    def state(self) -> PayoutState:
        return self.history[-1].state

    @property
    def ordered_at_ns(self) -> int:
        return self.history[0].at_ns


def order_payout(
    *,
    award_id: str,
    pot_group_id: str,
    table_id: str,
    round_id: str,
    seat: int,
    prize: str,
    amount: int,
    cards: tuple[str, ...],
    order: int,
    approval_threshold: int,
    at_ns: int,
    level: str = "",
    envy_of: EnvyHit | None = None,
    player: str = "",
) -> Payout:
    """The payout for a new award; large prizes wait for a supervisor. It names the level that
    pays the prize (L4) and, for an envy bonus, the hit that earned it (V1, V2), as its award."""
    if amount < 0:
        raise DomainError(Reason.MALFORMED, f"award {award_id} has a negative amount {amount}")
    state = PayoutState.AWAITING_APPROVAL if amount >= approval_threshold else PayoutState.ORDERED
    return Payout(
        award_id,
        pot_group_id,
        table_id,
        round_id,
        seat,
        prize,
        amount,
        cards,
        order,
        (Transition(state, "payout-service", at_ns),),
        level,
        envy_of,
        player,
    )


def _move(payout: Payout, state: PayoutState, by: str, at_ns: int, reason: str = "") -> Payout:
    return replace(payout, history=(*payout.history, Transition(state, by, at_ns, reason)))


def approve(payout: Payout, supervisor: str, at_ns: int, note: str = "") -> Payout:
    if not supervisor:
        raise DomainError(Reason.NOT_AUTHENTICATED, "an approval needs the supervisor's name")
    if payout.state is not PayoutState.AWAITING_APPROVAL:
        raise DomainError(
            Reason.INVALID_STATE,
            f"payout {payout.award_id} is {payout.state.value}, not awaiting approval",
        )
    return _move(payout, PayoutState.APPROVED, supervisor, at_ns, note)


def pay(payout: Payout, dealer: str, at_ns: int) -> Payout:
    """The terminal confirmed the payment; only an ordered or approved payout can be paid."""
    if payout.state not in PAYABLE:
        raise DomainError(
            Reason.INVALID_STATE,
            f"payout {payout.award_id} is {payout.state.value}: it cannot be paid",
        )
    return _move(payout, PayoutState.PAID, dealer or "dealer-terminal", at_ns)


def pay_at_table(payout: Payout, table_id: str, dealer: str, at_ns: int) -> Payout:
    """A dealer terminal of ``table_id`` confirmed the payment: only of its own table's prize,
    never of a studio prize (O9: that one is paid to the player's wallet)."""
    if payout.to_wallet:
        raise DomainError(
            Reason.INVALID_STATE,
            f"award {payout.award_id} is a studio prize, paid to the player's wallet",
        )
    if payout.table_id != table_id:
        raise DomainError(
            Reason.TABLE_MISMATCH,
            f"award {payout.award_id} is paid at {payout.table_id}, not at {table_id}",
        )
    return pay(payout, dealer, at_ns)


def pay_to_wallet(payout: Payout, by: str, at_ns: int) -> Payout:
    """The player's wallet confirmed the credit of a studio prize (O9); ``by`` names it."""
    if not payout.to_wallet:
        raise DomainError(
            Reason.INVALID_STATE, f"award {payout.award_id} is paid at its table, not a wallet"
        )
    return pay(payout, by, at_ns)


def void(payout: Payout, supervisor: str, reason: str, at_ns: int) -> Payout:
    if not supervisor or not reason:
        raise DomainError(Reason.INVALID_STATE, "a void needs the supervisor's name and a reason")
    if payout.state not in OPEN:
        raise DomainError(
            Reason.INVALID_STATE,
            f"payout {payout.award_id} is {payout.state.value}: it cannot be voided",
        )
    return _move(payout, PayoutState.VOIDED, supervisor, at_ns, reason)


@dataclass(frozen=True, slots=True)
class WalletRound:
    """A studio round's prizes as its dealer's terminal shows them (O9): counted, never listed
    one by one (a round may have thousands of winners, all paid to wallets)."""

    round_id: str
    prize: str  # the round's prize (every bet held the one hand, O2); the first paid, if several
    winners: int
    total: int  # whole pesos
    paid: int  # credited by the players' wallets
    paid_total: int
    awaiting_approval: int  # at or above the studio approval threshold, waiting for a supervisor
    voided: int
    order: int  # its first prize's payment order (S5), to list the rounds in order


def payment_order(payout: Payout) -> tuple[int, str]:
    """Rule S5's order of payouts: by their order, then their award id."""
    return payout.order, payout.award_id


def wallet_rounds(payouts: Iterable[Payout]) -> list[WalletRound]:
    """The studio prizes among ``payouts`` by round, in payment order (S5)."""
    rounds: dict[str, list[Payout]] = {}
    for payout in payouts:
        if payout.to_wallet:
            rounds.setdefault(payout.round_id, []).append(payout)
    summaries = []
    for round_id, prizes in rounds.items():
        prizes.sort(key=payment_order)
        paid = [p for p in prizes if p.state is PayoutState.PAID]
        summaries.append(
            WalletRound(
                round_id=round_id,
                prize=prizes[0].prize,
                winners=len(prizes),
                total=sum(p.amount for p in prizes),
                paid=len(paid),
                paid_total=sum(p.amount for p in paid),
                awaiting_approval=sum(p.state is PayoutState.AWAITING_APPROVAL for p in prizes),
                voided=sum(p.state is PayoutState.VOIDED for p in prizes),
                order=prizes[0].order,
            )
        )
    return sorted(summaries, key=lambda r: (r.order, r.round_id))
