"""Per-game adapters and gateway settings (issue #4): what each game's devices may say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jackpot.domain.cards import Game
from jackpot.domain.errors import DomainError, Reason
from jackpot.domain.table_messages import ExchangeCards, Fold, PlaceBet, Results
from jackpot.gateway.adapters import ADAPTERS
from jackpot.gateway.settings import GatewaySettings
from jackpot.platform.settings import SettingsError, load
from jackpot.v1 import device_pb2

REPO = Path(__file__).resolve().parents[2]


def event(**payload: object) -> device_pb2.DeviceEvent:
    return device_pb2.DeviceEvent(sequence=1, table_id="T", round_id="R", **payload)  # type: ignore[arg-type]


def test_every_game_has_an_adapter() -> None:
    assert set(ADAPTERS) == set(Game)
    assert all(adapter.game is game for game, adapter in ADAPTERS.items())


@pytest.mark.parametrize(
    ("game", "payload", "allowed"),
    [
        (Game.DRAW, "cards_exchanged", True),
        (Game.CARIBBEAN, "cards_exchanged", False),
        (Game.GO_POKER, "cards_exchanged", False),
        (Game.BLACKJACK, "cards_exchanged", False),
        (Game.CARIBBEAN, "folded", True),
        (Game.DRAW, "folded", True),
        (Game.BLACKJACK, "folded", False),
    ],
)
def test_forfeit_events_per_game(game: Game, payload: str, allowed: bool) -> None:
    message = event(**{payload: {"seat": 2}})
    if allowed:
        converted = ADAPTERS[game].to_input(message)
        assert converted == (ExchangeCards(2) if payload == "cards_exchanged" else Fold(2))
    else:
        with pytest.raises(DomainError) as refused:
            ADAPTERS[game].to_input(message)
        assert refused.value.reason is Reason.INVALID_STATE
        assert game.value in refused.value.detail


def test_results_keep_seats_cards_and_community() -> None:
    message = event(
        hand_results=device_pb2.HandResults(
            hands=[device_pb2.HandCards(seat=3, cards=["JS", "QS", "KS"])],
            community_cards=["TS", "AS"],
        )
    )
    assert ADAPTERS[Game.GO_POKER].to_input(message) == Results(
        {3: ("JS", "QS", "KS")}, ("TS", "AS")
    )


def test_two_hands_for_one_seat_are_malformed() -> None:
    message = event(
        hand_results=device_pb2.HandResults(
            hands=[
                device_pb2.HandCards(seat=1, cards=["2H", "3H", "4H", "5H", "7H"]),
                device_pb2.HandCards(seat=1, cards=["2D", "3D", "4D", "5D", "7D"]),
            ]
        )
    )
    with pytest.raises(DomainError) as refused:
        ADAPTERS[Game.CARIBBEAN].to_input(message)
    assert refused.value.reason is Reason.MALFORMED


def test_an_event_without_payload_is_malformed() -> None:
    with pytest.raises(DomainError) as refused:
        ADAPTERS[Game.DRAW].to_input(event())
    assert refused.value.reason is Reason.MALFORMED


def test_bet_maps_credits() -> None:
    message = event(bet_placed=device_pb2.BetPlaced(seat=4, credits=3))
    assert ADAPTERS[Game.BLACKJACK].to_input(message) == PlaceBet(4, 3)


def test_the_example_configuration_loads() -> None:
    settings = load(GatewaySettings, {}, file=REPO / "deploy" / "local" / "gateway.example.json")
    assert settings.name == "pit-a"
    assert {t.game for t in settings.tables} == set(Game)
    assert settings.heartbeat_timeout_seconds == 5


def test_settings_refuse_weak_or_repeated_tables(tmp_path: Path) -> None:
    def from_file(data: dict[str, object], environ: dict[str, str]) -> GatewaySettings:
        config = tmp_path / "gateway.json"
        config.write_text(json.dumps(data))
        return load(GatewaySettings, environ, file=config)

    table = {"table_id": "T1", "game": "draw", "pot_group_id": "g", "credential": "x" * 16}
    with pytest.raises(ValueError, match="configured twice"):
        from_file({"tables": [table, table]}, {})
    with pytest.raises(ValueError, match="at least 16"):
        from_file({"tables": [{**table, "credential": "short"}]}, {})
    with pytest.raises(SettingsError, match=r"tables\[0\]\.game: .*unknown game 'roulette'"):
        from_file({"tables": [{**table, "game": "roulette"}]}, {})
    env = from_file({"tables": [table]}, {"KAFKA_BOOTSTRAP_SERVERS": "k:1"})
    assert env.bootstrap_servers == "k:1"
