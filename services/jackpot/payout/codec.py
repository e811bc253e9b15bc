"""Payouts between the pure domain form and the protobuf contract (payout.proto).

A payout carries its award's level (L4) and, for an envy bonus, the hit that earned it (V1,
V2): ``payout_for_award`` copies them, and a payout written before they existed reads with no
level and no hit.
"""

from __future__ import annotations

from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.events import EnvyHit
from jackpot.domain.payout import Payout, Transition, WalletRound, order_payout
from jackpot.platform.codec import (
    payout_ledger_type,
    payout_state_from_proto,
    payout_state_to_proto,
    timestamp_ns,
)
from jackpot.v1 import payout_pb2, pot_pb2


def to_proto(payout: Payout) -> payout_pb2.Payout:
    message = payout_pb2.Payout(
        award_id=payout.award_id,
        pot_group_id=payout.pot_group_id,
        table_id=payout.table_id,
        round_id=payout.round_id,
        seat=payout.seat,
        prize=payout.prize,
        amount=payout.amount,
        cards=list(payout.cards),
        state=payout_state_to_proto(payout.state),
        order=payout.order,
        level=payout.level,
        player=payout.player,
    )
    if payout.envy_of is not None:
        table_id, round_id, seat = payout.envy_of
        message.envy_of.CopyFrom(pot_pb2.EnvyHit(table_id=table_id, round_id=round_id, seat=seat))
    for step in payout.history:
        message.history.add(
            state=payout_state_to_proto(step.state),
            by=step.by,
            reason=step.reason,
            at=timestamp_ns(step.at_ns),
        )
    return message


def wallet_round_to_proto(summary: WalletRound) -> payout_pb2.WalletRound:
    """A studio round's prizes to wallets, counted (O9), for its dealer's terminal."""
    return payout_pb2.WalletRound(
        round_id=summary.round_id,
        prize=summary.prize,
        winners=summary.winners,
        total=summary.total,
        paid=summary.paid,
        paid_total=summary.paid_total,
        awaiting_approval=summary.awaiting_approval,
        voided=summary.voided,
    )


def page_token(last: Payout) -> str:
    """ListPayouts' token for the page after ``last``: its place in payment order (S5)."""
    return f"{last.order}/{last.award_id}"


def page_after(token: str) -> tuple[int, str] | None:
    """The place a ListPayouts page token names (None for ""); MALFORMED if it names none."""
    if not token:
        return None
    order, _, award_id = token.partition("/")
    if not (order.isdigit() and award_id):
        raise DomainError(Reason.MALFORMED, f"page_token {token!r} is not one ListPayouts gave")
    return int(order), award_id


def from_proto(message: payout_pb2.Payout) -> Payout:
    return Payout(
        award_id=message.award_id,
        pot_group_id=message.pot_group_id,
        table_id=message.table_id,
        round_id=message.round_id,
        seat=message.seat,
        prize=message.prize,
        amount=message.amount,
        cards=tuple(message.cards),
        order=message.order,
        history=tuple(
            Transition(
                payout_state_from_proto(t.state),
                t.by,
                t.at.ToNanoseconds(),
                t.reason,
            )
            for t in message.history
        ),
        level=message.level,
        envy_of=envy_hit(message.envy_of) if message.HasField("envy_of") else None,
        player=message.player,
    )


def envy_hit(hit: pot_pb2.EnvyHit) -> EnvyHit:
    """The (table, round, seat) of the hit an envy bonus is paid for (V1, V2)."""
    return (hit.table_id, hit.round_id, hit.seat)


def ledger_entry(payout: Payout) -> pot_pb2.LedgerEntry:
    """The latest transition as a ledger entry: who, when, no money moved (it moved at award)."""
    step = payout.history[-1]
    at = timestamp_ns(step.at_ns)
    entry = pot_pb2.LedgerEntry(
        entry_id=f"payout:{payout.award_id}:{len(payout.history) - 1}",
        pot_group_id=payout.pot_group_id,
        ledger_sequence=0,
        type=payout_ledger_type(step.state),
        table_id=payout.table_id,
        round_id=payout.round_id,
        seat=payout.seat,
        prize=payout.prize,
        amount=payout.amount,
        changed_by=step.by,
        reason=step.reason,
        source_event_id=payout.award_id,
        occurred_at=at,
        recorded_at=at,
    )
    return entry


def payout_for_award(
    award: pot_pb2.Award, order: int, approval_threshold: int, at_ns: int
) -> Payout:
    """The payout a new award gets (``order_payout``), with the award's level (L4), envy hit
    (V1, V2) and a studio prize's player (O1): the payout service's, and the history bench's
    synthesis of it. ``approval_threshold``: the one for its kind (land or studio)."""
    return order_payout(
        award_id=award.award_id,
        pot_group_id=award.pot_group_id,
        table_id=award.table_id,
        round_id=award.round_id,
        seat=award.seat,
        prize=award.prize,
        amount=award.amount,
        cards=tuple(award.cards),
        order=order,
        approval_threshold=approval_threshold,
        at_ns=at_ns,
        level=award.level,
        envy_of=envy_hit(award.envy_of) if award.HasField("envy_of") else None,
        player=award.player,
    )
