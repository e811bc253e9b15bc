"""Authorization policy (issue 9): operators configure, supervisors approve and void, a table's
devices and terminal act only for their own table, nobody else can."""

from __future__ import annotations

import pytest

from jackpot.domain.access import (
    ANONYMOUS,
    POLICY,
    Action,
    Principal,
    Role,
    authorize,
    parse_roles,
)

pytestmark = pytest.mark.unit


def person(*roles: Role, table: str = "") -> Principal:
    return Principal("someone", frozenset(roles), table)


@pytest.mark.parametrize(
    ("role", "allowed"),
    [
        (Role.OPERATOR, {Action.CONFIGURE_POT, Action.READ, Action.WATCH_SIGNS}),
        (
            Role.SUPERVISOR,
            {
                Action.APPROVE_PAYOUT,
                Action.VOID_PAYOUT,
                Action.ISSUE_APPROVAL_CODE,
                Action.READ,
                Action.WATCH_SIGNS,
            },
        ),
        (Role.SERVICE, {Action.READ, Action.WATCH_SIGNS}),
        (Role.SIGN, {Action.READ, Action.WATCH_SIGNS}),
        (Role.TERMINAL, {Action.READ, Action.CONFIRM_PAYMENT, Action.WATCH_TABLE}),
        (Role.DEVICE, {Action.CONNECT_DEVICE}),
        (Role.INSPECTOR, {Action.ATTEST_SOFTWARE}),  # R6: the field check, nothing else
    ],
)
def test_each_role_may_do_exactly_its_actions(role: Role, allowed: set[Action]) -> None:
    principal = person(role, table="T1")
    decided = {action for action in Action if authorize(principal, action, "T1").allowed}
    assert decided == allowed


def test_nobody_without_a_role_may_do_anything() -> None:
    for action in Action:
        decision = authorize(ANONYMOUS, action, "T1")
        assert not decision.allowed
        assert "anonymous" in decision.detail


def test_only_operators_configure_and_only_supervisors_approve_or_void() -> None:
    assert POLICY[Action.CONFIGURE_POT] == frozenset({Role.OPERATOR})
    assert POLICY[Action.APPROVE_PAYOUT] == frozenset({Role.SUPERVISOR})
    assert POLICY[Action.VOID_PAYOUT] == frozenset({Role.SUPERVISOR})
    refused = authorize(person(Role.OPERATOR), Action.APPROVE_PAYOUT)
    assert not refused.allowed
    assert "needs the role supervisor" in refused.detail


def test_a_device_certificate_opens_only_its_own_table() -> None:
    device = person(Role.DEVICE, table="CAR-1")
    assert authorize(device, Action.CONNECT_DEVICE, "CAR-1").allowed
    other = authorize(device, Action.CONNECT_DEVICE, "CAR-2")
    assert not other.allowed
    assert "bound to another table" in other.detail
    assert not authorize(person(Role.DEVICE), Action.CONNECT_DEVICE, "CAR-1").allowed
    assert not authorize(device, Action.CONNECT_DEVICE, "").allowed


def test_a_terminal_confirms_payments_only_at_its_table() -> None:
    terminal = person(Role.TERMINAL, table="T1")
    assert authorize(terminal, Action.CONFIRM_PAYMENT, "T1").allowed
    assert not authorize(terminal, Action.CONFIRM_PAYMENT, "T2").allowed


def test_roles_parse_from_a_list_and_unknown_ones_are_refused() -> None:
    assert parse_roles(" operator, Supervisor ,") == {Role.OPERATOR, Role.SUPERVISOR}
    assert parse_roles("") == frozenset()
    with pytest.raises(ValueError, match="unknown role 'root'"):
        parse_roles("operator,root")
