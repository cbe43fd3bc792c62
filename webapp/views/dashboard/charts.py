"""Server-rendered line charts: the geometry of axes, ticks and points, for an SVG template."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from flask_babel import format_date, format_decimal

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 72, 24, 44, 44  # room for the y ticks, the last point, the dates
GAP = 150  # the least distance between two dates on the x axis


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    value: int
    when: datetime
    label: str  # what the point stands for, shown in its tooltip
    kind: str  # a CSS class: the series it belongs to


def nice_step(top: float, ticks: int = 4) -> int:
    """A round step (1, 2 or 5 times a power of ten) that reaches `top` in about `ticks`."""
    raw = max(top / ticks, 1)
    power = 10 ** math.floor(math.log10(raw))
    return int(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def line_chart(series: list[tuple[datetime, int, str, str]], max_dates: int = 5) -> dict | None:
    """A chart of (when, value, label, kind) in time order: the plot box, a point per value
    placed by its time, y ticks from 0 past the largest value, and a few dates along x.
    None without two points."""
    if len(series) < 2:
        return None
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = nice_step(max(value for _, value, _, _ in series))
    top = step * max(1, math.ceil(max(value for _, value, _, _ in series) / step))
    first, last = series[0][0], series[-1][0]
    span = (last - first).total_seconds() or 1.0

    def x_of(when: datetime) -> float:
        return LEFT + plot_w * (when - first).total_seconds() / span

    def y_of(value: int) -> float:
        return TOP + plot_h * (1 - value / top)

    points = [Point(round(x_of(when), 1), round(y_of(value), 1), value, when, label, kind)
              for when, value, label, kind in series]
    # The first and the last date always; between them, evenly spread points whose dates
    # stand far enough from their neighbours not to overlap (even in a phone's larger text).
    chosen = sorted({round(i * (len(points) - 1) / (max_dates - 1)) for i in range(max_dates)})
    shown = [points[0]]
    for point in (points[i] for i in chosen[1:-1]):
        if point.x - shown[-1].x >= GAP and points[-1].x - point.x >= GAP:
            shown.append(point)
    shown.append(points[-1])
    dates = [{"x": p.x, "label": format_date(p.when, "short"),
              "anchor": "start" if i == 0 else "end" if i == len(shown) - 1 else "middle"}
             for i, p in enumerate(shown)]
    return {
        "width": WIDTH, "height": HEIGHT, "left": LEFT, "right": WIDTH - RIGHT, "top": TOP,
        "bottom": HEIGHT - BOTTOM, "points": points,
        "path": " ".join(f"{p.x},{p.y}" for p in points),
        "ticks": [{"y": round(y_of(v), 1), "label": format_decimal(v)}
                  for v in range(0, top + 1, step)],
        "dates": dates, "first": first, "last": last,
    }
