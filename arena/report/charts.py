"""Chart geometry for the HTML report: plain numbers for inline SVG.

The templates draw the SVG elements themselves (so every label goes through
Jinja's autoescape); this module only maps data to coordinates. Coordinates
are SVG user units (1 unit = 1 CSS pixel at 100% zoom), origin top left,
``y`` growing downwards. No JavaScript is needed to show a chart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from arena.results.rating import RatingPoint

#: Okabe and Ito's colour-blind-safe palette ("Color Universal Design", 2008).
PALETTE: Final = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#000000",
    "#B8A000",
)
#: Dash patterns that tell series apart once the palette repeats.
DASHES: Final = ("", "6 3", "2 3", "8 3 2 3")
#: Most points drawn per series; longer histories are thinned evenly.
MAX_POINTS: Final = 240


def style_of(index: int) -> dict[str, str]:
    """Colour and dash pattern of the ``index``-th series (0-based)."""
    return {
        "color": PALETTE[index % len(PALETTE)],
        "dash": DASHES[(index // len(PALETTE)) % len(DASHES)],
    }


def _thin(n: int, keep: int) -> list[int]:
    """At most ``keep`` indices of ``range(n)``, evenly spread, first and last kept."""
    if n <= keep:
        return list(range(n))
    return sorted({round(i * (n - 1) / (keep - 1)) for i in range(keep)})


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[lo, hi]``: steps of 1, 2 or 5 times a power of ten."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    ticks = []
    t = first
    while t <= hi + 1e-9:
        ticks.append(round(t, 10))
        t += step
    return ticks


def rating_history(
    history: Mapping[str, Sequence[RatingPoint]],
    order: Sequence[str],
    initial: tuple[float, float],
    games_total: int,
    width: int = 760,
    height: int = 300,
) -> dict[str, Any]:
    """Geometry of the rating-history chart: TrueSkill ``mu`` per entrant as a
    line, with a band of ``mu +/- sigma``, against the game's position in the
    schedule (``game_index``).

    Args:
        history: rating points per entrant (``RatingTable.history``).
        order: the entrants to draw, in legend order (their colours follow it).
        initial: ``(mu, sigma)`` before any game (drawn at the left edge).
        games_total: games in the schedule (the x axis' extent).
        width, height: size of the SVG in user units.

    Returns:
        ``width``, ``height``, ``plot`` (left, top, right, bottom), ``series``
        (per entrant: ``name``, ``color``, ``dash``, ``line`` and ``band`` as
        SVG ``points`` strings, ``last_mu``, ``last_sigma``), ``y_ticks`` and
        ``x_ticks`` (``pos`` and ``label``).
    """
    left, top, right, bottom = 48, 12, width - 12, height - 30
    mu0, sigma0 = initial
    lo, hi = mu0 - sigma0, mu0 + sigma0
    for name in order:
        for p in history.get(name, ()):
            lo, hi = min(lo, p.mu - p.sigma), max(hi, p.mu + p.sigma)
    pad = (hi - lo) * 0.04 or 1.0
    lo, hi = lo - pad, hi + pad
    x_max = max(1, games_total)

    def x(game_index: float) -> float:
        return left + (game_index + 1) / x_max * (right - left)

    def y(value: float) -> float:
        return bottom - (value - lo) / (hi - lo) * (bottom - top)

    series = []
    for i, name in enumerate(order):
        pts = [(-1.0, mu0, sigma0)] + [
            (float(p.game_index), p.mu, p.sigma) for p in history.get(name, ())
        ]
        pts = [pts[k] for k in _thin(len(pts), MAX_POINTS)]
        line = " ".join(f"{x(g):.1f},{y(m):.1f}" for g, m, _ in pts)
        upper = [f"{x(g):.1f},{y(m + s):.1f}" for g, m, s in pts]
        lower = [f"{x(g):.1f},{y(m - s):.1f}" for g, m, s in reversed(pts)]
        series.append(
            {
                "name": name,
                **style_of(i),
                "line": line,
                "band": " ".join(upper + lower),
                "last_mu": pts[-1][1],
                "last_sigma": pts[-1][2],
            }
        )
    # U+2212 for a negative tick, as every number of the report.
    y_ticks = [
        {"pos": round(y(v), 1), "label": f"{v:g}".replace("-", "\u2212")}
        for v in nice_ticks(lo, hi)
    ]
    x_ticks = [
        {"pos": round(x(v - 1), 1), "label": f"{int(v)}"}
        for v in nice_ticks(0, x_max, 6)
        if 0 <= v <= x_max
    ]
    return {
        "width": width,
        "height": height,
        "plot": {"left": left, "top": top, "right": right, "bottom": bottom},
        "series": series,
        "y_ticks": y_ticks,
        "x_ticks": x_ticks,
    }


def histogram(
    counts: Sequence[int],
    labels: Sequence[str],
    width: int = 560,
    height: int = 180,
) -> dict[str, Any]:
    """Geometry of a bar chart (one bar per count, labels under the bars).

    Returns:
        ``width``, ``height``, ``plot`` (left, top, right, bottom), ``bars``
        (``x``, ``y``, ``w``, ``h``, ``count``, ``label``, ``label_x``), and
        ``y_ticks`` (``pos``, ``label``).
    """
    left, top, right, bottom = 36, 10, width - 8, height - 24
    peak = max(counts) if counts else 0
    ticks = [t for t in nice_ticks(0, max(1, peak), 4) if t == int(t)]
    top_value = max([max(1, peak), *ticks])
    slot = (right - left) / max(1, len(counts))
    bars = []
    for i, (count, label) in enumerate(zip(counts, labels, strict=True)):
        h = count / top_value * (bottom - top)
        bars.append(
            {
                "x": round(left + i * slot + slot * 0.1, 1),
                "y": round(bottom - h, 1),
                "w": round(slot * 0.8, 1),
                "h": round(h, 1),
                "count": count,
                "label": label,
                "label_x": round(left + (i + 0.5) * slot, 1),
            }
        )
    y_ticks = [
        {"pos": round(bottom - t / top_value * (bottom - top), 1), "label": f"{int(t)}"}
        for t in ticks
    ]
    return {
        "width": width,
        "height": height,
        "plot": {"left": left, "top": top, "right": right, "bottom": bottom},
        "bars": bars,
        "y_ticks": y_ticks,
    }
