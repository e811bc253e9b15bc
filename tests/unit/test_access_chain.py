"""The hash-chained access log (issue 9): every change, removal, insertion or reordering of an
entry is found, at the first entry that does not hold."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jackpot.domain.access_chain import GENESIS, AccessEntry, ChainHead, verify
from jackpot.platform.access_log import decode, to_record
from jackpot.tools.access_chain import entry_to_json, run, verify_positions
from tests.unit.fuzzing import FUZZ

pytestmark = pytest.mark.unit


def chain(name: str, count: int) -> list[AccessEntry]:
    head = ChainHead(name)
    entries = []
    for n in range(count):
        head, entry = head.append(
            time_ns=1_000 + n,
            principal="ana",
            roles=["supervisor"],
            action="approve_payout",
            outcome="allowed" if n % 2 else "applied",
            target=f"award-{n}",
            detail=f"reason {n}",
        )
        entries.append(entry)
    return entries


def positioned(entries: list[AccessEntry]) -> list[tuple[int, AccessEntry]]:
    return list(enumerate(entries))


def test_an_untouched_log_of_interleaved_chains_verifies() -> None:
    a, b = chain("pot-api:1", 5), chain("payout:1", 4)
    mixed = [entry for pair in zip(a, b, strict=False) for entry in pair] + a[4:]
    report = verify(positioned(mixed))
    assert report.ok
    assert report.entries == 9
    assert report.chains == {"pot-api:1": 5, "payout:1": 4}
    assert a[0].prev_hash == GENESIS
    assert a[1].prev_hash == a[0].entry_hash


def test_an_altered_entry_is_named() -> None:
    entries = chain("c", 6)
    entries[3] = replace(entries[3], target="award-999")
    report = verify(positioned(entries))
    assert report.first_break is not None
    assert (report.first_break.sequence, report.first_break.position) == (4, 3)
    assert "altered" in report.first_break.problem
    assert "chain 'c' breaks at entry 4" in report.first_break.describe()


def test_an_altered_entry_with_its_hash_recomputed_breaks_the_next_link() -> None:
    entries = chain("c", 6)
    forged = replace(entries[2], detail="nothing to see")
    entries[2] = replace(forged, entry_hash=forged.computed_hash())
    report = verify(positioned(entries))
    assert report.first_break is not None
    assert report.first_break.sequence == 4
    assert "does not link" in report.first_break.problem


def test_a_removed_entry_is_found() -> None:
    entries = chain("c", 6)
    del entries[2]
    report = verify(positioned(entries))
    assert report.first_break is not None
    assert report.first_break.sequence == 4
    assert "where 3 was expected" in report.first_break.problem


def test_reordered_entries_are_found() -> None:
    entries = chain("c", 5)
    entries[1], entries[2] = entries[2], entries[1]
    report = verify(positioned(entries))
    assert report.first_break is not None
    assert report.first_break.position == 1


def test_an_exact_redelivery_is_counted_not_called_tampering() -> None:
    entries = chain("c", 3)
    report = verify(positioned([entries[0], entries[1], entries[1], entries[2]]))
    assert report.ok
    assert report.redelivered == 1


def test_a_forged_chain_start_is_found() -> None:
    entries = chain("c", 3)
    head = ChainHead("c")
    _, fake = head.append(
        time_ns=5, principal="mallory", roles=[], action="void_payout", outcome="applied"
    )
    report = verify(positioned([*entries, fake]))
    assert report.first_break is not None
    assert report.first_break.sequence == 1
    assert report.first_break.position == 3


FIELDS = ("time_ns", "principal", "roles", "action", "outcome", "target", "detail", "sequence")


@given(
    index=st.integers(0, 7),
    field=st.sampled_from(FIELDS),
    recompute=st.booleans(),
)
def test_any_single_change_is_caught_at_or_before_the_next_entry(
    index: int, field: str, recompute: bool
) -> None:
    entries = chain("c", 8)
    original = entries[index]
    changed = {
        "time_ns": original.time_ns + 1,
        "principal": original.principal + "x",
        "roles": (*original.roles, "operator"),
        "action": "configure_pot",
        "outcome": "refused" if original.outcome != "refused" else "applied",
        "target": original.target + "x",
        "detail": original.detail + ".",
        "sequence": original.sequence + 10,
    }[field]
    tampered = replace(original, **{field: changed})
    if recompute:
        tampered = replace(tampered, entry_hash=tampered.computed_hash())
    entries[index] = tampered
    anchored = {"c": (8, original.entry_hash if index == 7 else entries[7].entry_hash)}
    report = verify(positioned(entries), anchored)
    assert report.first_break is not None
    assert report.first_break.position in (index, index + 1)
    assert report.first_break.position == index or recompute


def test_without_an_anchor_a_rewritten_last_entry_passes_and_with_one_it_is_caught() -> None:
    entries = chain("c", 3)
    forged = replace(entries[2], detail="rewritten")
    entries[2] = replace(forged, entry_hash=forged.computed_hash())
    assert verify(positioned(entries)).ok  # the limit of any hash chain without an anchor
    honest = chain("c", 3)[2].entry_hash
    report = verify(positioned(entries), {"c": (3, honest)})
    assert report.first_break is not None
    assert report.first_break.sequence == 3
    assert "anchored" in report.first_break.problem


def test_an_anchor_finds_entries_cut_from_the_end() -> None:
    entries = chain("c", 5)
    anchors = {"c": (5, entries[4].entry_hash)}
    assert verify(positioned(entries), anchors).ok
    report = verify(positioned(entries[:3]), anchors)
    assert report.first_break is not None
    assert "ends at entry 3 but entry 5 was anchored" in report.first_break.problem


def test_jackpot_audit_chain_file_names_the_first_tampered_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entries = chain("payout:1", 4)
    export = tmp_path / "audit.jsonl"
    export.write_text("".join(entry_to_json(e) + "\n" for e in entries))
    assert run({}, "unused", chain_file=str(export)) == 0
    assert "OK: every chain holds" in capsys.readouterr().out
    lines = export.read_text().splitlines()
    lines[2] = lines[2].replace("reason 2", "reason changed")
    export.write_text("\n".join(lines) + "\n")
    assert run({}, "unused", chain_file=str(export)) == 1
    out = capsys.readouterr().out
    assert "TAMPERED: chain 'payout:1' breaks at entry 3 (position 3)" in out
    heads = tmp_path / "heads.json"
    export.write_text("".join(entry_to_json(e) + "\n" for e in entries))
    assert run({}, "unused", chain_file=str(export), save=str(heads)) == 0
    export.write_text("".join(entry_to_json(e) + "\n" for e in entries[:2]))
    assert run({}, "unused", chain_file=str(export), anchors=str(heads)) == 1
    assert "entry 4 was anchored" in capsys.readouterr().out
    export.write_text(lines[0] + "\nnot json\n")
    assert run({}, "unused", chain_file=str(export)) == 1
    assert "not an audit entry" in capsys.readouterr().out


@FUZZ
@given(
    records=st.lists(
        st.one_of(
            st.binary(max_size=256),
            st.builds(
                lambda entry, cut: to_record(entry).SerializeToString()[:cut],
                st.sampled_from(chain("c", 4) + chain("d", 2)),
                st.integers(0, 400),
            ),
        ),
        max_size=12,
    )
)
def test_arbitrary_bytes_on_the_audit_topic_are_reported_never_raised(
    records: list[bytes],
) -> None:
    """Fuzzing the access log's reader: garbage, truncated and shuffled records."""
    positions = [(offset, decode(value)) for offset, value in enumerate(records)]
    report = verify_positions(positions)
    if report.ok:
        assert all(entry is not None for _, entry in positions)
    else:
        assert report.first_break is not None
        assert report.first_break.describe()
