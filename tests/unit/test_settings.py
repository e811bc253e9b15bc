"""One settings scheme (jackpot.platform.settings): bad values name their variable in one line,
booleans mean what they say, keywords never read the environment, and docs/settings.md is the
models' own table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jackpot.display.settings import DisplaySettings
from jackpot.gateway.settings import GatewaySettings
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.exactly_once_settings import ExactlyOnceSettings
from jackpot.platform.service_settings import KafkaSecurity, ServiceSettings
from jackpot.platform.settings import FALSE_WORDS, TRUE_WORDS, SettingsError, load
from jackpot.pot.settings import PotSettings
from jackpot.tools.settings_doc import markdown, service_settings, variables

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_GATEWAY = REPO / "deploy" / "local" / "gateway.example.json"


def test_docs_settings_md_is_generated_from_the_models() -> None:
    written = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    assert written == markdown(), (
        "docs/settings.md differs from the settings models: run "
        "`.venv/bin/jackpot settings > docs/settings.md`"
    )


def test_every_variable_in_use_is_documented() -> None:
    text = markdown()
    for variable in (
        "JACKPOT_BOOTSTRAP_SERVERS",
        "KAFKA_BOOTSTRAP_SERVERS",
        "JACKPOT_STATE_TOPIC",
        "JACKPOT_PAYOUT_GRPC",
        "JACKPOT_PAYOUT_TERMINALS_FILE",
        "JACKPOT_PAYOUT_TRANSACTIONAL_ID_PREFIX",
        "JACKPOT_DISPLAY_HTTP",
        "JACKPOT_DISPLAY_WEB_TLS",
        "JACKPOT_GATEWAY_METRICS_PORT",
        "KAFKA_SECURITY_PROTOCOL",
        "KAFKA_SASL_PASSWORD",
        "JACKPOT_TLS_CERT",
        "JACKPOT_INSECURE_ROLES",
        "JACKPOT_AUDIT_TOPIC",
        "JACKPOT_HEALTH_GRPC",
    ):
        assert f"`{variable}`" in text, variable


@pytest.mark.parametrize(
    ("cls", "variable", "value", "allowed"),
    [
        (PayoutSettings, "JACKPOT_PAYOUT_METRICS_PORT", "http", "valid integer"),
        (PotSettings, "JACKPOT_MAX_BATCH_RECORDS", "many", "valid integer"),
        (DisplaySettings, "JACKPOT_DISPLAY_WEB_TLS", "maybe", "true/false, 1/0, yes/no or on/off"),
        (PotSettings, "JACKPOT_CREATE_TOPICS", "maybe", "true/false, 1/0, yes/no or on/off"),
        (DisplaySettings, "JACKPOT_DISPLAY_STALE_SECONDS", "soon", "valid number"),
        (PotSettings, "JACKPOT_GRPC_GRACE_SECONDS", "5s", "valid number"),
        (
            PayoutSettings,
            "KAFKA_SECURITY_PROTOCOL",
            "KERBEROS",
            "'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT' or 'SASL_SSL'",
        ),
        (PotSettings, "JACKPOT_METRICS_PORT", "70000", "less than or equal to 65535"),
        (DisplaySettings, "JACKPOT_DISPLAY_HTTP", "8080x", "host:port"),
        (PotSettings, "JACKPOT_INSECURE_ROLES", "root", "unknown role 'root'"),
    ],
)
def test_a_bad_value_is_one_line_naming_variable_value_and_what_is_allowed(
    cls: type[ServiceSettings], variable: str, value: str, allowed: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        load(cls, {variable: value})
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{variable}={value!r}: "), message
    assert allowed in message


def test_every_bad_value_is_in_the_one_line() -> None:
    with pytest.raises(SettingsError) as refused:
        load(
            PayoutSettings,
            {"JACKPOT_PAYOUT_METRICS_PORT": "x", "JACKPOT_PAYOUT_CREATE_TOPICS": "maybe"},
        )
    message = str(refused.value)
    assert "JACKPOT_PAYOUT_METRICS_PORT='x'" in message
    assert "JACKPOT_PAYOUT_CREATE_TOPICS='maybe'" in message
    assert "\n" not in message


@pytest.mark.parametrize("word", sorted(FALSE_WORDS | {"FALSE", "Off", " no "}))
def test_false_words_are_false(word: str) -> None:
    assert load(PayoutSettings, {"JACKPOT_PAYOUT_CREATE_TOPICS": word}).create_topics is False


@pytest.mark.parametrize("word", sorted(TRUE_WORDS | {"TRUE", "On"}))
def test_true_words_are_true(word: str) -> None:
    assert load(DisplaySettings, {"JACKPOT_DISPLAY_WEB_TLS": word}).web_tls is True


def test_zero_is_false() -> None:
    settings = load(PayoutSettings, {"JACKPOT_PAYOUT_CREATE_TOPICS": "0"})
    assert settings.create_topics is False


def test_the_pots_cross_field_rules_name_the_variable() -> None:
    with pytest.raises(SettingsError, match=r"^JACKPOT_HEARTBEAT_INTERVAL_MS='1000': .*D5"):
        load(PotSettings, {"JACKPOT_HEARTBEAT_INTERVAL_MS": "1000"})
    with pytest.raises(SettingsError, match="poll_timeout_ms must not exceed") as refused:
        load(PotSettings, {"JACKPOT_HEARTBEAT_INTERVAL_MS": "50"})
    assert "JACKPOT_POLL_TIMEOUT_MS 100 > JACKPOT_HEARTBEAT_INTERVAL_MS 50" in str(refused.value)
    with pytest.raises(SettingsError, match="JACKPOT_TLS_CERT, JACKPOT_TLS_KEY and JACKPOT_TLS_CA"):
        load(PotSettings, {"JACKPOT_TLS_CERT": "pot.crt"})


def test_keywords_never_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JACKPOT_CONSUMER_GROUP", "from-the-environment")
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "elsewhere:9092")
    monkeypatch.setenv("JACKPOT_PAYOUT_CREATE_TOPICS", "false")
    monkeypatch.setenv("JACKPOT_TLS_CERT", "pot.crt")
    settings = PotSettings(table_events_topic="test.table-events")
    assert settings.processor.consumer_group == "jackpot-pot"
    assert settings.bootstrap_servers == "127.0.0.1:9092"
    assert settings.table_events_topic == "test.table-events"
    assert PayoutSettings().create_topics is True
    assert PotSettings.model_validate({}).processor.consumer_group == "jackpot-pot"
    monkeypatch.delenv("JACKPOT_TLS_CERT")
    assert load(PotSettings).processor.consumer_group == "from-the-environment"


def test_replace_is_a_validated_copy() -> None:
    settings = PotSettings(processor={"instance_id": "a", "consumer_group": "test-group"})
    copy = settings.replace(processor={"instance_id": "b"})
    assert (settings.processor.instance_id, copy.processor.instance_id) == ("a", "b")
    assert copy.processor.consumer_group == "test-group"  # the other fields of the section
    assert copy.table_events_topic == settings.table_events_topic
    with pytest.raises(ValueError, match="D5"):
        settings.replace(heartbeat_interval_ms=2000)
    with pytest.raises(ValueError, match="frozen"):
        settings.grpc_address = "c"  # type: ignore[misc]
    with pytest.raises(ValueError, match="frozen"):
        settings.processor.instance_id = "c"  # type: ignore[misc]


def test_a_section_given_as_a_mapping_keeps_its_services_defaults() -> None:
    pot = PotSettings(processor={"max_batch_records": 16})
    assert pot.processor.consumer_group == "jackpot-pot"
    assert pot.processor.max_batch_records == 16
    payout = PayoutSettings(
        processor=ExactlyOnceSettings(consumer_group="g", transactional_id_prefix="t")
    )
    assert (payout.processor.consumer_group, payout.processor.transactional_id_prefix) == ("g", "t")
    assert PayoutSettings().processor.consumer_group == "jackpot-payout"


def test_payout_settings_for_the_partitioned_processor() -> None:
    settings = load(
        PayoutSettings,
        {
            "JACKPOT_PAYOUT_TRANSACTIONAL_ID_PREFIX": "site-a-payout",
            "JACKPOT_PAYOUT_INSTANCE_ID": "payout-0",
            "JACKPOT_PAYOUT_MAX_BATCH_RECORDS": "50",
            "KAFKA_BOOTSTRAP_SERVERS": "kafka:9093",
        },
    )
    processor = settings.processor
    assert processor.transactional_id(3) == "site-a-payout-3"
    assert processor.consumer_group == "jackpot-payout"
    assert processor.instance_id == "payout-0"
    assert processor.max_batch_records == 50
    assert (processor.session_timeout_ms, processor.heartbeat_ms) == (3_000, 500)
    assert (processor.max_poll_interval_ms, processor.transaction_timeout_ms) == (60_000, 30_000)
    assert (processor.retry_backoff_ms, processor.poll_timeout_ms) == (500, 100)
    assert settings.kafka_options() == {"bootstrap_servers": "kafka:9093"}
    assert PayoutSettings().processor.instance_id  # hostname-pid


def test_the_processor_section_is_one_model_under_each_services_prefix() -> None:
    pot = load(
        PotSettings, {"JACKPOT_SESSION_TIMEOUT_MS": "6000", "JACKPOT_PAYOUT_HEARTBEAT_MS": "9"}
    )
    payout = load(
        PayoutSettings, {"JACKPOT_SESSION_TIMEOUT_MS": "6000", "JACKPOT_PAYOUT_HEARTBEAT_MS": "9"}
    )
    assert type(pot.processor) is type(payout.processor) is ExactlyOnceSettings
    assert (pot.processor.session_timeout_ms, pot.processor.heartbeat_ms) == (6_000, 500)
    assert (payout.processor.session_timeout_ms, payout.processor.heartbeat_ms) == (3_000, 9)
    with pytest.raises(SettingsError, match=r"^JACKPOT_PAYOUT_CONSUMER_GROUP='': "):
        load(PayoutSettings, {"JACKPOT_PAYOUT_CONSUMER_GROUP": ""})


def test_every_service_creates_its_topics_under_their_configured_names() -> None:
    pot = PotSettings(ledger_topic="site.ledger", topic_partitions=12)
    specs = {spec.name: spec for spec in pot.topic_specs()}
    assert specs["site.ledger"].partitions == 12
    assert specs["jackpot.dead-letter.v1"].partitions == 1  # single-partition topics keep one
    assert specs["jackpot.audit.v1"].partitions == 1
    payout = {spec.name for spec in PayoutSettings(awards_topic="a").topic_specs()}
    assert payout == {
        "a",
        "jackpot.payouts.v1",
        "jackpot.ledger.v1",
        "jackpot.dead-letter.v1",
        "jackpot.audit.v1",
    }
    table = {"table_id": "T1", "game": "draw", "pot_group_id": "g", "credential": "c" * 16}
    gateway = GatewaySettings(tables=[table], dead_letter_topic="site.dead-letter")
    assert [spec.name for spec in gateway.topic_specs()] == [
        "jackpot.table-events.v1",
        "jackpot.pot-updates.v1",
        "site.dead-letter",
        "jackpot.audit.v1",
    ]


def test_every_variable_a_service_reads_starts_with_its_prefix_or_a_shared_one() -> None:
    for cls in service_settings():
        prefix = str(cls.model_config["env_prefix"])
        for name, _ in variables(cls):
            assert name.startswith((prefix, "JACKPOT_", "KAFKA_", "OTEL_EXPORTER_OTLP_")), name


def test_payout_terminals_file(tmp_path: Path) -> None:
    path = tmp_path / "terminals.json"
    path.write_text(json.dumps({"T1": "terminal-secret-0123"}))
    settings = load(PayoutSettings, {"JACKPOT_PAYOUT_TERMINALS_FILE": str(path)})
    assert settings.terminal_credentials == {"T1": "terminal-secret-0123"}
    assert "terminal-secret" not in repr(settings)
    with pytest.raises(SettingsError, match="JACKPOT_PAYOUT_TERMINALS_FILE"):
        load(PayoutSettings, {"JACKPOT_PAYOUT_TERMINALS_FILE": str(tmp_path / "missing")})


def test_display_http_sets_host_and_port() -> None:
    settings = load(DisplaySettings, {"JACKPOT_DISPLAY_HTTP": "0.0.0.0:8081"})
    assert (settings.http_host, settings.http_port) == ("0.0.0.0", 8081)
    assert load(DisplaySettings, {"JACKPOT_DISPLAY_HTTP": ":9"}).http_host == "127.0.0.1"
    assert DisplaySettings(http_port=0).http_port == 0


def test_a_gateway_file_with_the_earlier_topics_object_still_reads(tmp_path: Path) -> None:
    """The topics were a nested ``topics`` object before they were flat fields like the other
    services' (issue 38): such a file still reads, and a variable still wins over it."""
    written = json.loads(EXAMPLE_GATEWAY.read_text())
    written["topics"] = {"table_events": "old.table-events", "dead_letter": "old.dead-letter"}
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps(written))
    settings = load(
        GatewaySettings, {"JACKPOT_GATEWAY_DEAD_LETTER_TOPIC": "site-a.dead-letter"}, file=config
    )
    assert settings.table_events_topic == "old.table-events"
    assert settings.dead_letter_topic == "site-a.dead-letter"
    assert settings.pot_updates_topic == "jackpot.pot-updates.v1"
    written["topics"] = {"table_event": "misspelt"}
    config.write_text(json.dumps(written))
    with pytest.raises(SettingsError, match=r"table_event_topic: extra inputs"):
        load(GatewaySettings, {}, file=config)


