"""Who may do what: the authorization policy of the admin, payout, device and sign APIs.

A caller is a :class:`Principal`: a name, the roles its certificate grants, and for a table's own
devices (bet acceptors, dealer terminal) the table its certificate is bound to. The policy is data
(:data:`POLICY`): each protected action names the roles that may perform it, and actions scoped to
a table also require the principal's table to be that table. Operators change pot configuration;
supervisors approve and void payouts; nobody else can (issue 9). The regulator's inspector, and
only the inspector, asks a service for the field check of its software (R6). Every decision
carries a sentence that the edge returns to the caller and writes to the access log's chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Role(Enum):
    DEVICE = "device"  # a table's progressive bet acceptors (gateway device stream)
    TERMINAL = "terminal"  # a table's dealer terminal (payout stream, confirms payments)
    SIGN = "sign"  # a jackpot sign controller (display stream)
    OPERATOR = "operator"  # changes pot groups: create, configure, link and unlink tables
    SUPERVISOR = "supervisor"  # approves and voids payouts
    SERVICE = "service"  # another service of the system (reads only)
    INSPECTOR = "inspector"  # the regulator's inspector: checks the installed software (R6)
    PLATFORM = "platform"  # an operator's game platform: drives its studio's tables (O1)


class Action(Enum):
    CONFIGURE_POT = "configure_pot"
    APPROVE_PAYOUT = "approve_payout"
    VOID_PAYOUT = "void_payout"
    ISSUE_APPROVAL_CODE = "issue_approval_code"  # a one-time code to decide at a terminal
    CONFIRM_PAYMENT = "confirm_payment"
    CONNECT_DEVICE = "connect_device"
    WATCH_SIGNS = "watch_signs"
    WATCH_TABLE = "watch_table"  # the dealer terminal's read-only view of its table (D3)
    READ = "read"
    ATTEST_SOFTWARE = "attest_software"  # the HMAC of the installed files under a seed (R6)
    DRIVE_STUDIO_TABLE = "drive_studio_table"  # a studio's rounds and bets, from its platform


POLICY: dict[Action, frozenset[Role]] = {
    Action.CONFIGURE_POT: frozenset({Role.OPERATOR}),
    Action.APPROVE_PAYOUT: frozenset({Role.SUPERVISOR}),
    Action.VOID_PAYOUT: frozenset({Role.SUPERVISOR}),
    Action.ISSUE_APPROVAL_CODE: frozenset({Role.SUPERVISOR}),
    Action.CONFIRM_PAYMENT: frozenset({Role.TERMINAL}),
    Action.CONNECT_DEVICE: frozenset({Role.DEVICE}),
    Action.WATCH_SIGNS: frozenset({Role.SIGN, Role.OPERATOR, Role.SUPERVISOR, Role.SERVICE}),
    Action.WATCH_TABLE: frozenset({Role.TERMINAL}),
    Action.READ: frozenset(
        {Role.OPERATOR, Role.SUPERVISOR, Role.SERVICE, Role.SIGN, Role.TERMINAL}
    ),
    Action.ATTEST_SOFTWARE: frozenset({Role.INSPECTOR}),
    Action.DRIVE_STUDIO_TABLE: frozenset({Role.PLATFORM}),
}

TABLE_SCOPED = frozenset({Action.CONFIRM_PAYMENT, Action.CONNECT_DEVICE, Action.WATCH_TABLE})
"""Actions a principal may only perform for the table its certificate names."""

STUDIO_SCOPED = frozenset({Action.DRIVE_STUDIO_TABLE})
"""Actions a platform may only perform for the tables of the studio its certificate names (O1)."""


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller (or, without TLS, the local development identity)."""

    name: str
    roles: frozenset[Role]
    table_id: str = ""
    authenticated_by: str = "x509"

    def describe(self) -> str:
        roles = ",".join(sorted(role.value for role in self.roles)) or "no role"
        table = f" of table {self.table_id}" if self.table_id else ""
        return f"{self.name} ({roles}{table})"


ANONYMOUS = Principal("anonymous", frozenset(), authenticated_by="none")


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    detail: str


def authorize(
    principal: Principal, action: Action, table_id: str = "", studio: str = ""
) -> Decision:
    """Whether ``principal`` may perform ``action`` (on ``table_id`` for table-scoped actions;
    for a studio's table, as that ``studio``'s platform: its certificate's name)."""
    needed = POLICY[action]
    if not principal.roles & needed:
        wanted = " or ".join(sorted(role.value for role in needed))
        return Decision(
            False, f"{principal.describe()} may not {action.value}: it needs the role {wanted}"
        )
    if action in TABLE_SCOPED:
        if not table_id:
            return Decision(False, f"{action.value} names no table")
        if principal.table_id != table_id:
            return Decision(
                False,
                f"{principal.describe()} may not {action.value} for table {table_id}: "
                "its certificate is bound to another table",
            )
    if action in STUDIO_SCOPED and principal.name != studio:
        return Decision(
            False,
            f"{principal.describe()} may not {action.value} for table {table_id}: it is "
            f"studio {studio or '(none)'}'s table",
        )
    return Decision(True, f"{principal.describe()} may {action.value}")


def parse_roles(names: str) -> frozenset[Role]:
    """Roles from a comma-separated list (``"operator,supervisor"``); unknown names raise."""
    roles = set()
    for name in names.split(","):
        name = name.strip().lower()
        if not name:
            continue
        try:
            roles.add(Role(name))
        except ValueError:
            known = ", ".join(role.value for role in Role)
            raise ValueError(f"unknown role {name!r} (known: {known})") from None
    return frozenset(roles)
