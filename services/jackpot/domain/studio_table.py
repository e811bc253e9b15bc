"""A studio table as the gateway keeps it for the operator's game platform: one round at a time,
its bets sent in chunks and each answered, the lock, the players' folds, the one shared hand, a
void before the lock (rules O1, O2, O5, E1, C1; docs/rules.md "Studio tables").

Pure, like :class:`~jackpot.domain.table.Table` for a land table, and saying what it causes in the
same facts (:mod:`jackpot.domain.table_messages`), so the gateway publishes a studio round to the
pot exactly as a land round. What differs is the input: the platform names each bet (``bet_id``)
and each chunk of bets (``chunk_id``), and a chunk sent again is recognised and answered as it
was the first time, so a platform that did not hear an answer sends it again and loses nothing.
A bet is refused on its own (unknown seat, over the limits, a seat that already bet, after the
lock, the progressive closed) and the rest of its chunk stands.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jackpot.domain.cards import CARD_CODES
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.table import Limits, Phase
from jackpot.domain.table_messages import (
    Fact,
    RoundLockedFact,
    RoundResultFact,
    RoundVoidedFact,
    SeatForfeitedFact,
)

MAX_CHUNK_BETS = 2_000  # a chunk's bets (its answers fit one gRPC message and one spool write)
CHUNKS_REMEMBERED = 64  # per round, beyond the bets themselves (a chunk id's fingerprint)


@dataclass(frozen=True, slots=True)
class StudioBet:
    """One player's progressive bet as the platform sends it: its id, seat, whole pesos and the
    player's account (whose wallet a prize of the seat is paid to)."""

    bet_id: str
    seat: int
    pesos: int
    player: str = ""


@dataclass(frozen=True, slots=True)
class BetAnswer:
    """What became of one bet: accepted when ``reason`` is None."""

    bet_id: str
    seat: int
    reason: Reason | None = None
    detail: str = ""


