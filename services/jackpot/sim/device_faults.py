"""Fault 5 of the fault suite: a table controller whose events are duplicated, delayed, reordered.

``FaultyDeviceClient`` is the device protocol client of the floor simulator with faults injected
at given rates, as a flaky network or controller firmware would produce them:

- duplicated: an accepted event is sent a second time with the same sequence and content; the
  gateway must answer ``duplicate`` and publish nothing the second time;
- delayed: an event is held 0.2-2 s after it is numbered and stamped, then sent;
- reordered: of two events known in advance (a seat's credits and its bet; in the round form
  the round's opening and its lock), event n+1 is sent first; the gateway must refuse it with
  ``SEQUENCE_OUT_OF_ORDER``; then n is sent and n+1 again, which must be accepted.

``DeviceFaultCounts`` keeps, per kind, how many were injected and what the gateway answered.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jackpot.clients.device import DeviceClient, lock_round_message
from jackpot.platform.codec import reason_from_proto
from jackpot.v1 import device_pb2

DELAY_SECONDS = (0.2, 2.0)


@dataclass(frozen=True)
class DeviceFaultRates:
    """The chance, per device event (per credits-and-bet pair for reordering), of each fault."""

    duplicate: float = 0.0
    delay: float = 0.0
    reorder: float = 0.0

    @classmethod
    def every_kind(cls, rate: float) -> DeviceFaultRates:
        return cls(duplicate=rate, delay=rate, reorder=rate)

    @property
    def any(self) -> bool:
        return self.duplicate > 0 or self.delay > 0 or self.reorder > 0


@dataclass
class DeviceFaultCounts:
    delayed: int = 0
    delayed_answers: Counter[str] = field(default_factory=Counter)
    duplicated: int = 0  # accepted events sent a second time (and answered)
    duplicate_answers: Counter[str] = field(default_factory=Counter)  # answers to second copies
    reordered: int = 0  # events n+1 sent before n (and answered)
    reorder_early_answers: Counter[str] = field(default_factory=Counter)  # answers to n+1 first
    reorders_refused_then_accepted: int = 0  # n+1 refused out of order, then n and n+1 accepted
    reorders_not_completed: Counter[str] = field(default_factory=Counter)  # n or n+1 refused

    def report(self) -> dict[str, Any]:
        return {
            "events_delayed": self.delayed,
            "delayed_answers": dict(self.delayed_answers),
            "duplicates_sent": self.duplicated,
            "duplicates_answered": self.duplicate_answers["DUPLICATE"],
            "duplicate_answers": dict(self.duplicate_answers),
            "reorders_injected": self.reordered,
            "reorders_refused_out_of_order": self.reorder_early_answers["SEQUENCE_OUT_OF_ORDER"],
            "reorder_early_answers": dict(self.reorder_early_answers),
            "reorders_refused_then_accepted": self.reorders_refused_then_accepted,
            "reorders_not_completed": dict(self.reorders_not_completed),
        }


def answer(reply: device_pb2.EventReply) -> str:
    """One word for what the gateway answered: DUPLICATE, ACCEPTED or the refusal reason."""
    if reply.accepted:
        return "DUPLICATE" if reply.duplicate else "ACCEPTED"
    return reason_from_proto(reply.reason).value


class FaultyDeviceClient(DeviceClient):
    """``DeviceClient`` with duplicated, delayed and reordered events at the given rates."""

    def __init__(
        self,
        *args: Any,
        rates: DeviceFaultRates,
        counts: DeviceFaultCounts,
        rng: random.Random,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.rates = rates
        self.counts = counts
        self.rng = rng

    async def send(self, **payload: Any) -> device_pb2.EventReply:
        roll = self.rng.random()
        if roll < self.rates.duplicate:
            return await self._send_twice(self.event(**payload))
        if roll < self.rates.duplicate + self.rates.delay:
            return await self._send_late(self.event(**payload))
        return await super().send(**payload)

    async def _send_late(self, event: device_pb2.DeviceEvent) -> device_pb2.EventReply:
        self.counts.delayed += 1
        await asyncio.sleep(self.rng.uniform(*DELAY_SECONDS))
        reply = await self.send_event(event)
        self.counts.delayed_answers[answer(reply)] += 1
        return reply

    async def _send_twice(self, event: device_pb2.DeviceEvent) -> device_pb2.EventReply:
        reply = await self.send_event(event)
        if not reply.accepted:
            return reply  # a refused event's number is free again: its copy would be a new event
        self._assigned = None  # the copy's answer must not give the number back
        again = await self.send_event(event)
        self.counts.duplicated += 1
        self.counts.duplicate_answers[answer(again)] += 1
        return reply

    def reorders_now(self) -> bool:
        """Whether the next pair of events known in advance goes out reordered."""
        return self.rng.random() < self.rates.reorder

    async def credits_and_bet(
        self, seat: int, credits: int
    ) -> tuple[device_pb2.EventReply, device_pb2.EventReply]:
        """A seat's credits then its bet (the per-event form); at the reorder rate the bet goes
        first once."""
        if not self.reorders_now():
            return await self.credits(seat, credits), await self.bet(seat, credits)
        first = self.event(credits_added=device_pb2.CreditsAdded(seat=seat, credits=credits))
        second = self.event(bet_placed=device_pb2.BetPlaced(seat=seat, credits=credits))
        return await self.reordered(first, second, lambda: self.bet(seat, credits))

    async def open_and_lock_reordered(
        self, round_id: str, bets: Mapping[int, int]
    ) -> tuple[device_pb2.EventReply, device_pb2.EventReply]:
        """The round form's RoundOpened and LockRound, the lock sent first once."""
        self.round_id = round_id
        first = self.event(round_opened=device_pb2.RoundOpened())
        second = self.event(lock_round=lock_round_message(bets))
        return await self.reordered(first, second, lambda: self.lock_round(round_id, bets))

    async def reordered(
        self,
        first: device_pb2.DeviceEvent,
        second: device_pb2.DeviceEvent,
        second_afresh: Callable[[], Awaitable[device_pb2.EventReply]],
    ) -> tuple[device_pb2.EventReply, device_pb2.EventReply]:
        """Event n+1 first (the gateway must refuse it out of order), then n, then n+1 again;
        ``second_afresh`` sends n+1's content anew when n is refused."""
        if self._broken.is_set():
            raise ConnectionError("stream broken")
        early = await self.send_raw(device_pb2.ConnectRequest(event=second).SerializeToString())
        self.counts.reordered += 1
        self.counts.reorder_early_answers[answer(early)] += 1
        first_reply = await self.send_event(first)
        if not first_reply.accepted:
            # neither number was used: the second is sent afresh with n
            kind = first.WhichOneof("payload")
            self.counts.reorders_not_completed[f"{kind} {answer(first_reply)}"] += 1
            self.sequence, self._assigned = first.sequence - 1, None
            return first_reply, await second_afresh()
        second_reply = await self.send_event(second)
        if not second_reply.accepted:
            kind = second.WhichOneof("payload")
            self.counts.reorders_not_completed[f"{kind} {answer(second_reply)}"] += 1
        elif not early.accepted:
            self.counts.reorders_refused_then_accepted += 1
        return first_reply, second_reply
