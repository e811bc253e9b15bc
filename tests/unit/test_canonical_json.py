"""One canonical JSON (jackpot.domain.canonical): byte for byte the forms the hashes were made on.

The ledger's details and configurations, the pot's state and the access log's chain entries were
written with ``json.dumps`` under fixed options before the one helper existed; every recorded hash
rests on those bytes (D4), so the helper must give exactly them, non-ASCII text included.
"""

from __future__ import annotations

import json

import pytest

from jackpot.domain.canonical import canonical_json

pytestmark = pytest.mark.unit

VALUES = [
    {"b": 1, "a": [3, 2, {"z": None, "y": True}], "pot": "main"},
    {"principal": "cajero Peña", "detail": "código emitido a supervisora Ñuñoa", "roles": []},
    {"amount": {"numerator": 12345678901234567890, "denominator": 3}, "label": "Pozo €"},
    [],
    "Ñ",
]


@pytest.mark.parametrize("value", VALUES)
def test_the_ledger_form_is_what_the_ledger_was_written_in(value: object) -> None:
    assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize("value", VALUES)
def test_the_access_log_form_keeps_utf8_as_its_chain_was_written(value: object) -> None:
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(value, utf8=True) == expected


def test_the_two_forms_differ_only_on_non_ascii_text() -> None:
    assert canonical_json({"a": "peso"}) == canonical_json({"a": "peso"}, utf8=True)
    assert canonical_json({"a": "Peña"}) == '{"a":"Pe\\u00f1a"}'
    assert canonical_json({"a": "Peña"}, utf8=True) == '{"a":"Peña"}'
