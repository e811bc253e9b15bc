"""The access log's chain verified as a stream (issue 23): the incremental verifier says what
`verify` says, entry by entry, and `jackpot audit --chain` reads, exports and verifies without
holding the log; each audit topic has its own chain-heads topic."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jackpot.domain.access_chain import AccessEntry, ChainHead, ChainVerifier, verify
from jackpot.tools.access_chain import entry_to_json, read_file, verify_positions, verify_stream
from jackpot.topics import AUDIT, AUDIT_HEADS, audit_heads_topic

pytestmark = pytest.mark.unit


def chain(name: str, count: int) -> list[AccessEntry]:
    head = ChainHead(name)
    entries = []
    for n in range(count):
        head, entry = head.append(
            time_ns=n,
            principal="ana",
            roles=["operator"],
            action="configure_pot",
            outcome="applied",
        )
        entries.append(entry)
    return entries


def test_each_audit_topic_has_its_own_heads_topic() -> None:
    assert audit_heads_topic(AUDIT.name) == AUDIT_HEADS.name == "jackpot.audit-heads.v1"
    assert audit_heads_topic("demo-1a2b.audit") == "demo-1a2b.audit-heads"  # demo namespaces
    assert audit_heads_topic("test.audit.0a1b2c") == "test.audit.0a1b2c-heads"
    assert audit_heads_topic("site.audit.v12") == "site.audit-heads.v12"
    assert AUDIT_HEADS.partitions == 1
    assert AUDIT_HEADS.config["cleanup.policy"] == "compact"


@given(
    cut=st.integers(0, 9),
    change=st.sampled_from(["none", "alter", "drop", "duplicate", "restart"]),
    anchored=st.booleans(),
)
def test_the_incremental_verifier_says_what_verify_says(
    cut: int, change: str, anchored: bool
) -> None:
    a, b = chain("a", 6), chain("b", 4)
    log = [entry for pair in zip(a, b, strict=False) for entry in pair] + a[4:]
    if change == "alter":
        log[cut] = replace(log[cut], detail="changed")
    elif change == "drop":
        del log[cut]
    elif change == "duplicate":
        log.insert(cut, log[cut])
    elif change == "restart":
        log.insert(cut, chain("a", 1)[0])
    anchors = {"a": (6, a[5].entry_hash)} if anchored else None
    positioned = list(enumerate(log))
    verifier = ChainVerifier(anchors)
    for position, entry in positioned:
        if not verifier.add(position, entry):
            break
    assert verifier.finish() == verify(positioned, anchors)


def test_the_verifier_reads_a_generator_once_keeping_no_list() -> None:
    taken: list[int] = []

    def entries() -> Iterable[tuple[int, AccessEntry | None]]:
        for position, entry in enumerate(chain("c", 5)):
            taken.append(position)
            yield position, entry

    report = verify_positions(entries())
    assert report.ok
    assert report.chains == {"c": 5}
    assert taken == [0, 1, 2, 3, 4]


async def positions_of(
    log: list[AccessEntry | None], closed: list[bool]
) -> AsyncIterator[tuple[int, AccessEntry | None]]:
    try:
        for position, entry in enumerate(log):
            yield position, entry
    finally:
        closed.append(True)


async def test_a_stream_is_verified_exported_and_closed_at_a_break() -> None:
    entries: list[AccessEntry | None] = list(chain("c", 4))
    entries.insert(2, None)  # a record that is not an entry
    closed: list[bool] = []
    report = await verify_stream(positions_of(entries, closed))
    assert report.first_break is not None
    assert (report.first_break.position, report.first_break.chain) == (2, "?")
    assert "not an audit entry" in report.first_break.problem
    assert closed == [True]  # the reader is closed without reading on

    export = io.StringIO()
    report = await verify_stream(positions_of(entries, []), export=export)
    assert not report.ok
    lines = export.getvalue().splitlines()
    assert lines == [entry_to_json(e) for e in entries if e is not None]  # the whole log


def test_an_export_file_is_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    entries = chain("c", 3)
    path.write_text(entry_to_json(entries[0]) + "\n\nnot json\n" + entry_to_json(entries[1]) + "\n")
    assert list(read_file(path)) == [(1, entries[0]), (3, None), (4, entries[1])]
