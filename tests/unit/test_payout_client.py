"""How payout clients find the owning instance (issue 19): the owner a refusal names, else the
next configured address."""

from __future__ import annotations

import grpc
import pytest

from jackpot.clients.payout import OWNER_METADATA_KEY, PayoutTargets, call_owner, owner_named
from jackpot.platform.service_settings import TlsSettings


def refusal(owner: str = "") -> grpc.aio.AioRpcError:
    trailing = grpc.aio.Metadata(*([(OWNER_METADATA_KEY, owner)] if owner else []))
    return grpc.aio.AioRpcError(
        grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), trailing, details="not served here"
    )


def test_a_refusal_naming_the_owner_sends_the_client_there_with_the_configured_tls_name() -> None:
    targets = PayoutTargets("payout:50053")
    assert targets.current == "payout:50053"
    assert targets.moved(refusal("10.0.0.7:50053")) is True
    assert targets.current == "10.0.0.7:50053"
    assert ("grpc.ssl_target_name_override", "payout") in targets.options()
    assert owner_named(refusal("10.0.0.7:50053")) == "10.0.0.7:50053"


def test_without_an_owner_named_the_client_goes_round_the_configured_addresses() -> None:
    targets = PayoutTargets("a:1, b:2")
    assert targets.moved(refusal()) is False
    assert targets.current == "b:2"
    targets.moved(refusal("c:3"))
    assert targets.current == "c:3"
    targets.moved(None)  # the named owner failed too: back to the configured list
    assert targets.current == "b:2"
    targets.moved(None)
    assert targets.current == "a:1"
    assert all(
        name != "grpc.ssl_target_name_override" for name, _ in targets.options()
    )  # a configured address keeps its own name


def test_no_address_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no payout service address"):
        PayoutTargets(" , ")


class Handover:
    """Instances mid-handover: each answer in turn (a refusal, or the owner's listing)."""

    def __init__(self, targets: PayoutTargets, answers: list[grpc.aio.AioRpcError | str]) -> None:
        self.targets = targets
        self.answers = answers
        self.tried: list[str] = []

    async def __call__(self, _stub: object) -> str:
        self.tried.append(self.targets.current)
        answer = self.answers.pop(0)
        if isinstance(answer, grpc.aio.AioRpcError):
            raise answer
        return answer


async def test_a_call_keeps_looking_while_the_instances_still_name_an_owner_that_stopped() -> None:
    """Seen in the fault suite: after the second instance stopped, the first named it as owner
    until the rebalance settled; four quick attempts were not enough."""
    targets = PayoutTargets("a:1,b:2")
    stopped = grpc.aio.AioRpcError(
        grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(), "refused"
    )
    handover = Handover(
        targets, [refusal("b:2"), stopped, refusal("b:2"), stopped, refusal("b:2"), stopped, "ok"]
    )
    assert await call_owner(targets, TlsSettings(), handover, within_seconds=5) == "ok"
    assert handover.tried == ["a:1", "b:2", "a:1", "b:2", "a:1", "b:2", "a:1"]


async def test_a_call_gives_up_with_the_last_refusal_when_no_owner_answers_in_time() -> None:
    targets = PayoutTargets("a:1")
    handover = Handover(targets, [refusal()] * 100)
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await call_owner(targets, TlsSettings(), handover, within_seconds=0.6)
    assert error.value.code() == grpc.StatusCode.UNAVAILABLE
    assert 2 <= len(handover.tried) <= 5  # paced, not spun


async def test_a_refusal_other_than_unavailable_is_raised_at_once() -> None:
    targets = PayoutTargets("a:1")
    denied = grpc.aio.AioRpcError(
        grpc.StatusCode.PERMISSION_DENIED, grpc.aio.Metadata(), grpc.aio.Metadata(), "no"
    )
    handover = Handover(targets, [denied])
    with pytest.raises(grpc.aio.AioRpcError):
        await call_owner(targets, TlsSettings(), handover)
    assert handover.tried == ["a:1"]
