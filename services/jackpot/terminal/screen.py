"""What the dealer's screen shows (rule D3): pure state, fed by the two links, read by the page.

The table's round and seats come from the gateway's watch, the prizes to pay from the payout
service's DealerTerminal stream (already in payment order, rule S5: the order the pot awarded
them, envy bonuses among them where the engine paid them, V3; a linked table's envy bonus is
a prize of that table's round and so on that table's screen, V2); each link says whether it is
up and, when not, why. Nothing can be paid while either link is down: the page disables its
buttons, and :meth:`Screen.payable` refuses on the server too. The pot ("Pozo") shows every level
of a group with several (L4, from the gateway's view: ``TableView.levels``); each prize names the
level that pays it and an envy bonus the hit that earned it (``Payout.level``, ``envy_of``).
A studio table's screen (rules O1, O9) counts its round's bets instead of drawing its seats, and
shows its winners by round, count and total (``wallet_rounds``: they are paid to the players'
wallets, not here); only a studio prize awaiting a supervisor is listed one by one.

The screen speaks one language, the Spanish of a Chilean casino floor (issue 29). The links, the
services and this module's own refusals say what happened in English, the language of the log
and of the JSON's machine values (``detail``, ``message``, ``state``...); everything the page
displays is put into Spanish here, in one place: :func:`in_spanish` for the sentences (a
``text`` beside each), the ``*_text`` fields for the states and the prizes. A sentence this
module does not know is shown as a Spanish pointer to the terminal's log, never in English.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jackpot.domain.hands import ENVY_PREFIX, prize_name
from jackpot.domain.hands import PRIZE_NAMES as HAND_NAMES
from jackpot.v1 import device_pb2, payout_pb2

ROUND_STATES = {
    device_pb2.ROUND_STATE_IDLE: "idle",
    device_pb2.ROUND_STATE_OPEN: "open",
    device_pb2.ROUND_STATE_LOCKED: "locked",
    device_pb2.ROUND_STATE_RESULTS: "results",
}
PAYOUT_STATES = {
    payout_pb2.PAYOUT_STATE_ORDERED: "ordered",
    payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL: "awaiting_approval",
    payout_pb2.PAYOUT_STATE_APPROVED: "approved",
    payout_pb2.PAYOUT_STATE_PAID: "paid",
    payout_pb2.PAYOUT_STATE_VOIDED: "voided",
}
PAYABLE = frozenset({payout_pb2.PAYOUT_STATE_ORDERED, payout_pb2.PAYOUT_STATE_APPROVED})
WHO_APPROVES = "un supervisor (con su propio certificado o un código de un solo uso)"

# --- What the page displays, in Spanish -----------------------------------------------------

ROUND_STATE_TEXT = {
    "idle": "sin ronda",
    "open": "apuestas abiertas",
    "locked": "apuestas cerradas",
    "results": "resultados",
    "unknown": "desconocido",
}
# The payout's state in the prize list ...
PAYOUT_STATE_TEXT = {
    "ordered": "a pagar",
    "awaiting_approval": "BLOQUEADO: espera aprobación",
    "approved": "aprobado: a pagar",
    "paid": "pagado",
    "voided": "anulado",
    "unknown": "estado desconocido",
}
# ... and in a sentence ("el premio está pagado").
STATE_WORDS = {
    "ordered": "por pagar",
    "awaiting_approval": "esperando aprobación",
    "approved": "aprobado",
    "paid": "pagado",
    "voided": "anulado",
}
# The prizes as the screen shows them (capitals, as the signs).
PRIZE_NAMES = {hand: spanish.upper() for hand, (spanish, _) in HAND_NAMES.items()}
UNKNOWN_PRIZE = "PREMIO"


def prize_text(prize: str) -> str:
    """A prize as the screen shows it: ``ESCALERA REAL``; an envy bonus (rule V1, paid to the
    other seats when one hits, ``ENVY_<hand>``) as ``ENVIDIA: ESCALERA REAL``."""
    name = prize_name(prize, 0)
    return UNKNOWN_PRIZE if name is None else name.upper()


UNTRANSLATED = "sin traducción: el detalle está en el registro del terminal"
# A lost link's gRPC status (links.py says "CODE: details"; the details, in grpc's English,
# stay in the log).
GRPC_TEXT = {
    "UNAVAILABLE": "servicio no disponible",
    "DEADLINE_EXCEEDED": "sin respuesta a tiempo",
    "UNAUTHENTICATED": "credencial del terminal rechazada",
    "PERMISSION_DENIED": "permiso denegado",
    "CANCELLED": "conexión cancelada",
    "FAILED_PRECONDITION": "el servicio no lo permite ahora",
    "NOT_FOUND": "no encontrado",
    "ABORTED": "operación interrumpida",
    "RESOURCE_EXHAUSTED": "servicio saturado",
    "INVALID_ARGUMENT": "solicitud no válida",
    "UNIMPLEMENTED": "función no disponible en el servicio",
    "INTERNAL": "falla interna del servicio",
    "UNKNOWN": "falla desconocida del servicio",
    "DATA_LOSS": "falla interna del servicio",
    "OUT_OF_RANGE": "solicitud fuera de rango",
    "ALREADY_EXISTS": "ya existe",
}
# A refusal's reason (jackpot.domain.errors.Reason), when its sentence is not known.
REASON_TEXT = {
    "INVALID_STATE": "el estado del premio no lo permite",
    "TABLE_MISMATCH": "el premio es de otra mesa",
    "NOT_AUTHENTICATED": "no autorizado",
    "MALFORMED": "solicitud mal formada",
    "UNKNOWN_TABLE": "mesa desconocida",
    "UNKNOWN_POT_GROUP": "pozo desconocido",
    "PROGRESSIVE_CLOSED": "el progresivo está cerrado",
    "TOO_LARGE": "solicitud demasiado grande",
}
# The fields of the terminal's API (web.py), as a missing one is named.
FIELDS = {"award_id": "el premio", "code": "el código del supervisor", "reason": "el motivo"}

_Rules = tuple[tuple[re.Pattern[str], str], ...]


def _rules(*pairs: tuple[str, str]) -> _Rules:
    return tuple((re.compile(pattern, re.DOTALL), template) for pattern, template in pairs)


# Every sentence the screen is sent whole: links.py (the links' states, the answers), this
# module's payable(), web.py (a malformed request), the gateway's closed reasons (TableView).
SENTENCES = _rules(
    ("connecting", "conectando"),
    ("connected", "conectado"),
    ("watching the table", "conectado a la mesa"),
    ("the gateway ended the watch", "la mesa cerró la conexión"),
    ("the payout service ended the session", "el servicio de pagos cerró la sesión"),
    (f"(?P<grpc>{'|'.join(GRPC_TEXT)}): .*", "{grpc}"),
    ("paid: the payout service confirmed it", "Pagado: el servicio de pagos lo confirmó"),
    (
        "approved by the supervisor: the payout service confirmed it",
        "Aprobado por el supervisor: el servicio de pagos lo confirmó",
    ),
    (
        "voided by the supervisor: the payout service confirmed it",
        "Anulado por el supervisor: el servicio de pagos lo confirmó",
    ),
    ("refused: (?P<refusal>.*)", "Rechazado: {refusal}"),
    (
        "no answer from the payout service in time; see the list",
        "El servicio de pagos no respondió a tiempo; revise la lista",
    ),
    (
        "the link to the payout service was lost before its answer; "
        "the list shows whether it was paid",
        "Se perdió la conexión con el servicio de pagos antes de su respuesta; "
        "la lista muestra si quedó pagado",
    ),
    ("no link to the payout service", "Sin conexión con el servicio de pagos"),
    (
        r"no link to the payout service \((?P<inner>.*)\): nothing can be paid",
        "Sin conexión con el servicio de pagos ({inner}): no se puede pagar nada",
    ),
    (
        r"no link to the table's gateway \((?P<inner>.*)\): nothing can be paid",
        "Sin conexión con la mesa ({inner}): no se puede pagar nada",
    ),
    ("no award named", "No se indicó el premio"),
    (r"the request is larger than (?P<size>\d+) bytes", "La solicitud supera los {size} bytes"),
    ("the request is not JSON", "La solicitud no es JSON"),
    ("the request must be a JSON object", "La solicitud debe ser un objeto JSON"),
    (r"'(?P<field>\w+)' must be a non-empty string", "Falta {field}"),
    ('\'decision\' must be "approve" or "void"', "La decisión debe ser aprobar o anular"),
    ("a void needs a 'reason'", "Para anular hay que escribir el motivo"),
    ("starting", "la mesa está iniciando"),
    (r"no update from pot group (?P<group>\S+) yet", "aún sin noticias del pozo {group}"),
    (
        r"pot group (?P<group>\S+) silent for over (?P<seconds>\S+) s",
        "el pozo {group} lleva más de {seconds} s sin noticias",
    ),
    ("events cannot be delivered to Kafka", "los eventos de la mesa no llegan a Kafka"),
)
# The payout service's refusals (DealerTerminalResponse.refused: "REASON: sentence").
REFUSALS = _rules(
    (
        r"payout \S+ is (?P<state>\w+): it cannot be paid",
        "el premio está {state}: no se puede pagar",
    ),
    (
        r"payout \S+ is (?P<state>\w+): it cannot be voided",
        "el premio está {state}: no se puede anular",
    ),
    (
        r"payout \S+ is (?P<state>\w+), not awaiting approval",
        "el premio está {state}: no espera aprobación",
    ),
    (
        r"award \S+ is paid at (?P<there>\S+), not at (?P<here>\S+)",
        "este premio se paga en la mesa {there}, no en la {here}",
    ),
    (
        r"award \S+ is at (?P<there>\S+), not at (?P<here>\S+)",
        "este premio es de la mesa {there}, no de la {here}",
    ),
    ("no (?:open )?payout for award .*", "no hay un pago abierto de este premio"),
    ("this code was already used", "este código ya fue usado"),
    ("this code has expired", "este código expiró"),
    (
        r"wrong code for award \S+; (?P<count>\d+) wrong codes: .*",
        "código incorrecto ({count} intentos fallidos): los códigos de este premio quedaron "
        "anulados y el supervisor debe pedir uno nuevo",
    ),
    (r"wrong code for award \S+", "código incorrecto"),
    ("an approval needs the supervisor's name", "la aprobación necesita el nombre del supervisor"),
    (
        "a void needs the supervisor's name and a reason",
        "la anulación necesita el nombre del supervisor y un motivo",
    ),
    (
        r"the transaction on partition \d+ failed; retry",
        "la transacción no se completó; vuelva a intentarlo",
    ),
)


def in_spanish(text: str) -> str:
    """What the screen displays for ``text``, a sentence of the links, the services or this
    module (""  for "")."""
    return _translate(text, SENTENCES, UNTRANSLATED) if text else ""


def _refusal(text: str) -> str:
    reason, _, sentence = text.partition(": ")
    if reason not in REASON_TEXT and not reason.isupper():
        sentence = text  # no reason in front (a transaction that did not commit)
    return _translate(sentence, REFUSALS, REASON_TEXT.get(reason, UNTRANSLATED))


def _translate(text: str, rules: _Rules, fallback: str) -> str:
    for pattern, template in rules:
        match = pattern.fullmatch(text.strip())
        if match is not None:
            return template.format(**{k: _part(k, v) for k, v in match.groupdict().items()})
    return fallback


def _part(name: str, value: str) -> str:
    """A named part of a known sentence: put into Spanish by its name, or an identifier kept as
    it is (a table, a pot group, a number)."""
    if name == "inner":
        return in_spanish(value)
    if name == "refusal":
        return _refusal(value)
    if name == "state":
        return STATE_WORDS.get(value.lower(), "en otro estado")  # the domain's PAID, VOIDED...
    if name == "field":
        return FIELDS.get(value, "un dato")
    if name == "grpc":
        return GRPC_TEXT[value]
    if name == "seconds":
        return value.replace(".", ",")  # the decimal comma of Chile
    return value


@dataclass(slots=True)
class Link:
    """One connection the screen depends on."""

    name: str
    up: bool = False
    detail: str = "connecting"
    target: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "up": self.up,
            "detail": self.detail,
            "text": in_spanish(self.detail),
            "target": self.target,
        }


@dataclass(slots=True)
class Answer:
    """The service's answer to the dealer's last action on one prize."""

    award_id: str
    ok: bool
    message: str
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {
            "award_id": self.award_id,
            "ok": self.ok,
            "message": self.message,
            "text": in_spanish(self.message),
            "at": self.at,
        }


def table_json(view: device_pb2.TableView) -> dict[str, Any]:
    round_state = ROUND_STATES.get(view.round_state, "unknown")
    return {
        "table_id": view.table_id,
        "pot_group_id": view.pot_group_id,
        "round_id": view.round_id,
        "round_state": round_state,
        "round_state_text": ROUND_STATE_TEXT[round_state],
        "sign_value": view.sign_value,
        "progressive_open": view.progressive_open,
        "closed_reason": view.closed_reason,
        "closed_text": in_spanish(view.closed_reason),
        "device_connected": view.device_connected,
        # L4: every level of a group with several, the main first (its amount is sign_value);
        # none for a one-level group. The labels are the configuration's, shown as they are.
        "levels": [
            {"name": level.name, "label": level.label, "sign_value": level.sign_value}
            for level in view.levels
        ],
        # O1: a studio table's round, its bets counted (no seat is listed)
        "studio": studio_json(view.studio) if view.HasField("studio") else None,
        "seats": [
            {
                "seat": s.seat,
                "bet_credits": s.bet_credits,
                "bet": s.bet,
                "lamp": s.lamp,
                "locked": s.locked,
                "closed": s.closed,
                "forfeited": s.forfeited,
            }
            for s in view.seats
        ],
    }


def studio_json(studio: device_pb2.StudioRoundView) -> dict[str, Any]:
    """A studio table's round (O1, O5) as the screen shows it: counted, with its sentence."""
    text = f"{thousands(studio.bets)} {'apuesta' if studio.bets == 1 else 'apuestas'}"
    text += f" · ${thousands(studio.bet_total)} apostados"
    if studio.folded:
        text += f" · {thousands(studio.folded)} {'retirada' if studio.folded == 1 else 'retiradas'}"
    return {
        "seats": studio.seats,
        "bets": studio.bets,
        "bet_total": studio.bet_total,
        "folded": studio.folded,
        "text": text,
    }


