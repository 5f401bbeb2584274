"""How times, counts and fractions are shown to a person: one place, so every table,
figure and terminal line uses the same units. Data files keep seconds and fractions, with
the unit in the column name (``wait_s``); what a person reads is chosen per magnitude and
labelled.

>>> fmt_duration(42), fmt_duration(150), fmt_duration(9000), fmt_duration(3 * 86400)
('42 s', '2.5 min', '2.5 h', '3.0 days')
>>> duration_unit(7200)
('h', 3600.0)
>>> fmt_percent(0.6963), fmt_points(-0.069)
('69.6%', '-6.9 points')
>>> fmt_count(1234567)
'1,234,567'
"""

from __future__ import annotations

MINUTE_S = 60.0
HOUR_S = 3600.0
DAY_S = 86400.0


def duration_unit(max_seconds: float) -> tuple[str, float]:
    """A unit in which ``max_seconds`` reads well: (name, seconds per unit). Under 2 min:
    s; under 2 h: min; under 3 days: h; else days."""
    m = abs(max_seconds)
    if m < 2 * MINUTE_S:
        return "s", 1.0
    if m < 2 * HOUR_S:
        return "min", MINUTE_S
    if m < 3 * DAY_S:
        return "h", HOUR_S
    return "days", DAY_S


def fmt_duration(seconds: float | None, *, unit: tuple[str, float] | None = None) -> str:
    """``seconds`` in its own unit (or the given one), one decimal except for seconds."""
    if seconds is None:
        return "-"
    name, div = unit or duration_unit(seconds)
    value = seconds / div
    if name == "s":
        return f"{value:,.0f} s"
    return f"{value:,.1f} {name}"


def fmt_percent(fraction: float | None, digits: int = 1) -> str:
    """A fraction as a percentage: 0.6963 -> '69.6%'."""
    return "-" if fraction is None else f"{100 * fraction:.{digits}f}%"


def fmt_points(fraction_diff: float | None) -> str:
    """A difference of fractions in percentage points, signed."""
    return "-" if fraction_diff is None else f"{100 * fraction_diff:+.1f} points"


def fmt_count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def fmt_number(x: float | None, digits: int = 2) -> str:
    """A plain number, never in scientific notation."""
    if x is None:
        return "-"
    return f"{x:,.{digits}f}"