@dataclass(slots=True)
class StudioTable:
    """One studio table's current round (O1: seats 1 to ``seats``)."""

    table_id: str
    seats: int
    limits: Limits
    progressive_open: bool = True  # D5, as at a land table
    phase: Phase = Phase.IDLE
    round_id: str = ""
    last_round_id: str = ""
    bets: dict[int, StudioBet] = field(default_factory=dict)  # seat -> its bet this round
    folded: set[int] = field(default_factory=set)
    # chunk id -> (fingerprint, answers): a chunk sent again gets the same answers
    chunks: dict[str, tuple[str, tuple[BetAnswer, ...]]] = field(default_factory=dict)
    # how the last round ended, ("deal", *cards) or ("void", reason): a resend of it is known
    settled_by: tuple[str, ...] = ()
    published: int = 0  # the number of the table's last event published for the pot

    # --------------------------------------------------------------------------- commands

    def open_round(self, round_id: str) -> bool:
        """Open ``round_id``; False when it is already open or locked (a resend)."""
        if self.phase is not Phase.IDLE and round_id == self.round_id:
            return False
        if not round_id or round_id == self.last_round_id:
            raise DomainError(Reason.INVALID_STATE, f"round {round_id!r} cannot open again")
        self._require(Phase.IDLE, Reason.INVALID_STATE, f"open round {round_id}")
        self.phase, self.round_id = Phase.BETTING, round_id
        self.bets, self.folded, self.chunks = {}, set(), {}
        return True

    def place_bets(
        self, round_id: str, chunk_id: str, bets: Sequence[StudioBet]
    ) -> tuple[tuple[BetAnswer, ...], bool]:
        """Judge each bet of a chunk on its own; (the answers, whether it was a resend). A chunk
        sent again is answered as the first time, after the lock too."""
        fingerprint = _fingerprint(bets)
        sent = self.chunks.get(chunk_id) if round_id == self.round_id else None
        if sent is not None and sent[0] == fingerprint:
            return sent[1], True
        self._check_round(round_id)
        if not chunk_id or not bets or len(bets) > MAX_CHUNK_BETS:
            raise DomainError(
                Reason.MALFORMED if len(bets) <= MAX_CHUNK_BETS else Reason.TOO_LARGE,
                f"a chunk needs an id and 1 to {MAX_CHUNK_BETS} bets; got {len(bets)}",
            )
        if sent is not None:
            raise DomainError(
                Reason.SEQUENCE_REPLAYED,
                f"chunk {chunk_id} of round {round_id} was sent before with other bets",
            )
        answers = tuple(self._bet(bet) for bet in bets)
        self.chunks[chunk_id] = (fingerprint, answers)
        while len(self.chunks) > CHUNKS_REMEMBERED:
            del self.chunks[next(iter(self.chunks))]
        return answers, False

    def lock(self, round_id: str) -> list[Fact]:
        """C1: the lock collects every accepted bet; [] for a resend of the lock."""
        if self.phase is Phase.LOCKED and round_id == self.round_id:
            return []
        self._check_round(round_id)
        self.phase = Phase.LOCKED
        ordered = sorted(self.bets.items())
        bets = tuple((seat, bet.pesos) for seat, bet in ordered)
        players = tuple((seat, bet.player) for seat, bet in ordered)
        return [RoundLockedFact(self.round_id, bets, players)]

    def fold(self, round_id: str, seats: Iterable[int]) -> tuple[list[Fact], list[BetAnswer]]:
        """O5, E3: players who folded after the lock; each seat answered on its own (a seat
        folded already is accepted again without a second fact)."""
        self._require_locked(round_id, "fold")
        facts: list[Fact] = []
        answers = []
        for seat in seats:
            bet = self.bets.get(seat)
            if bet is None:
                answers.append(BetAnswer("", seat, Reason.NO_BET, f"seat {seat} has no bet"))
                continue
            if seat not in self.folded:
                self.folded.add(seat)
                facts.append(SeatForfeitedFact(self.round_id, seat, "FOLD"))
            answers.append(BetAnswer(bet.bet_id, seat))
        return facts, answers

    def deal(self, round_id: str, shared_hand: Sequence[str]) -> list[Fact]:
        """O2: the one hand every bet is judged on; the round is settled. Refused whole (and
        nothing changes) for a hand that is not five cards of one deck; [] for a resend."""
        if self._resent(round_id, ("deal", *shared_hand)):
            return []
        self._require_locked(round_id, "deal the shared hand")
        unknown = [card for card in shared_hand if card not in CARD_CODES]
        if unknown:
            raise DomainError(Reason.INVALID_CARD, f"{unknown[0]!r} in the shared hand")
        if len(shared_hand) != 5:
            raise DomainError(
                Reason.WRONG_CARD_COUNT, f"the shared hand has {len(shared_hand)} cards, not 5"
            )
        if len(set(shared_hand)) != 5:
            twice = next(card for card in shared_hand if list(shared_hand).count(card) > 1)
            raise DomainError(Reason.DUPLICATE_CARD, f"card {twice} twice in the shared hand")
        fact = RoundResultFact(self.round_id, (), (), tuple(shared_hand))
        self._settle(("deal", *shared_hand))
        return [fact]

    def void(self, round_id: str, reason: str) -> list[Fact]:
        """C1: a round voided before the lock; its bets are never collected. [] for a resend."""
        if self._resent(round_id, ("void", reason)):
            return []
        if self.phase is Phase.LOCKED and round_id == self.round_id:
            raise DomainError(
                Reason.INVALID_STATE,
                f"round {round_id} is locked: its bets are collected and cannot be voided (C1)",
            )
        self._check_round(round_id)
        refunds = tuple((seat, bet.pesos) for seat, bet in sorted(self.bets.items()))
        fact = RoundVoidedFact(self.round_id, reason, refunds)
        self._settle(("void", reason))
        return [fact]

    # ------------------------------------------------------------------------------ state

    def to_state(self) -> dict[str, Any]:
        """Everything, as JSON values (the gateway's spool keeps it with each write)."""
        return {
            "table_id": self.table_id,
            "seats": self.seats,
            "limits": [self.limits.min_bet, self.limits.max_bet, self.limits.credit_value],
            "progressive_open": self.progressive_open,
            "phase": self.phase.value,
            "round_id": self.round_id,
            "last_round_id": self.last_round_id,
            "bets": [[b.bet_id, b.seat, b.pesos, b.player] for b in self.bets.values()],
            "folded": sorted(self.folded),
            "chunks": [
                [chunk, fingerprint, [[a.bet_id, a.seat, _reason(a), a.detail] for a in answers]]
                for chunk, (fingerprint, answers) in self.chunks.items()
            ],
            "settled_by": list(self.settled_by),
            "published": self.published,
        }

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> StudioTable:
        bets = [StudioBet(str(b[0]), int(b[1]), int(b[2]), str(b[3])) for b in data["bets"]]
        return cls(
            data["table_id"],
            int(data["seats"]),
            Limits(*(int(v) for v in data["limits"])),
            bool(data["progressive_open"]),
            Phase(data["phase"]),
            data["round_id"],
            data["last_round_id"],
            {bet.seat: bet for bet in bets},
            {int(s) for s in data["folded"]},
            {
                chunk: (fingerprint, tuple(_answer(a) for a in answers))
                for chunk, fingerprint, answers in data["chunks"]
            },
            tuple(data["settled_by"]),
            int(data["published"]),
        )

    # ---------------------------------------------------------------------------- helpers

    def _bet(self, bet: StudioBet) -> BetAnswer:
        try:
            self._check_bet(bet)
        except DomainError as refused:
            return BetAnswer(bet.bet_id, bet.seat, refused.reason, refused.detail)
        self.bets[bet.seat] = bet
        return BetAnswer(bet.bet_id, bet.seat)

    def _check_bet(self, bet: StudioBet) -> None:
        """O1, E1, D5: a seat of the table, one bet per seat and round, whole credits within the
        group's limits, the progressive open."""
        if not self.progressive_open:
            raise DomainError(Reason.PROGRESSIVE_CLOSED, "the progressive is closed (D5)")
        if not bet.player:
            raise DomainError(Reason.MALFORMED, "a bet names the player whose wallet it is (O1)")
        if not 1 <= bet.seat <= self.seats:
            raise DomainError(
                Reason.SEAT_OUT_OF_RANGE, f"seat {bet.seat} is outside seats 1-{self.seats} (O1)"
            )
        placed = self.bets.get(bet.seat)
        if placed is not None:
            raise DomainError(
                Reason.INVALID_STATE, f"seat {bet.seat} already bet this round ({placed.bet_id})"
            )
        limits = self.limits
        if not limits.min_bet <= bet.pesos <= limits.max_bet or bet.pesos % limits.credit_value:
            raise DomainError(
                Reason.BET_OUT_OF_LIMITS,
                f"bet {bet.pesos} is outside {limits.min_bet}-{limits.max_bet} or not whole "
                f"credits of {limits.credit_value} (E1)",
            )

    def _check_round(self, round_id: str) -> None:
        if self.phase is Phase.LOCKED and round_id == self.round_id:
            raise DomainError(Reason.BET_AFTER_LOCK, f"round {round_id} is locked (C1)")
        self._require(Phase.BETTING, Reason.INVALID_STATE, f"round {round_id}")
        if round_id != self.round_id:
            raise DomainError(
                Reason.INVALID_STATE, f"round {round_id!r} is not the open round {self.round_id}"
            )

    def _require_locked(self, round_id: str, action: str) -> None:
        self._require(Phase.LOCKED, Reason.ROUND_NOT_LOCKED, action)
        if round_id != self.round_id:
            raise DomainError(
                Reason.INVALID_STATE, f"round {round_id!r} is not the locked round {self.round_id}"
            )

    def _require(self, phase: Phase, reason: Reason, action: str) -> None:
        if self.phase is not phase:
            raise DomainError(
                reason, f"studio table {self.table_id} cannot {action} while {self.phase.value}"
            )

    def _resent(self, round_id: str, settled_by: tuple[str, ...]) -> bool:
        """The last round ended this way already (a resend of its deal or void)."""
        return self.phase is Phase.IDLE and (round_id, settled_by) == (
            self.last_round_id,
            self.settled_by,
        )

    def _settle(self, settled_by: tuple[str, ...]) -> None:
        self.last_round_id, self.round_id, self.phase = self.round_id, "", Phase.IDLE
        self.bets, self.folded, self.chunks = {}, set(), {}
        self.settled_by = settled_by


def _fingerprint(bets: Sequence[StudioBet]) -> str:
    text = "\n".join(f"{b.bet_id}\t{b.seat}\t{b.pesos}" for b in bets)
    return hashlib.sha256(text.encode()).hexdigest()


def _reason(answer: BetAnswer) -> str | None:
    return None if answer.reason is None else answer.reason.value


def _answer(data: Sequence[Any]) -> BetAnswer:
    bet_id, seat, reason, detail = data
    return BetAnswer(str(bet_id), int(seat), None if reason is None else Reason(reason), detail)