def wallet_round_json(summary: payout_pb2.WalletRound) -> dict[str, Any]:
    """A studio round's winners by count and total (O3, O4, O9), and how far the players'
    wallets have paid them, in a Spanish sentence beside the figures."""
    winners = "ganador" if summary.winners == 1 else "ganadores"
    text = (
        f"{prize_text(summary.prize)} · {thousands(summary.winners)} {winners} · "
        f"${thousands(summary.total)} · pagados a billeteras {thousands(summary.paid)} "
        f"(${thousands(summary.paid_total)})"
    )
    if summary.awaiting_approval:
        waiting = "espera" if summary.awaiting_approval == 1 else "esperan"
        text += f" · {thousands(summary.awaiting_approval)} {waiting} aprobación"
    if summary.voided:
        text += f" · {thousands(summary.voided)} {'anulado' if summary.voided == 1 else 'anulados'}"
    return {
        "round_id": summary.round_id,
        "prize": summary.prize,
        "winners": summary.winners,
        "total": summary.total,
        "paid": summary.paid,
        "paid_total": summary.paid_total,
        "awaiting_approval": summary.awaiting_approval,
        "voided": summary.voided,
        "text": text,
    }


def thousands(number: int) -> str:
    """A whole number as the floor writes it: 12.345 (the page's es-CL format)."""
    return f"{number:,}".replace(",", ".")


