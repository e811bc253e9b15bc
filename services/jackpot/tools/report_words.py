"""How `jackpot report`'s document writes words, amounts and dates, in Spanish or English (R1).

A :class:`Style` is the document's language and the casino's time zone: amounts as the floor
writes them (``$1.275.000`` in Spanish, ``$1,275,000`` in English; an exact fraction of a peso,
which only a pot's balance has, follows the decimal separator and is never rounded, rule M1),
percentages (``12,5 %``), and instants in the casino's zone (``02-12-2026 14:05:03``). The words
are :data:`WORDS`, one entry per phrase in both languages: a phrase missing in one of them is a
``KeyError`` in the tests, not an English word on a Spanish page. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from jackpot.domain.hands import PRIZE_NAMES, prize_name
from jackpot.domain.money import MINOR_PER_PESO, format_percent

LANGUAGES = ("es", "en")

WORDS: dict[str, tuple[str, str]] = {
    # key: (Spanish, English)
    "title": ("Informe del pozo progresivo", "Progressive jackpot report"),
    "casino": ("Casino", "Casino"),
    "period": ("Período", "Period"),
    "from": ("desde", "from"),
    "to": ("hasta", "to"),
    "zone": ("Horas en", "Times in"),
    "generated": ("Emitido", "Issued"),
    "source": ("Fuente", "Source"),
    "source_text": (
        "solo el libro mayor del sistema ({records} registros leídos); cada cifra se recalcula "
        "desde sus asientos (D4, M2)",
        "the system's ledger alone ({records} records read); every figure is computed again "
        "from its entries (D4, M2)",
    ),
    "source_days_text": (
        "el libro mayor del sistema ({records} registros leídos) y {days} días ya emitidos de este "
        "período, cada uno recalculado desde sus asientos al emitirse y unido al siguiente donde "
        "sus saldos coinciden (D4, M2)",
        "the system's ledger ({records} records read) and {days} days of this period already "
        "issued, each computed from its entries when it was issued and joined to the next where "
        "their books meet (D4, M2)",
    ),
    "software": ("Software", "Software"),
    "software_ok": (
        "sha256:{digest}, verificado contra su manifiesto (R6)",
        "sha256:{digest}, verified against its manifest (R6)",
    ),
    "software_bad": ("NO VERIFICADO: {why}", "NOT VERIFIED: {why}"),
    "verdict": ("Dictamen", "Verdict"),
    "all_reconcile": (
        "Los libros de todos los grupos de pozos cuadran en este período (M2).",
        "The books of every pot group reconcile for this period (M2).",
    ),
    "not_reconcile": (
        "ESTOS LIBROS NO CUADRAN: {why}",
        "THESE BOOKS DO NOT RECONCILE: {why}",
    ),
    "groups": ("Grupos de pozos", "Pot groups"),
    "group": ("Grupo de pozos", "Pot group"),
    "reconciles": ("cuadra", "reconciles"),
    "does_not_reconcile": ("NO CUADRA", "DOES NOT RECONCILE"),
    "no_groups": ("Ningún grupo de pozos tiene asientos.", "No pot group has entries."),
    "figures": ("Cifras del período", "The period's figures"),
    "figure": ("Cifra", "Figure"),
    "amount": ("Monto", "Amount"),
    "collected": ("Recaudado (apuestas)", "Collected (bets)"),
    "commission": ("Comisión del casino (C2)", "Casino commission (C2)"),
    "house_advances": ("Aportes del casino (C4, S7, S8)", "House advances (C4, S7, S8)"),
    "overflow": ("Traspasos por tope (C5)", "Overflow at ceilings (C5)"),
    "awarded": ("Premios otorgados", "Prizes awarded"),
    "award_count": ("Número de premios", "Number of prizes"),
    "split": ("Mesas presenciales y de estudio (O1)", "Land and studio tables (O1)"),
    "land": ("Mesas presenciales", "Land tables"),
    "studio": ("Mesas de estudio", "Studio tables"),
    "total": ("Total", "Total"),
    "land_short": ("presencial", "land"),
    "studio_short": ("estudio", "studio"),
    "total_short": ("total", "total"),
    "split_note": (
        "Mesas de estudio en el período: {tables}. Cada cifra presencial más la de estudio es el "
        "total del período; el informe lo verifica (si no, no cuadra).",
        "Studio tables in the period: {tables}. Each land figure plus its studio figure is the "
        "period's total; the report checks it (else it does not reconcile).",
    ),
    "opening_from": ("Libros de apertura desde", "Opening books from"),
    "first_entry": ("el primer asiento del libro mayor", "the ledger's first entry"),
    "checkpoint_at": ("el punto de control de {at}", "the checkpoint of {at}"),
    "reconciliation": ("Cuadratura (M2)", "Reconciliation (M2)"),
    "opening_pots": ("pozos de apertura", "opening pots"),
    "m2_collected": ("recaudado", "collected"),
    "m2_house_advances": ("aportes del casino", "house advances"),
    "m2_commission": ("comisión del casino", "casino commission"),
    "m2_awarded": ("premios otorgados", "prizes awarded"),
    "closing_pots": ("pozos de cierre", "closing pots"),
    "earlier_payments": (
        "Pagos o anulaciones de premios anteriores a lo leído: {count} (los cuadra jackpot audit)",
        "Payments or voids of awards made before the records read: {count} (jackpot audit "
        "matches them)",
    ),
    "problem": ("Problema", "Problem"),
    "pots": ("Pozos", "Pots"),
    "pot": ("Pozo", "Pot"),
    "opening": ("Apertura", "Opening"),
    "received": ("Recibido", "Received"),
    "closing": ("Cierre", "Closing"),
    "prizes": ("Premios por mano", "Prizes by hand"),
    "hand": ("Mano", "Hand"),
    "hits": ("Aciertos", "Hits"),
    "configs": ("Configuración vigente (C7)", "Configuration in force (C7)"),
    "version": ("Versión", "Version"),
    "base": ("Base del pozo principal (C4)", "Main pot base (C4)"),
    "min_max_bet": ("Apuesta mínima / máxima", "Bet minimum / maximum"),
    "proposed": ("Propuesta", "Proposed"),
    "by": ("por", "by"),
    "reason": ("Motivo", "Reason"),
    "activated": ("Activada", "Activated"),
    "pending": ("pendiente (espera el próximo reinicio del pozo)", "pending (waits for a reset)"),
    "share": ("Porcentaje (C3)", "Share (C3)"),
    "ceiling": ("Tope (C5)", "Ceiling (C5)"),
    "overflow_to": ("Excedente a", "Overflow to"),
    "none": ("—", "—"),
    "paytable": ("Tabla de pagos", "Paytable"),
    "prize": ("Premio", "Prize"),
    "fixed": ("{multiple} × la apuesta", "{multiple} × the bet"),
    "percent_of_main": ("{percent} del pozo principal", "{percent} of the main pot"),
    "cap": ("tope {cap} × la apuesta (S4)", "at most {cap} × the bet (S4)"),
    "mystery": ("Premio misterioso (X2)", "Mystery prize (X2)"),
    "mystery_range": (
        "del pozo {pot}, entre {low} y {high}",
        "from pot {pot}, between {low} and {high}",
    ),
    "percent_of_level": ("{percent} del nivel {level}", "{percent} of level {level}"),
    "envy_bonus": (
        "envidia de {amount} del nivel {level} a los demás asientos (V1)",
        "envy bonus of {amount} from level {level} to the other seats (V1)",
    ),
    "envy_linked": (" y a las mesas enlazadas (V2)", " and at the linked tables (V2)"),
    "levels": ("Niveles (L1-L4)", "Levels (L1-L4)"),
    "level": ("Nivel", "Level"),
    "level_collected": ("Recaudado", "Collected"),
    "level_prizes": ("Premios pagados", "Prizes paid"),
    "level_envy": ("Envidias pagadas (V1)", "Envy paid (V1)"),
    "level_from_reserves": ("Recarga desde reservas (L3)", "Refilled from reserves (L3)"),
    "level_from_house": ("Recarga del casino (L3, S8)", "Refilled by the house (L3, S8)"),
    "level_reserves": ("Reservas al cierre", "Reserves at closing"),
    "levels_chart": ("Cada nivel en el período", "Each level over the period"),
    "charts": ("Gráficos", "Charts"),
    "main_chart": ("Pozo principal durante el período", "The main pot over the period"),
    "hourly_chart": ("Recaudación por hora", "Collected per hour"),
    "nothing": ("nada en el período", "nothing in the period"),
    "annex": ("Anexo (R1)", "Annex (R1)"),
    "annex_text": (
        "{name}: {rows} filas, una por premio del período, más la cabecera; SHA-256 {digest}",
        "{name}: {rows} rows, one per prize of the period, and its header; SHA-256 {digest}",
    ),
    "annex_missing": ("no escrito", "not written"),
    "awards_in_annex": (
        "Los {count} premios del período están, uno por fila, en el anexo {name}, ligado a este "
        "documento por su SHA-256 (portada); aquí, los últimos 25.",
        "The period's {count} prizes are, one a row, in the annex {name}, bound to this document "
        "by its SHA-256 (cover); here, the last 25.",
    ),
    "last_awards": ("Últimos 25 premios (R1)", "The last 25 prizes (R1)"),
    "no_awards": ("ningún premio", "no prize"),
    "table": ("Mesa", "Table"),
    "seat": ("Asiento", "Seat"),
    "round": ("Ronda", "Round"),
    "occurred": ("Ocurrido", "Occurred"),
    "approved_by": ("Aprobado por", "Approved by"),
    "paid_by": ("Pagado por", "Paid by"),
    "paid_at": ("Pagado", "Paid"),
    "not_read": ("no leído (antes de {at})", "not read (before {at})"),
    "page": ("Página", "Page"),
    "of": ("de", "of"),
}

HANDS = PRIZE_NAMES  # (Spanish, English) per prize
POTS: dict[str, tuple[str, str]] = {
    "main": ("principal", "main"),
    "mystery": ("misterio", "mystery"),
}

CHILE = ZoneInfo("America/Santiago")
NOT_READ_PREFIX = "not read (before "  # report_model.not_read's words, read back


@dataclass(frozen=True, slots=True)
class Style:
    """The document's language and the casino's time zone."""

    lang: str = "es"
    zone: ZoneInfo = CHILE

    def __post_init__(self) -> None:
        if self.lang not in LANGUAGES:
            raise ValueError(f"language {self.lang!r}: the report is written in {LANGUAGES}")

    @property
    def index(self) -> int:
        return LANGUAGES.index(self.lang)

    def words(self, key: str, **values: object) -> str:
        return WORDS[key][self.index].format(**values)

    def hand(self, name: str) -> str:
        """A prize's name; an envy bonus as ``Envidia: <hand>`` (V1)."""
        return prize_name(name, self.index) or name

    def pot(self, name: str) -> str:
        return POTS[name][self.index] if name in POTS else name

    def number(self, whole: int) -> str:
        """A whole number with the language's thousands separator."""
        grouped = f"{abs(whole):,}"
        return ("-" if whole < 0 else "") + (
            grouped.replace(",", ".") if self.lang == "es" else grouped
        )

    def money(self, minor: int) -> str:
        """Minor units as the floor writes them, exactly: ``$1.275.000`` or ``$12.345,5``."""
        whole, fraction = divmod(abs(minor), MINOR_PER_PESO)
        text = "$" + self.number(whole)
        if fraction:
            decimals = str(fraction).rjust(12, "0").rstrip("0")
            text += ("," if self.lang == "es" else ".") + decimals
        return ("-" if minor < 0 else "") + text

    def pesos(self, whole: int) -> str:
        return self.money(whole * MINOR_PER_PESO)

    def percent(self, ppm: int) -> str:
        text = format_percent(ppm)
        return f"{text.replace('.', ',')} %" if self.lang == "es" else f"{text}%"

    def moment(self, ns: int) -> datetime:
        return datetime.fromtimestamp(ns // 10**9, UTC).astimezone(self.zone)

    def when(self, ns: int, seconds: bool = True) -> str:
        """An instant in the casino's zone: ``02-12-2026 14:05:03`` (es), ``2026-12-02 ...``."""
        day = "%d-%m-%Y" if self.lang == "es" else "%Y-%m-%d"
        return self.moment(ns).strftime(f"{day} %H:%M{':%S' if seconds else ''}")

    def when_text(self, text: str) -> str:
        """An instant the figures wrote as ISO 8601 (or as 'not read (before T)'), in the zone."""
        if not text:
            return ""
        if text.startswith(NOT_READ_PREFIX):
            return self.words("not_read", at=self.when_text(text[len(NOT_READ_PREFIX) : -1]))
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return text
        return self.when(int(moment.timestamp()) * 10**9)

    def offset(self, ns: int) -> str:
        """The zone's offset from UTC at ``ns``: ``UTC−03:00``."""
        shift = self.moment(ns).strftime("%z")
        return f"UTC{shift[0].replace('-', '−')}{shift[1:3]}:{shift[3:]}"

    def zone_line(self, start_ns: int, end_ns: int) -> str:
        """The zone and its offsets over a period (two when a clock change falls inside it)."""
        offsets = dict.fromkeys([self.offset(start_ns), self.offset(end_ns)])
        return f"{self.zone.key} ({', '.join(offsets)})"
