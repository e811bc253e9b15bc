"""The studio endpoint: ``jackpot.v1.StudioPlatformService``, the operator's game platform
driving its studio tables (protos/jackpot/v1/studio.proto; the commands:
:mod:`jackpot.gateway.studio_desk`).

A thin typed servicer. Under mutual TLS each call is admitted only from the platform certificate
of the studio the table belongs to (role ``platform``, its CN the table's ``studio`` in the
gateway's settings) and written to the access log, refusals included; on plaintext (the local
demo) it is open. A call refused whole answers the status of its reason
(:func:`jackpot.platform.grpc_edge.answer_for`); a refused bet or fold is answered in its place.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import grpc

from jackpot.domain.access import Action
from jackpot.domain.errors import DomainError
from jackpot.domain.studio_table import BetAnswer, StudioBet
from jackpot.gateway import metrics
from jackpot.gateway.service import Gateway
from jackpot.platform import codec
from jackpot.platform.authz import Authorizer
from jackpot.platform.grpc_edge import Call, answered
from jackpot.v1 import studio_pb2, studio_pb2_grpc

SERVICE_NAME = "jackpot.v1.StudioPlatformService"
T = TypeVar("T")


class StudioPlatformServicer(studio_pb2_grpc.StudioPlatformServiceServicer):
    service_name = SERVICE_NAME

    def __init__(self, gateway: Gateway, authorizer: Authorizer | None = None) -> None:
        self._gateway = gateway
        self._desk = gateway.studio
        if authorizer is None and gateway.access_log is not None:
            authorizer = Authorizer(gateway.settings.access, gateway.access_log)
        self.authorizer = authorizer

    def register(self, server: grpc.aio.Server) -> None:
        studio_pb2_grpc.add_StudioPlatformServiceServicer_to_server(self, server)  # type: ignore[no-untyped-call]

    @staticmethod
    def _counted(name: str, resent: bool) -> None:
        metrics.STUDIO_CALLS.labels(name, "resent" if resent else "applied").inc()

    @staticmethod
    async def _run(name: str, command: Awaitable[T]) -> T:
        """The desk's answer; a refusal counted (by call, and by reason) and passed on."""
        try:
            return await command
        except DomainError as refused:
            metrics.STUDIO_CALLS.labels(name, "refused").inc()
            metrics.REJECTS.labels(refused.reason.value).inc()
            raise

    async def _admit(self, call: Call, table_id: str, what: str) -> None:
        """Under TLS: only the table's studio's platform (O1); the call on the access log."""
        configured = self._desk.configured(table_id)
        if self._gateway.settings.access.tls.enabled:
            await call.require(
                Action.DRIVE_STUDIO_TABLE, table_id, detail=what, studio=configured.studio
            )

    @answered
    async def OpenStudioRound(
        self, request: studio_pb2.OpenStudioRoundRequest, call: Call
    ) -> studio_pb2.OpenStudioRoundResponse:
        await self._admit(call, request.table_id, f"open round {request.round_id}")
        resent = await self._run("open", self._desk.open_round(request.table_id, request.round_id))
        self._counted("open", resent)
        reason = self._desk.closed_reason.get(request.table_id, "")
        call.applied(f"round {request.round_id} open")
        return studio_pb2.OpenStudioRoundResponse(
            resent=resent, progressive_open=not reason, closed_reason=reason
        )

    @answered
    async def PlaceStudioBets(
        self, request: studio_pb2.PlaceStudioBetsRequest, call: Call
    ) -> studio_pb2.PlaceStudioBetsResponse:
        what = f"chunk {request.chunk_id} of round {request.round_id}: {len(request.bets)} bets"
        await self._admit(call, request.table_id, what)
        bets = [StudioBet(b.bet_id, b.seat, b.bet, b.player) for b in request.bets]
        answers, resent = await self._run(
            "bets",
            self._desk.place_bets(request.table_id, request.round_id, request.chunk_id, bets),
        )
        self._counted("bets", resent)
        accepted = sum(1 for a in answers if a.reason is None)
        call.applied(f"{accepted} of {len(answers)} bets accepted")
        return studio_pb2.PlaceStudioBetsResponse(answers=_answers(answers), resent=resent)

    @answered
    async def LockStudioRound(
        self, request: studio_pb2.LockStudioRoundRequest, call: Call
    ) -> studio_pb2.LockStudioRoundResponse:
        await self._admit(call, request.table_id, f"lock round {request.round_id}")
        bets, total, resent = await self._run(
            "lock", self._desk.lock(request.table_id, request.round_id)
        )
        self._counted("lock", resent)
        call.applied(f"round {request.round_id} locked: {bets} bets, {total} pesos")
        return studio_pb2.LockStudioRoundResponse(bets=bets, total=total, resent=resent)

    @answered
    async def FoldStudioBets(
        self, request: studio_pb2.FoldStudioBetsRequest, call: Call
    ) -> studio_pb2.FoldStudioBetsResponse:
        what = f"fold {len(request.seats)} seats of round {request.round_id}"
        await self._admit(call, request.table_id, what)
        answers = await self._run(
            "fold", self._desk.fold(request.table_id, request.round_id, request.seats)
        )
        self._counted("fold", False)
        call.applied(what)
        return studio_pb2.FoldStudioBetsResponse(answers=_answers(answers))

    @answered
    async def DealStudioHand(
        self, request: studio_pb2.DealStudioHandRequest, call: Call
    ) -> studio_pb2.DealStudioHandResponse:
        what = f"deal {' '.join(request.cards)} for round {request.round_id}"
        await self._admit(call, request.table_id, what)
        resent = await self._run(
            "deal", self._desk.deal(request.table_id, request.round_id, list(request.cards))
        )
        self._counted("deal", resent)
        call.applied(what)
        return studio_pb2.DealStudioHandResponse(resent=resent)

    @answered
    async def VoidStudioRound(
        self, request: studio_pb2.VoidStudioRoundRequest, call: Call
    ) -> studio_pb2.VoidStudioRoundResponse:
        what = f"void round {request.round_id}: {request.reason}"
        await self._admit(call, request.table_id, what)
        bets, resent = await self._run(
            "void", self._desk.void(request.table_id, request.round_id, request.reason)
        )
        self._counted("void", resent)
        call.applied(what)
        return studio_pb2.VoidStudioRoundResponse(bets=bets, resent=resent)


def _answers(answers: tuple[BetAnswer, ...] | list[BetAnswer]) -> list[studio_pb2.StudioBetAnswer]:
    return [
        studio_pb2.StudioBetAnswer(
            bet_id=a.bet_id,
            seat=a.seat,
            accepted=a.reason is None,
            reason=codec.reason_to_proto(a.reason) if a.reason is not None else None,
            detail=a.detail,
        )
        for a in answers
    ]
