"""The HTML pieces of `jackpot report`'s document (:mod:`jackpot.tools.report_document`): tables
of escaped cells, fact tables, number cells. Pure."""

from __future__ import annotations

import html
from collections.abc import Sequence


def table(
    head: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int], css: str = ""
) -> str:
    """A table whose cells are already escaped HTML; ``widths`` in percent of the table."""
    cols = "".join(f'<col style="width:{width}%">' for width in widths)
    header = "".join(f"<th>{escape(cell)}</th>" for cell in head)
    body = "".join(
        "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return (
        f"<table class='{css}'><colgroup>{cols}</colgroup><thead><tr>{header}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def facts(pairs: Sequence[tuple[str, str]]) -> str:
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in pairs)
    return f"<table class='facts'><tbody>{rows}</tbody></table>"


def number(text: str) -> str:
    """A number's cell, right-aligned."""
    return f"<td class='n'>{escape(text)}</td>"


def none(text: str) -> str:
    return f"<p><em>{escape(text)}</em></p>"


def escape(text: str) -> str:
    return html.escape(text, quote=True)
