"""Pot service settings from JACKPOT_* variables, and the exact amounts of its records."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jackpot.domain.money import MINOR_PER_PESO
from jackpot.platform import codec
from jackpot.platform.settings import load
from jackpot.pot.settings import PotSettings, SettingsError
from jackpot.tools.settings_doc import variables


def test_defaults_need_no_environment() -> None:
    settings = load(PotSettings, {})
    assert settings.table_events_topic == "jackpot.table-events.v1"
    assert settings.processor.transactional_id(3) == "jackpot-pot-3"
    assert settings.heartbeat_interval_ms < 1000  # D5


def test_variables_override_with_their_types() -> None:
    settings = load(
        PotSettings,
        {
            "JACKPOT_BOOTSTRAP_SERVERS": "k1:9092,k2:9092",
            "JACKPOT_MAX_BATCH_RECORDS": "100",
            "JACKPOT_CREATE_TOPICS": "false",
            "JACKPOT_GRPC_GRACE_SECONDS": "2.5",
            "JACKPOT_UNRELATED": "ignored",
            "KAFKA_BOOTSTRAP_SERVERS": "loses:9092",
        },
    )
    assert settings.bootstrap_servers == "k1:9092,k2:9092"
    assert settings.processor.max_batch_records == 100
    assert settings.create_topics is False
    assert settings.grpc_grace_seconds == 2.5


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"JACKPOT_METRICS_PORT": "http"}, "JACKPOT_METRICS_PORT"),
        ({"JACKPOT_LOG_JSON": "maybe"}, "JACKPOT_LOG_JSON"),
        ({"JACKPOT_HEARTBEAT_INTERVAL_MS": "1000"}, "D5"),
        ({"JACKPOT_MAX_BATCH_RECORDS": "1000"}, "event_id_window"),
        ({"JACKPOT_CONSUMER_GROUP": ""}, "consumer_group"),
    ],
)
def test_bad_settings_are_named(variables: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        load(PotSettings, variables)


def test_kafka_security_comes_from_the_deployments_kafka_variables() -> None:
    settings = load(
        PotSettings,
        {
            "JACKPOT_BOOTSTRAP_SERVERS": "kafka:9093",
            "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "KAFKA_SASL_USERNAME": "jackpot-pot",
            "KAFKA_SASL_PASSWORD": "s3cret",
        },
    )
    assert settings.kafka_options() == {
        "bootstrap_servers": "kafka:9093",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "jackpot-pot",
        "sasl_plain_password": "s3cret",
    }
    assert "s3cret" not in repr(settings)
    assert PotSettings().kafka_options() == {"bootstrap_servers": "127.0.0.1:9092"}
    with pytest.raises(SettingsError, match="KAFKA_SECURITY_PROTOCOL"):
        load(PotSettings, {"KAFKA_SECURITY_PROTOCOL": "TLS"})


def test_every_setting_has_a_variable() -> None:
    names = [name for name, _ in variables(PotSettings)]
    assert "JACKPOT_STATE_TOPIC" in names
    assert "JACKPOT_CONSUMER_GROUP" in names  # the processor's section, under the pot's prefix
    # ours, the Kafka client's shared ones, and OpenTelemetry's own for the exporter
    assert all(name.startswith(("JACKPOT_", "KAFKA_", "OTEL_EXPORTER_OTLP_")) for name in names)


# Percentages have at most four decimals, so every amount the engine makes is a multiple of
# 10^4 picopesos (see jackpot.domain.money); up to a billion pesos fits ExactAmount's int64.
@given(st.integers(min_value=0, max_value=10**9 * MINOR_PER_PESO // 10**4))
def test_exact_amounts_round_trip(units: int) -> None:
    minor = units * 10**4
    amount = codec.exact_amount(minor)
    assert codec.minor_units(amount) == minor
    assert amount.denominator >= 1


def test_an_amount_beyond_int64_is_refused_not_rounded() -> None:
    with pytest.raises(codec.AmountOverflowError):
        codec.exact_amount(2**64 * MINOR_PER_PESO + 1)