def test_gateway_variables_win_over_its_file(tmp_path: Path) -> None:
    settings = load(
        GatewaySettings,
        {
            "JACKPOT_GATEWAY_METRICS_PORT": "0",
            "JACKPOT_GATEWAY_TABLE_EVENTS_TOPIC": "site-a.table-events",
            "KAFKA_BOOTSTRAP_SERVERS": "kafka:9093",
            "JACKPOT_GATEWAY_CREATE_TOPICS": "off",
        },
        file=EXAMPLE_GATEWAY,
    )
    assert settings.metrics_port == 0
    assert settings.spool_path == ".run/gateway-pit-a.sqlite"  # from the file
    assert settings.table_events_topic == "site-a.table-events"
    assert settings.pot_updates_topic == "jackpot.pot-updates.v1"
    assert settings.bootstrap_servers == "kafka:9093"
    assert settings.create_topics is False
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({**json.loads(EXAMPLE_GATEWAY.read_text()), "metrics_prot": 1}))
    with pytest.raises(SettingsError, match=r"gateway\.json: metrics_prot: extra inputs"):
        load(GatewaySettings, {}, file=config)
    with pytest.raises(SettingsError, match="cannot read the gateway settings"):
        load(GatewaySettings, {}, file=tmp_path / "missing.json")


