"""The inline SVG charts of `jackpot report`'s document (:mod:`jackpot.tools.report_document`),
drawn as wide as the page: the main pot over the period (its line thinned to the chart's
resolution, :func:`thin`), the collections per hour as bars, and for a group with levels a bar per
level and figure (L1-L4, V1). Whole pesos (M1); words, amounts and instants from the report's
:class:`~jackpot.tools.report_words.Style`."""

from __future__ import annotations

import html
from collections.abc import Sequence

from jackpot.domain.money import floor_pesos
from jackpot.tools.report_model import GroupReport, LevelRow
from jackpot.tools.report_words import Style

CHART_WIDTH, CHART_HEIGHT, PAD = 1000, 250, 56  # the SVG's units; it is drawn page-wide
TIME_TICKS = 6
CHART_SPANS = 500  # a line chart keeps the lowest and highest point of each of this many spans
HOUR_NS = 3600 * 10**9

# A level's figures in its table and its chart (L1-L4, V1): (words, LevelRow field, colour).
LEVEL_FIGURES = (
    ("level_collected", "collected", "#2e7d32"),
    ("level_prizes", "prizes", "#1565c0"),
    ("level_envy", "envy", "#8e24aa"),
    ("level_from_reserves", "refilled_from_reserves", "#f9a825"),
    ("level_from_house", "refilled_from_house", "#c62828"),
)


def level_chart(levels: Sequence[LevelRow], style: Style) -> str:
    """Per level, a bar per figure of LEVEL_FIGURES, as wide as the page, with its legend."""
    title = style.words("levels_chart")
    values = [[floor_pesos(getattr(lv, f)) for _, f, _ in LEVEL_FIGURES] for lv in levels]
    top = max(max(max(row) for row in values), 1)
    inner_w, inner_h = CHART_WIDTH - 2 * PAD, CHART_HEIGHT - 2 * PAD
    group_w = inner_w / len(levels)
    bar_w = group_w * 0.8 / len(LEVEL_FIGURES)
    shapes = []
    for index, (level, row) in enumerate(zip(levels, values, strict=True)):
        left = PAD + index * group_w + group_w * 0.1
        for slot, (value, (_, _, colour)) in enumerate(zip(row, LEVEL_FIGURES, strict=True)):
            height = value / top * inner_h
            shapes.append(
                f'<rect x="{left + slot * bar_w:.1f}" y="{PAD + inner_h - height:.1f}" '
                f'width="{max(1.0, bar_w - 2):.1f}" height="{height:.1f}" fill="{colour}"/>'
            )
        shapes.append(
            f'<text x="{left + group_w * 0.4:.1f}" y="{PAD + inner_h + 22}" '
            f'text-anchor="middle">{_e(level.label)}</text>'
        )
    bottom = PAD + inner_h
    axes = [
        f'<line x1="{PAD}" y1="{bottom}" x2="{PAD + inner_w}" y2="{bottom}" stroke="#000"/>',
        f'<text x="{PAD + 4}" y="{PAD - 4}">{_e(style.pesos(top))}</text>',
    ]
    legend = "".join(
        f'<rect x="{PAD + i * 190}" y="8" width="12" height="12" fill="{colour}"/>'
        f'<text x="{PAD + i * 190 + 16}" y="19">{_e(style.words(key))}</text>'
        for i, (key, _, colour) in enumerate(LEVEL_FIGURES)
    )
    return (
        f"<figure class='levels-chart'><figcaption>{_e(title)}</figcaption>"
        f'<svg role="img" aria-label="{_e(title)}" viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" '
        f'font-size="13" font-family="DejaVu Sans, sans-serif">'
        f"{''.join(axes)}{legend}{''.join(shapes)}</svg></figure>"
    )


def charts(group: GroupReport, style: Style) -> list[str]:
    hourly = sorted(group.collected_by_hour.items())
    return [
        f"<h3>{_e(style.words('charts'))}</h3>",
        _chart(style.words("main_chart"), group.main_series, 0, style),
        _chart(style.words("hourly_chart"), hourly, HOUR_NS, style),
    ]


