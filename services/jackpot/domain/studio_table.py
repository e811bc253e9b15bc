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

A round grows with every chunk, so the table is saved in two parts, and a command changes only
what it adds: the table's head (the round, its phase, how the last round ended, the counters: a
few hundred bytes, :meth:`StudioTable.head`) and the open round's entries, one per command that
added to it (a chunk's answers and the bets it accepted, or the seats that folded:
:class:`RoundEntry`). :meth:`StudioTable.mark` and :meth:`StudioTable.change_since` tell what a
command changed (the new head, the entries it added, the round that ended, whose entries are no
longer needed: :class:`StudioChange`); :meth:`StudioTable.rewind` undoes a change that could not
be saved; :meth:`StudioTable.restored` replays the entries on the head through the code the
commands run, so the table comes back exactly as it was.
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


@dataclass(frozen=True, slots=True)
class RoundEntry:
    """What one command added to the open round, saved as a row of its own: a chunk (its id,
    fingerprint and answers) and the bets it accepted, or the seats that folded. A round read
    from an older spool's whole state is saved as entries too (:meth:`StudioTable.saved`)."""

    chunk_id: str = ""  # "" when the entry holds no chunk to answer again
    fingerprint: str = ""
    answers: tuple[BetAnswer, ...] = ()
    accepted: tuple[StudioBet, ...] = ()
    folded: tuple[int, ...] = ()

    def to_row(self) -> dict[str, Any]:
        """As JSON values (the spool's row)."""
        return {
            "chunk_id": self.chunk_id,
            "fingerprint": self.fingerprint,
            "answers": [_answer_row(a) for a in self.answers],
            "accepted": [_bet_row(b) for b in self.accepted],
            "folded": list(self.folded),
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RoundEntry:
        return cls(
            str(row["chunk_id"]),
            str(row["fingerprint"]),
            tuple(_answer(a) for a in row["answers"]),
            tuple(_bet(b) for b in row["accepted"]),
            tuple(int(seat) for seat in row["folded"]),
        )


@dataclass(frozen=True, slots=True)
class StudioChange:
    """What a table's command changed, as the spool keeps it: the table's new head, the entries
    it added to the open round ``round_id`` (numbered from 1 in the round) and the round that
    ended ("" for none), whose entries are no longer needed."""

    head: dict[str, Any]
    round_id: str
    entries: tuple[tuple[int, RoundEntry], ...]
    ended: str = ""


@dataclass(frozen=True, slots=True)
class StudioMark:
    """A table before a command: its head, the round's collections themselves (a command adds
    to them or puts new ones in their place) and a copy of the chunks it remembers."""

    head: dict[str, Any]
    bets: dict[int, StudioBet]
    folded: set[int]
    chunks: dict[str, tuple[str, tuple[BetAnswer, ...]]]


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
    # the saved form's bookkeeping, not the round's: the open round's entries so far (an older
    # spool's round comes back in fewer), and those added since the last mark, numbered
    entries: int = field(default=0, compare=False)
    added: list[tuple[int, RoundEntry]] = field(default_factory=list, compare=False, repr=False)

    # --------------------------------------------------------------------------- commands

    def open_round(self, round_id: str) -> bool:
        """Open ``round_id``; False when it is already open or locked (a resend)."""
        if self.phase is not Phase.IDLE and round_id == self.round_id:
            return False
        if not round_id or round_id == self.last_round_id:
            raise DomainError(Reason.INVALID_STATE, f"round {round_id!r} cannot open again")
        self._require(Phase.IDLE, Reason.INVALID_STATE, f"open round {round_id}")
        self.phase, self.round_id = Phase.BETTING, round_id
        self._clear_round()
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
        accepted: dict[int, StudioBet] = {}
        answers = tuple(self._judge(bet, accepted) for bet in bets)
        self._add(RoundEntry(chunk_id, fingerprint, answers, tuple(accepted.values())))
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
        folded: dict[int, None] = {}  # the seats folding now, in order
        for seat in seats:
            bet = self.bets.get(seat)
            if bet is None:
                answers.append(BetAnswer("", seat, Reason.NO_BET, f"seat {seat} has no bet"))
                continue
            if seat not in self.folded and seat not in folded:
                folded[seat] = None
                facts.append(SeatForfeitedFact(self.round_id, seat, "FOLD"))
            answers.append(BetAnswer(bet.bet_id, seat))
        if folded:
            self._add(RoundEntry(folded=tuple(folded)))
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

    # ----------------------------------------------------------------------- what changed

    def mark(self) -> StudioMark:
        """The table before a command, for :meth:`change_since` and :meth:`rewind` (the
        entries added are counted from here)."""
        self.added = []
        return StudioMark(self.head(), self.bets, self.folded, dict(self.chunks))

    def change_since(self, mark: StudioMark) -> StudioChange | None:
        """What the commands since ``mark`` changed; None for nothing (a resend, a refusal)."""
        head = self.head()
        if head == mark.head and not self.added:
            return None
        before = mark.head["round_id"]
        ended = before if before and before != self.round_id else ""
        return StudioChange(head, self.round_id, tuple(self.added), ended)

    def rewind(self, mark: StudioMark) -> None:
        """Undo what the commands since ``mark`` changed (the spool could not keep it): the
        round's bets, folds and chunks, its phase and counters. The limits and whether the
        progressive is open stay as the pot group last said (E1, D5)."""
        for _, entry in reversed(self.added):
            for bet in entry.accepted:
                del mark.bets[bet.seat]
            mark.folded.difference_update(entry.folded)
        self.bets, self.folded, self.chunks = mark.bets, mark.folded, mark.chunks
        self._set_round(mark.head)
        self.added = []

    # ------------------------------------------------------------------------------ state

    def head(self) -> dict[str, Any]:
        """The table without its round's bets, folds and chunks, as JSON values: the spool's
        row of the table (each entry of the round is a row of its own)."""
        return {
            "table_id": self.table_id,
            "seats": self.seats,
            "limits": [self.limits.min_bet, self.limits.max_bet, self.limits.credit_value],
            "progressive_open": self.progressive_open,
            "phase": self.phase.value,
            "round_id": self.round_id,
            "last_round_id": self.last_round_id,
            "settled_by": list(self.settled_by),
            "published": self.published,
            "entries": self.entries,
        }

    def to_state(self) -> dict[str, Any]:
        """The whole table as JSON values: the head with every bet, fold and remembered chunk
        of the round (what the spool kept in the table's row before the round's entries)."""
        state = self.head()
        del state["entries"]
        state["bets"] = [_bet_row(bet) for bet in self.bets.values()]
        state["folded"] = sorted(self.folded)
        state["chunks"] = [
            [chunk, fingerprint, [_answer_row(a) for a in answers]]
            for chunk, (fingerprint, answers) in self.chunks.items()
        ]
        return state

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> StudioTable:
        """The table of a whole state (:meth:`to_state`)."""
        table = cls._of_head(data)
        table.bets = {bet.seat: bet for bet in (_bet(b) for b in data["bets"])}
        table.folded = {int(s) for s in data["folded"]}
        table.chunks = {
            chunk: (fingerprint, tuple(_answer(a) for a in answers))
            for chunk, fingerprint, answers in data["chunks"]
        }
        return table

    @classmethod
    def restored(
        cls, head: Mapping[str, Any], entries: Sequence[tuple[int, Mapping[str, Any]]]
    ) -> StudioTable:
        """The table saved as ``head`` and its open round's ``entries`` (number, row), replayed
        in order as their commands added them. ValueError unless they are the entries 1 to the
        head's count, every one."""
        table = cls._of_head(head)
        count = int(head["entries"])
        numbers = [number for number, _ in entries]
        if numbers != list(range(1, count + 1)):
            raise ValueError(
                f"studio table {table.table_id}: the {len(numbers)} entries of round "
                f"{table.round_id!r} are not the {count} its head counts, numbered from 1"
            )
        for _, row in entries:
            table._apply(RoundEntry.from_row(row))
        table.entries = count
        return table

    def saved(self) -> StudioChange:
        """The whole table as one change of its own making (an older spool's whole state is
        saved so): every bet and fold of the round in one entry, then each remembered chunk's
        answers, and the head counting them."""
        entries = []
        if self.bets or self.folded:
            entries.append(
                RoundEntry(accepted=tuple(self.bets.values()), folded=tuple(sorted(self.folded)))
            )
        entries.extend(
            RoundEntry(chunk, fp, answers) for chunk, (fp, answers) in self.chunks.items()
        )
        head = {**self.head(), "entries": len(entries)}
        return StudioChange(head, self.round_id, tuple(enumerate(entries, start=1)))

    # ---------------------------------------------------------------------------- helpers

    @classmethod
    def _of_head(cls, data: Mapping[str, Any]) -> StudioTable:
        """The table of a head (or a whole state), its round still empty."""
        table = cls(data["table_id"], int(data["seats"]), Limits(*(int(v) for v in data["limits"])))
        table.progressive_open = bool(data["progressive_open"])
        table._set_round(data)
        return table

    def _set_round(self, data: Mapping[str, Any]) -> None:
        """The round's phase and ids, how the last one ended and the counters, from a head."""
        self.phase, self.round_id = Phase(data["phase"]), data["round_id"]
        self.last_round_id, self.settled_by = data["last_round_id"], tuple(data["settled_by"])
        self.published, self.entries = int(data["published"]), int(data.get("entries", 0))

    def _add(self, entry: RoundEntry) -> None:
        """``entry`` into the open round, numbered, and among the entries added since the mark."""
        self._apply(entry)
        self.entries += 1
        self.added.append((self.entries, entry))

    def _apply(self, entry: RoundEntry) -> None:
        """The round with ``entry`` in it: a command's, or one replayed from the spool."""
        self.bets.update((bet.seat, bet) for bet in entry.accepted)
        self.folded.update(entry.folded)
        if entry.chunk_id:
            self.chunks[entry.chunk_id] = (entry.fingerprint, entry.answers)
            while len(self.chunks) > CHUNKS_REMEMBERED:
                del self.chunks[next(iter(self.chunks))]

    def _clear_round(self) -> None:
        self.bets, self.folded, self.chunks = {}, set(), {}
        self.entries, self.added = 0, []

    def _judge(self, bet: StudioBet, accepted: dict[int, StudioBet]) -> BetAnswer:
        """One bet of a chunk; accepted ones join ``accepted`` (the chunk's, by seat)."""
        try:
            self._check_bet(bet, accepted.get(bet.seat) or self.bets.get(bet.seat))
        except DomainError as refused:
            return BetAnswer(bet.bet_id, bet.seat, refused.reason, refused.detail)
        accepted[bet.seat] = bet
        return BetAnswer(bet.bet_id, bet.seat)

    def _check_bet(self, bet: StudioBet, placed: StudioBet | None) -> None:
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
        self._clear_round()
        self.settled_by = settled_by


def _fingerprint(bets: Sequence[StudioBet]) -> str:
    text = "\n".join(f"{b.bet_id}\t{b.seat}\t{b.pesos}" for b in bets)
    return hashlib.sha256(text.encode()).hexdigest()


def _bet_row(bet: StudioBet) -> list[Any]:
    return [bet.bet_id, bet.seat, bet.pesos, bet.player]


def _bet(data: Sequence[Any]) -> StudioBet:
    bet_id, seat, pesos, player = data
    return StudioBet(str(bet_id), int(seat), int(pesos), str(player))


def _answer_row(answer: BetAnswer) -> list[Any]:
    reason = None if answer.reason is None else answer.reason.value
    return [answer.bet_id, answer.seat, reason, answer.detail]


def _answer(data: Sequence[Any]) -> BetAnswer:
    bet_id, seat, reason, detail = data
    return BetAnswer(str(bet_id), int(seat), None if reason is None else Reason(reason), detail)