def envy_text(payout: payout_pb2.Payout) -> str:
    """The hit an envy bonus is paid for (V1, V2) as the screen names it: ``por la posición 3``
    at this table, ``por la mesa DRW-1, posición 1`` for a linked table's hit; "" for a prize."""
    if not payout.HasField("envy_of"):
        return ""
    hit = payout.envy_of
    if hit.table_id == payout.table_id:
        return f"por la posición {hit.seat}"
    return f"por la mesa {hit.table_id}, posición {hit.seat}"


def payout_json(
    payout: payout_pb2.Payout, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """One prize to pay; ``labels`` (level name -> label, from the table's view) name its level
    (L4) as the signs do. A level the view does not name (no view yet) is not shown: its name is
    the configuration's identifier, not what the floor calls it."""
    awaiting = payout.state == payout_pb2.PAYOUT_STATE_AWAITING_APPROVAL
    state = PAYOUT_STATES.get(payout.state, "unknown")
    hit = payout.envy_of
    return {
        "award_id": payout.award_id,
        "round_id": payout.round_id,
        "seat": payout.seat,
        "prize": payout.prize,
        "prize_text": prize_text(payout.prize),
        "envy": payout.prize.startswith(ENVY_PREFIX),  # V1: a bonus for another seat's hit
        "level": payout.level,
        "level_text": (labels or {}).get(payout.level, ""),
        "envy_of": {"table_id": hit.table_id, "round_id": hit.round_id, "seat": hit.seat}
        if payout.HasField("envy_of")
        else None,
        "envy_text": envy_text(payout),
        "amount": payout.amount,
        "cards": list(payout.cards),
        "state": state,
        "state_text": PAYOUT_STATE_TEXT[state],
        "payable": payout.state in PAYABLE,
        "approver": WHO_APPROVES if awaiting else "",
        "order": payout.order,
    }


class Screen:
    """The terminal's state; ``changed`` wakes every open page."""

    def __init__(self, table_id: str, dealer: str) -> None:
        self.table_id = table_id
        self.dealer = dealer
        self.gateway = Link("gateway")
        self.payout = Link("payout")
        self.table: device_pb2.TableView | None = None
        self.payouts: list[payout_pb2.Payout] = []
        self.wallet_rounds: list[payout_pb2.WalletRound] = []  # O9: a studio table's winners
        self.answers: list[Answer] = []
        self.version = 0
        self._changed = asyncio.Event()

    def _touch(self) -> None:
        self.version += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_changed(self, version: int) -> None:
        """Returns once the state is newer than ``version``."""
        while self.version <= version:
            await self._changed.wait()

    def link(self, link: Link, up: bool, detail: str, target: str = "") -> None:
        if (link.up, link.detail, link.target) != (up, detail, target or link.target):
            link.up, link.detail, link.target = up, detail, target or link.target
            self._touch()

    def table_view(self, view: device_pb2.TableView) -> None:
        self.table = view
        self._touch()

    def open_payouts(
        self,
        payouts: list[payout_pb2.Payout],
        wallet_rounds: list[payout_pb2.WalletRound] | None = None,
    ) -> None:
        self.payouts = list(payouts)
        self.wallet_rounds = list(wallet_rounds or [])
        self._touch()

    def answer(self, answer: Answer) -> None:
        self.answers = [answer, *self.answers][:10]
        self._touch()

    def payable(self, award_id: str) -> str:
        """Why ``award_id`` cannot be confirmed from this screen now ("" when it can be sent;
        the payout service still decides); in the log's English, shown by :func:`in_spanish`."""
        if not self.payout.up:
            return f"no link to the payout service ({self.payout.detail}): nothing can be paid"
        if not self.gateway.up:
            return f"no link to the table's gateway ({self.gateway.detail}): nothing can be paid"
        if not award_id:
            return "no award named"
        return ""

    def level_labels(self) -> dict[str, str]:
        """Level name -> its label, from the table's view (L4); empty for one level."""
        levels = self.table.levels if self.table is not None else ()
        return {level.name: level.label for level in levels}

    def to_json(self) -> dict[str, Any]:
        return {
            "table_id": self.table_id,
            "dealer": self.dealer,
            "version": self.version,
            "links": {"gateway": self.gateway.to_json(), "payout": self.payout.to_json()},
            "table": None if self.table is None else table_json(self.table),
            "payouts": [payout_json(p, self.level_labels()) for p in self.payouts],
            "wallet_rounds": [wallet_round_json(r) for r in self.wallet_rounds],
            "answers": [a.to_json() for a in self.answers],
        }