def test_credentials_never_appear_in_an_error(tmp_path: Path) -> None:
    table = {"table_id": "T1", "game": "draw", "pot_group_id": "g", "credential": "secret-" * 3}
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"tables": [table, table]}))
    with pytest.raises(SettingsError) as refused:
        load(GatewaySettings, {}, file=config)
    assert "secret-" not in str(refused.value)
    assert "configured twice" in str(refused.value)


def test_sections_load_alone() -> None:
    security = load(KafkaSecurity, {"KAFKA_SECURITY_PROTOCOL": "sasl_ssl"})
    assert security.protocol == "SASL_SSL"
    with pytest.raises(SettingsError, match=r"^KAFKA_SECURITY_PROTOCOL='TLS': "):
        load(KafkaSecurity, {"KAFKA_SECURITY_PROTOCOL": "TLS"})


def test_only_the_documented_variables_are_read() -> None:
    """Not the field's name beside its alias, nor another case: what docs/settings.md lists."""
    payout = load(
        PayoutSettings,
        {
            "JACKPOT_PAYOUT_GRPC_ADDRESS": "x:1",
            "KAFKA_PROTOCOL": "SSL",
            "jackpot_payout_metrics_port": "1",
        },
    )
    assert payout.grpc_address == "127.0.0.1:50053"
    assert payout.kafka_security.protocol == "PLAINTEXT"
    assert payout.metrics_port == 9103


