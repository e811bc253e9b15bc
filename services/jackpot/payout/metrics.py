"""The payout service's Prometheus metrics (its processor's, such as
``jackpot_consumer_lag_records``, are ``jackpot.platform.metrics.ProcessorMetrics``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

PENDING = Gauge("jackpot_payout_pending_awards", "Payouts not yet paid or voided")
OLDEST_PENDING = Gauge(
    "jackpot_payout_oldest_pending_seconds", "Age of the oldest payout not yet paid or voided"
)
PAID = Counter("jackpot_payout_paid_total", "Payouts confirmed paid by a dealer terminal")
WALLET_CREDITS = Counter(
    "jackpot_payout_wallet_credits_total",
    "Studio prizes the player's wallet answered and that were then paid (credited, or a"
    " duplicate: credited before under the same key), or that it refused",
    ["outcome"],
)
# Exported from the start at 0 (a payout service that has credited nothing yet too): the
# dashboard's rates read 0, and the first refusal is an increase (alert JackpotWalletCreditRefused).
for _outcome in ("credited", "duplicate", "refused"):
    WALLET_CREDITS.labels(_outcome)
TRANSITIONS = Counter(
    "jackpot_payout_transitions_total", "Payout state transitions, by state entered", ["state"]
)
DUPLICATE_AWARDS = Counter(
    "jackpot_payout_duplicate_awards_total", "Awards seen again and ignored (already paid out)"
)
UNATTENDED = Gauge(
    "jackpot_payout_unattended_awards",
    "Payouts not yet paid of a table that no dealer terminal connected to this instance shows "
    "(rule D3; on the owning instance only)",
    ["table"],
)
SERVING = Gauge(
    "jackpot_payout_serving",
    "1 while this instance owns the payouts (every awards partition, none fenced), 0 standing by",
)
RESTORED = Counter(
    "jackpot_payout_restored_payouts_total",
    "Payouts a takeover restored from the open-payouts topic (open, or settled within the keep "
    "time): what a start costs, whatever the history",
)
CATCH_UP_RECORDS = Counter(
    "jackpot_payout_catch_up_records_total",
    "Payouts-topic records a takeover read after its last checkpoint (the whole partition once, "
    "on the first start of a deployment that had no open-payouts topic)",
)
