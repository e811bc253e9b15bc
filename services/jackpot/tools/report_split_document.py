"""The land and studio columns of `jackpot report`'s document (O1; R1).

A group whose period had a studio table (linked at ``--from`` or since, or with books of one) is
shown split: on the cover, its collected, awarded and number of prizes at its land tables, at its
studio tables and in total; in its section, a table of those figures and the commission, with
the studio tables named, and its prizes by hand per kind of table. A group without one is shown
as before studio tables existed: an inspector of a land casino reads no column of zeros that
suggests a studio, and the split appears the period a studio table is linked. The cover is split
when any of its groups is. Each land figure plus its studio figure is the total beside it: the
report does not reconcile otherwise (``GroupReport.split_problems``).
"""

from __future__ import annotations

from collections.abc import Callable

from jackpot.tools.report_html import escape, none, number, table
from jackpot.tools.report_model import GroupReport, Report
from jackpot.tools.report_split import TableBooks
from jackpot.tools.report_words import Style

Figure = Callable[[TableBooks | GroupReport], str]


def split_cover(report: Report) -> bool:
    """Whether the cover shows land and studio columns: a group of it had a studio table."""
    return any(group.has_studio for group in report.groups)


def cover_table(report: Report, style: Style, verdict: Callable[[GroupReport], str]) -> str:
    """The cover's groups when one had a studio table: under each of collected, awarded and the
    number of prizes, its land, studio and total columns (a header of two rows); ``verdict``
    gives a group's verdict cell."""
    w = style.words
    names = [w("collected"), w("awarded"), w("award_count")]
    kinds = [w("land_short"), w("studio_short"), w("total_short")] * len(names)
    top = "".join(f"<th colspan='3'>{escape(name)}</th>" for name in names)
    head = (
        f"<tr><th rowspan='2'>{escape(w('group'))}</th>{top}"
        f"<th rowspan='2'>{escape(w('verdict'))}</th></tr>"
        f"<tr>{''.join(f'<th>{escape(kind)}</th>' for kind in kinds)}</tr>"
    )
    body = "".join(
        f"<tr><td>{escape(group.group_id)}</td>{''.join(_cover_cells(group, style))}"
        f"<td>{verdict(group)}</td></tr>"
        for group in report.groups
    )
    widths = (9, *(10,) * 6, *(7,) * 3, 10)
    cols = "".join(f'<col style="width:{width}%">' for width in widths)
    return (
        f"<table class='cover-split'><colgroup>{cols}</colgroup><thead>{head}</thead>"
        f"<tbody>{body}</tbody></table>"
    )


def _cover_cells(group: GroupReport, style: Style) -> list[str]:
    """One group's land, studio and total of collected, awarded and the number of prizes."""
    figures: list[Figure] = [
        lambda b: style.money(b.collected),
        lambda b: style.money(b.awarded),
        lambda b: style.number(b.award_count),
    ]
    sources: list[TableBooks | GroupReport] = [group.land, group.studio, group]
    return [number(figure(source)) for figure in figures for source in sources]


def split_section(group: GroupReport, style: Style) -> str:
    """A group with a studio table: its figures at land and at studio tables and in total, and
    its studio tables named; nothing for a land-only period (its section is as it was)."""
    if not group.has_studio:
        return ""
    w, money = style.words, style.money
    books: list[TableBooks | GroupReport] = [group.land, group.studio, group]
    shown: list[tuple[str, Figure]] = [
        ("collected", lambda b: money(b.collected)),
        ("commission", lambda b: money(b.commission)),
        ("awarded", lambda b: money(b.awarded)),
        ("award_count", lambda b: style.number(b.award_count)),
    ]
    rows = [[escape(w(key)), *(number(show(source)) for source in books)] for key, show in shown]
    head = [w("figure"), w("land"), w("studio"), w("total")]
    tables = ", ".join(sorted(group.studio_tables)) or "—"
    note = w("split_note", tables=tables)
    return (
        f"<h3>{escape(w('split'))}</h3>"
        + table(head, rows, widths=(34, 22, 22, 22), css="split")
        + f"<p class='split-note'>{escape(note)}</p>"
    )


def prizes_section(group: GroupReport, style: Style) -> str:
    """Hits and pesos per hand; per kind of table too when the period had a studio table."""
    w = style.words
    prizes = group.prizes
    if not prizes:
        return f"<h3>{escape(w('prizes'))}</h3>{none(w('no_awards'))}"
    if not group.has_studio:
        rows = [
            [escape(style.hand(prize)), number(style.number(hits)), number(style.pesos(amount))]
            for prize, (hits, amount) in prizes.items()
        ]
        body = table([w("hand"), w("hits"), w("amount")], rows, (50, 20, 30), css="narrow")
        return f"<h3>{escape(w('prizes'))}</h3>{body}"
    rows = []
    for prize, total in prizes.items():
        cells = [escape(style.hand(prize))]
        for hits, amount in (group.land.prize(prize), group.studio.prize(prize), total):
            cells += [number(style.number(hits)), number(style.pesos(amount))]
        rows.append(cells)
    head = [w("hand")]
    for kind in ("land_short", "studio_short", "total_short"):
        head += [f"{w('hits')}: {w(kind)}", f"{w('amount')}: {w(kind)}"]
    body = table(head, rows, widths=(22, 11, 15, 11, 15, 11, 15), css="prizes-split")
    return f"<h3>{escape(w('prizes'))}</h3>{body}"


def table_cell(table_id: str, studio: bool, style: Style) -> str:
    """A prize's table in the list of the last prizes: a studio table's marked as one."""
    return f"{table_id} ({style.words('studio_short')})" if studio else table_id
