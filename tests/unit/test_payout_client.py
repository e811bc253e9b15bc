"""How payout clients find the owning instance (issue 19): the owner a refusal names, else the
next configured address."""

from __future__ import annotations

import grpc
import pytest

from jackpot.payout.client import OWNER_METADATA_KEY, PayoutTargets, owner_named


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
