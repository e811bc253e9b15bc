"""The gateway's Prometheus metrics (no per-player labels)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

DEVICE_EVENTS = Counter(
    "jackpot_gateway_device_events_total", "Device events received, by type", ["type"]
)
REJECTS = Counter("jackpot_gateway_rejects_total", "Device inputs refused, by reason", ["reason"])
DUPLICATES = Counter("jackpot_gateway_duplicates_total", "Device events resent and ignored")
PUBLISHED = Counter("jackpot_gateway_published_records_total", "Records the broker acknowledged")
PUBLISH_FAILURES = Counter(
    "jackpot_gateway_publish_failures_total",
    "Publishing rounds that failed, by error (what the broker did not acknowledge stays in the"
    " spool and goes again on a new producer)",
    ["error"],
)
SPOOL_DEPTH = Gauge("jackpot_gateway_spool_depth_records", "Records waiting in the spool")
TABLES_CLOSED = Gauge("jackpot_gateway_tables_closed", "Tables with progressive betting closed")
CONNECTED = Gauge("jackpot_gateway_connected_tables", "Table controllers connected")
STUDIO_CALLS = Counter(
    "jackpot_gateway_studio_calls_total",
    "Calls of the operator's platform on studio tables (O1-O9), by call and outcome: applied,"
    " resent (answered as before, nothing published twice) or refused",
    ["call", "outcome"],
)
STUDIO_BETS = Counter(
    "jackpot_gateway_studio_bets_total",
    "Studio bets answered in new chunks, accepted or refused (the reason in"
    " jackpot_gateway_rejects_total)",
    ["outcome"],
)
# Every studio series exported from the start, at 0 (a gateway without studio tables too): the
# dashboard's rates read 0, not "no data", and a first refusal is an increase.
STUDIO_CALL_NAMES = ("open", "bets", "lock", "fold", "deal", "void")
for _call in STUDIO_CALL_NAMES:
    for _outcome in ("applied", "resent", "refused"):
        STUDIO_CALLS.labels(_call, _outcome)
for _outcome in ("accepted", "refused"):
    STUDIO_BETS.labels(_outcome)
PUBLISH_SECONDS = Histogram(
    "jackpot_gateway_publish_seconds",
    "From spooling a record to the broker acknowledging it",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
SPOOL_GROUP_WRITES = Histogram(
    "jackpot_gateway_spool_group_writes",
    "Writes (device events, dead letters, deletions) sharing one spool transaction and fsync",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000),
)
SPOOL_TRANSACTIONS = Counter(
    "jackpot_gateway_spool_transactions_total",
    "Transactions (one fsync each) of the spool's writer thread, by what they carried: writes"
    " (any deletion the broker's acknowledgements owe rides with them) or a deletion alone",
    ["carrying"],
)
