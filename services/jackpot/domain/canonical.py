"""Canonical JSON: the same text for the same data, wherever a hash or a comparison rests on it.

Sorted keys, no spaces, one encoder per form (``json.dumps`` with arguments builds a new one each
call). The ledger's details, configurations and the pot's state escape non-ASCII characters
(``\\uXXXX``); the access log's chain entries keep them as UTF-8. Their recorded hashes were
computed over those bytes and must verify for ever (D4), so neither form may change.
"""

from __future__ import annotations

import json
from typing import Any

_ASCII = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_UTF8 = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(data: Any, *, utf8: bool = False) -> str:
    """``data`` as canonical JSON; ``utf8``: non-ASCII characters as they are (the access log)."""
    return (_UTF8 if utf8 else _ASCII).encode(data)
