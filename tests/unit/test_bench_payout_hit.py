"""The payout-hit bench's two forms and its figures (loadtest.bench_payout_hit): the forms are the
same entries, only bundled or not, and a pot-like transaction held by a burst shows as held."""

from __future__ import annotations

import pytest
from loadtest.bench_payout_hit import SETTINGS, _figures, hit_transactions

from jackpot.platform.bundles import BUNDLE, ledger_entries
from jackpot.v1 import pot_pb2

pytestmark = pytest.mark.unit

TOPICS = {
    SETTINGS.ledger_topic: "l",
    SETTINGS.payouts_topic: "p",
    SETTINGS.open_payouts_topic: "o",
}


def test_the_two_forms_write_the_same_entries_one_bundled_one_a_record_each() -> None:
    forms = hit_transactions(TOPICS)
    bundled, one_each = forms["bundled"], forms["one each"]
    ledger = [r for r in bundled if r.topic == "l"]
    assert {pot_pb2.LedgerEntry.FromString(r.value or b"").type for r in ledger} == {BUNDLE}
    unwrapped = [raw for r in ledger for _, raw in ledger_entries(r.value or b"")]
    assert [r.value for r in one_each if r.topic == "l"] == unwrapped
    assert len(unwrapped) == 10_000
    assert [r for r in bundled if r.topic != "l"] == [r for r in one_each if r.topic != "l"]


def test_a_pot_transaction_held_by_a_burst_is_its_worst_and_not_the_baseline() -> None:
    forms = {"one each": [], "bundled": []}
    took = {"one each": [(10.0, 0.3)], "bundled": [(20.0, 0.2)]}
    beats = [(t / 10, 0.004) for t in range(300)] + [(10.5, 0.250), (20.2, 0.030)]
    figures = _figures(forms, took, beats)  # type: ignore[arg-type]
    assert figures["one each"]["pot_worst_ms"] == pytest.approx(250)
    assert figures["bundled"]["pot_worst_ms"] == pytest.approx(30)
    assert figures["baseline_worst_ms"] == pytest.approx(4)
