"""A pot group's stored state behind its ledger, judged and repaired at the takeover (R14, M2).

The ledger is the book of record. A Kafka transaction that committed without one of its records
(issue 36: the state's record lost, the ledger's kept) leaves a group's stored state at ledger
entry N while its ledger goes on to M. At every takeover (``PotPartition.verify_restored``)
:func:`judge` says what to do with each restored group:

- the state is at its ledger's last entry and agrees with it exactly
  (:func:`~jackpot.pot.ledger_restore.disagreement`): run it;
- the state is behind (N < M), and the ledger's books at entry N are the state's (the hash chain
  after entry N, every counter and pot): the state is an earlier point of the same books, the
  entries N+1..M extend it, so :func:`repair` rebuilds the group from the state and those entries
  with the one rebuild (:func:`~jackpot.pot.ledger_restore.rebuild`), then checks it against the
  ledger's books at M before it runs. Its table sequences and event ids are raised by those
  entries', so the table events behind them, consumed again, are recognised as applied;
- anything else (a state ahead of its ledger, a chain the ledger does not extend, counters that
  differ, a ledger that does not audit): refuse, in one line naming the group, both positions
  and the runbook step (:data:`RUNBOOK`).

A repair moves no money: balances and counters come from the ledger's transfers (the rebuild
checks M2), and the hidden mystery trigger (X2) stays unless an entry after the state drew
another, which the ledger never holds: then a new one is drawn and its commitment recorded before
anything else. Pure, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from jackpot.domain.engine import PotGroup
from jackpot.domain.mystery import TriggerSource, secure_trigger
from jackpot.pot.ledger_audit import GroupAudit
from jackpot.pot.ledger_restore import (
    BooksAt,
    Rebuilt,
    TakeoverAudit,
    disagreement,
    mismatches,
    rebuild,
)
from jackpot.v1 import pot_pb2

RUNBOOK = "docs/operations.md#a-pot-groups-state-behind-or-ahead-of-its-ledger-r14"
REPAIRED_BY = "pot takeover: state repaired from the ledger (R14)"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a takeover does with a restored group: run it, repair it, or refuse it (one line)."""

    refused: str = ""
    repair: bool = False


RUN = Verdict()
REPAIR = Verdict(repair=True)


def refusal(group_id: str, why: str, state_at: int, ledger_at: int) -> str:
    """The one line a refused group halts its partition with."""
    return (
        f"pot group {group_id} refused (R14): its stored state is at ledger entry {state_at}, "
        f"its ledger at {ledger_at}: {why}; runbook {RUNBOOK}"
    )


def judge(
    group_id: str,
    state_group: PotGroup,
    state_at: int,
    state_chain: bytes,
    audit: GroupAudit | None,
    books_at_state: BooksAt | None,
) -> Verdict:
    """Run, repair or refuse a restored group (see the module's docstring).

    ``state_at``, ``state_chain``: the stored state's ledger entry and hash chain; ``audit``: the
    group's books from its ledger (None: the ledger read holds no entry of it);
    ``books_at_state``: those books at the state's entry (:attr:`TakeoverAudit.at_state`)."""
    audit = audit or GroupAudit(group_id)
    ledger_at = audit.last_sequence
    if audit.problems or state_at == ledger_at:
        why = disagreement(group_id, state_group, state_at, audit, state_chain)
    elif state_at > ledger_at:
        why = "the state is ahead of its ledger, which never received what the state counts"
    else:
        why = _not_extended(state_group, state_at, state_chain, books_at_state)
        if not why:
            return REPAIR
    return Verdict(refusal(group_id, why, state_at, ledger_at)) if why else RUN


def _not_extended(
    state_group: PotGroup, state_at: int, state_chain: bytes, books: BooksAt | None
) -> str:
    """Why the ledger's entries after a state behind it do not extend it ("" when they do)."""
    if not state_chain:
        return "behind its ledger, and it holds no hash chain to show the ledger extends it"
    if books is None or books.chain is None:
        return f"behind its ledger, whose books at entry {state_at} were not read"
    if books.chain != state_chain:
        return (
            f"behind its ledger, which does not extend it: the ledger's chain after entry "
            f"{state_at} is {books.chain.hex()[:16]}..., the state's {state_chain.hex()[:16]}... "
            "(an entry differs)"
        )
    wrong = mismatches(state_group, books.figures)
    if wrong:
        return (
            f"behind its ledger, and differs from the ledger's books at entry {state_at} "
            f"(picopesos, state != ledger): {'; '.join(wrong)}"
        )
    return ""


def repair(
    group_id: str,
    stored: pot_pb2.PotGroupState,
    books: TakeoverAudit,
    *,
    partition: int,
    update_sequence: int,
    now_ns: int,
    trigger_source: TriggerSource = secure_trigger,
) -> Rebuilt:
    """The group judged :data:`REPAIR`, rebuilt from its stored state and the ledger's entries
    after it, and checked against the ledger's books at its last entry (chain included).
    Raises ValueError or DomainError when it cannot be: the group is refused then."""
    audit = books.audits[group_id]
    rebuilt = rebuild(
        group_id,
        books.after.get(group_id, []),
        partition=partition,
        update_sequence=update_sequence,
        now_ns=now_ns,
        trigger_source=trigger_source,
        chain=audit.chain or b"",
        since=stored,
        by=REPAIRED_BY,
    )
    assert rebuilt.group is not None
    at = rebuilt.state.ledger_sequence - len(rebuilt.ledger)  # before what the repair records
    why = disagreement(group_id, rebuilt.group, at, audit)
    if why:
        raise ValueError(f"the repaired state does not agree with the ledger: {why}")
    return rebuilt