def _jackpot(*args: str, variables: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`jackpot ARGS` with only these settings variables (and brokers that are not there)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("JACKPOT_", "KAFKA_"))}
    environ.update({"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", **variables})
    script = Path(sys.executable).with_name("jackpot")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "jackpot.cli"]
    return subprocess.run(
        [*command, *args], env=environ, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("service", "variable", "value"),
    [
        ("payout", "JACKPOT_PAYOUT_METRICS_PORT", "http"),
        ("payout", "JACKPOT_PAYOUT_CREATE_TOPICS", "maybe"),
        ("pot", "JACKPOT_HEARTBEAT_INTERVAL_MS", "1500"),
        ("pot", "KAFKA_SECURITY_PROTOCOL", "KERBEROS"),
        ("display", "JACKPOT_DISPLAY_STALE_SECONDS", "soon"),
        ("display", "JACKPOT_DISPLAY_KAFKA_REQUEST_TIMEOUT_MS", "500"),
    ],
)
def test_a_service_with_a_bad_setting_exits_2_with_one_line(
    service: str, variable: str, value: str
) -> None:
    result = _jackpot(service, variables={variable: value})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"jackpot {service}: bad setting: {variable}={value!r}: ")


def test_a_gateway_with_a_bad_setting_exits_2_with_one_line(tmp_path: Path) -> None:
    result = _jackpot(
        "gateway",
        "--config",
        str(EXAMPLE_GATEWAY),
        variables={"JACKPOT_GATEWAY_HEARTBEAT_TIMEOUT_SECONDS": "never"},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "jackpot gateway: bad setting: JACKPOT_GATEWAY_HEARTBEAT_TIMEOUT_SECONDS='never': "
        "input should be a valid number, unable to parse string as a number"
    ]
    missing = _jackpot("gateway", "--config", str(tmp_path / "none.json"), variables={})
    assert missing.returncode == 2
    assert len(missing.stderr.splitlines()) == 1
    assert "cannot read the gateway settings" in missing.stderr