def _chart(title: str, points: Sequence[tuple[int, int]], bar_ns: int, style: Style) -> str:
    """An SVG chart, as wide as the page, of whole-peso values over time: a line, or (``bar_ns``
    above 0) a bar per point spanning that long from its instant."""
    caption = f"<figcaption>{_e(title)}</figcaption>"
    if not points:
        return f"<figure>{caption}{_none(style.words('nothing'))}</figure>"
    if not bar_ns:
        points = thin(points)
    xs = [x for x, _ in points]
    ys = [floor_pesos(y) for _, y in points]
    left, right = min(xs), max(max(xs) + bar_ns, min(xs) + 1)
    top = max(max(ys), 1)
    inner_w, inner_h = CHART_WIDTH - 2 * PAD, CHART_HEIGHT - 2 * PAD

    def at(x: int, y: int) -> tuple[float, float]:
        return PAD + (x - left) / (right - left) * inner_w, PAD + inner_h - y / top * inner_h

    if bar_ns:
        shapes = "".join(
            f'<rect x="{at(x, y)[0] + 1:.1f}" y="{at(x, y)[1]:.1f}" '
            f'width="{max(1.0, at(x + bar_ns, y)[0] - at(x, y)[0] - 2):.1f}" '
            f'height="{PAD + inner_h - at(x, y)[1]:.1f}" fill="#1565c0"/>'
            for x, y in zip(xs, ys, strict=True)
        )
    else:
        line = " ".join(f"{at(x, y)[0]:.1f},{at(x, y)[1]:.1f}" for x, y in zip(xs, ys, strict=True))
        shapes = f'<polyline fill="none" stroke="#2e7d32" stroke-width="2.5" points="{line}"/>'
    return (
        f"<figure>{caption}"
        f'<svg role="img" aria-label="{_e(title)}" viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" '
        f'font-size="14" font-family="DejaVu Sans, sans-serif">'
        f"{_axes(left, right, top, inner_w, inner_h, style)}{shapes}</svg></figure>"
    )


def thin(points: Sequence[tuple[int, int]], spans: int = CHART_SPANS) -> list[tuple[int, int]]:
    """A line's points at the chart's resolution: of each of ``spans`` equal spans of time, its
    lowest and highest point in time order (a pot's climbs and resets stay where they are), and
    the last point; a line of no more points than that is kept whole."""
    if len(points) <= 2 * spans:
        return list(points)
    left, width = points[0][0], max(1, points[-1][0] - points[0][0])
    kept: list[tuple[int, int]] = []
    span: list[tuple[int, int]] = []
    current = 0
    for point in points:
        at = min(spans - 1, (point[0] - left) * spans // width)
        if at != current and span:
            kept += _extremes(span)
            span = []
        current = at
        span.append(point)
    kept += _extremes(span)
    if kept[-1] != points[-1]:
        kept.append(points[-1])
    return kept


def _extremes(span: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    low = min(span, key=lambda p: p[1])
    high = max(span, key=lambda p: p[1])
    return sorted({low, high})


def _axes(left: int, right: int, top: int, inner_w: int, inner_h: int, style: Style) -> str:
    """The axes, three amounts up the side and TIME_TICKS instants along the bottom."""
    bottom = PAD + inner_h
    parts = [
        f'<line x1="{PAD}" y1="{bottom}" x2="{PAD + inner_w}" y2="{bottom}" stroke="#000"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{bottom}" stroke="#000"/>',
    ]
    for share in (0, 1, 2):
        y = bottom - share * inner_h / 2
        parts.append(
            f'<line x1="{PAD}" y1="{y:.1f}" x2="{PAD + inner_w}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{PAD + 4}" y="{y - 4:.1f}">{_e(style.pesos(top * share // 2))}</text>'
        )
    long_period = right - left > 86_400 * 10**9
    for tick in range(TIME_TICKS):
        ns = left + (right - left) * tick // (TIME_TICKS - 1)
        x = PAD + inner_w * tick / (TIME_TICKS - 1)
        label = style.when(ns, seconds=False) if long_period else style.when(ns)[11:16]
        anchor = "start" if tick == 0 else "end" if tick == TIME_TICKS - 1 else "middle"
        parts.append(
            f'<text x="{x:.1f}" y="{bottom + 22}" text-anchor="{anchor}">{_e(label)}</text>'
        )
    return "".join(parts)


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _none(text: str) -> str:
    return f"<p><em>{_e(text)}</em></p>"
