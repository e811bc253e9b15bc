"""The display service's Prometheus metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

CONNECTED_SIGNS = Gauge("jackpot_display_connected_signs", "Signs (web and gRPC) connected")
UPDATES_SENT = Counter("jackpot_display_updates_sent_total", "Sign updates sent", ["channel"])
COALESCED = Counter(
    "jackpot_display_coalesced_updates_total", "Updates replaced by a newer one before sending"
)
RESYNCS = Counter(
    "jackpot_display_resyncs_total", "Signs dropped for being too slow (they resync on reconnect)"
)
STALE_SIGNS = Gauge("jackpot_display_stale_signs", "Pot groups shown closed for lack of updates")
RESTORE_RECORDS = Counter(
    "jackpot_display_restore_records_total",
    "Records read to rebuild the pending prizes at a start or reconnect, by topic (the open "
    "payouts; the whole payouts topic only while those are incomplete)",
    ["topic"],
)
