"""Kafka client security from the environment, shared by every service (deploy/k8s uses it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jackpot.display.settings import DisplaySettings
from jackpot.gateway.settings import GatewaySettings
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.kafka import KafkaSecurity
from jackpot.platform.settings import load

SCRAM = {
    "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
    "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
    "KAFKA_SASL_USERNAME": "gateway",
    "KAFKA_SASL_PASSWORD": "s3cret",
}


def test_plaintext_adds_nothing() -> None:
    assert load(KafkaSecurity, {}).client_options() == {}


def test_sasl_options_and_password_kept_out_of_repr() -> None:
    security = load(KafkaSecurity, SCRAM)
    assert security.client_options() == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "gateway",
        "sasl_plain_password": "s3cret",
    }
    assert "s3cret" not in repr(security)


def test_ssl_builds_a_context() -> None:
    options = KafkaSecurity(protocol="SSL").client_options()
    assert options["security_protocol"] == "SSL"
    assert options["ssl_context"] is not None


def test_unknown_protocol_is_refused() -> None:
    with pytest.raises(ValueError, match="KAFKA_SECURITY_PROTOCOL"):
        load(KafkaSecurity, {"KAFKA_SECURITY_PROTOCOL": "KERBEROS"})


def test_every_service_reads_the_same_variables(tmp_path: Path) -> None:
    secrets = tmp_path / "credentials.json"
    secrets.write_text(json.dumps({"T1": "from-the-secret-0123"}))
    config = tmp_path / "gateway.json"
    config.write_text(
        json.dumps(
            {
                "credentials_file": str(secrets),
                "metrics_host": "0.0.0.0",
                "create_topics": False,
                "tables": [{"table_id": "T1", "game": "draw", "pot_group_id": "g"}],
            }
        )
    )
    gateway = load(GatewaySettings, SCRAM, file=config)
    assert gateway.tables[0].credential == "from-the-secret-0123"
    assert (gateway.metrics_host, gateway.create_topics) == ("0.0.0.0", False)
    assert gateway.kafka_security.username == "gateway"
    assert load(PayoutSettings, SCRAM).kafka_security.sasl_mechanism == "SCRAM-SHA-512"
    display = load(DisplaySettings, {**SCRAM, "JACKPOT_DISPLAY_METRICS_HOST": "0.0.0.0"})
    assert display.metrics_host == "0.0.0.0"
    assert display.kafka_security.protocol == "SASL_PLAINTEXT"