def test_jackpot_settings_prints_the_table() -> None:
    result = _jackpot("settings", variables={})
    assert result.returncode == 0, result.stderr
    assert result.stdout == markdown()


@pytest.mark.parametrize(
    ("cls", "variable", "value", "allowed"),
    [
        (
            DisplaySettings,
            "JACKPOT_DISPLAY_KAFKA_REQUEST_TIMEOUT_MS",
            "500",
            "greater than or equal to 1000",
        ),
        (
            DisplaySettings,
            "JACKPOT_DISPLAY_KAFKA_REQUEST_TIMEOUT_MS",
            "90000",
            "less than or equal to 60000",
        ),
        (DisplaySettings, "JACKPOT_DISPLAY_KAFKA_REQUEST_TIMEOUT_MS", "5s", "valid integer"),
        (
            GatewaySettings,
            "JACKPOT_GATEWAY_KAFKA_REQUEST_TIMEOUT_MS",
            "999",
            "greater than or equal to 1000",
        ),
        (GatewaySettings, "JACKPOT_GATEWAY_KAFKA_REQUEST_TIMEOUT_MS", "1e9", "valid integer"),
    ],
)
def test_a_bad_kafka_request_timeout_is_one_line_naming_it(
    cls: type[DisplaySettings | GatewaySettings], variable: str, value: str, allowed: str
) -> None:
    """The gateway's and the display's Kafka request timeouts are settings (5 s by default, the
    WAN reasoning in their descriptions); a value a WAN could not live with is refused."""
    file = EXAMPLE_GATEWAY if cls is GatewaySettings else None
    assert load(cls, {}, file=file).kafka_request_timeout_ms == 5000
    assert load(cls, {variable: "8000"}, file=file).kafka_request_timeout_ms == 8000
    with pytest.raises(SettingsError) as refused:
        load(cls, {variable: value}, file=file)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{variable}={value!r}: "), message
    assert allowed in message


def test_a_gateway_with_a_bad_kafka_request_timeout_exits_2_with_one_line() -> None:
    result = _jackpot(
        "gateway",
        "--config",
        str(EXAMPLE_GATEWAY),
        variables={"JACKPOT_GATEWAY_KAFKA_REQUEST_TIMEOUT_MS": "100"},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "jackpot gateway: bad setting: JACKPOT_GATEWAY_KAFKA_REQUEST_TIMEOUT_MS='100': "
        "input should be greater than or equal to 1000"
    ]
