"""Money: whole pesos at every boundary, exact integers inside (rules M1-M3).

Unit
    Balances are held as Python integers in **picopesos** (``MINOR_PER_PESO = 10**12`` minor units
    per peso). Percentages are integers in **parts per million** of the whole (``PPM``; 12.5 % is
    125_000 ppm). Configuration may state a percentage with at most four decimals.

Why that unit makes every contribution exact
    A bet of ``b`` whole pesos with commission ``c`` ppm allocates to a pot with share ``p`` ppm
    exactly ``b * (PPM - c) * p`` minor units, and the commission is ``b * c * PPM`` minor units:
    ``b*c*PPM + sum_i b*(PPM-c)*p_i == b * PPM * PPM == b * MINOR_PER_PESO`` when the shares sum to
    100 %. No contribution is ever rounded, so no fraction of a peso is created or lost (C2, C3).

Rounding (the only place it happens)
    * A percentage prize is computed on the exact main balance and **floored** to whole pesos; the
      fraction stays in the pot (S6).
    * A sign shows the main balance **floored** to whole pesos (M3).
    * An equal split of a whole-peso prize between n winners gives each ``amount // n`` pesos and
      the whole remainder ``amount % n`` to the lowest seat (S3).
    Nothing else rounds. Binary floats are never used.
"""

from __future__ import annotations

import re
from fractions import Fraction

MINOR_PER_PESO = 10**12
PPM = 10**6
assert PPM * PPM == MINOR_PER_PESO

_DECIMAL = re.compile(r"^(\d+)(?:\.(\d+))?$")


class MoneyError(ValueError):
    """An amount or percentage that cannot be represented exactly."""


def pesos(amount: int) -> int:
    """Whole pesos to minor units."""
    return amount * MINOR_PER_PESO


def parse_amount(value: int | str) -> int:
    """A non-negative amount of pesos (whole int, or exact decimal string) to minor units.

    ``"1000.75"`` is accepted; anything finer than a picopeso, negative, or a float is refused.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise MoneyError(f"amount must be an integer or a decimal string, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise MoneyError(f"amount must not be negative, got {value}")
        return pesos(value)
    match = _DECIMAL.match(value.strip()) if len(value) <= 40 else None
    if not match:
        raise MoneyError(f"amount {value[:50]!r} is not a non-negative decimal number")
    whole, fraction = match.group(1), match.group(2) or ""
    if len(fraction) > 12:
        raise MoneyError(f"amount {value!r} has more than 12 decimals (finer than the minor unit)")
    return int(whole) * MINOR_PER_PESO + int(fraction.ljust(12, "0") or "0")


def format_amount(minor: int) -> str:
    """Minor units to an exact decimal string, no trailing zeros: ``"1000.75"``, ``"500000"``."""
    sign = "-" if minor < 0 else ""
    whole, fraction = divmod(abs(minor), MINOR_PER_PESO)
    if fraction == 0:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{str(fraction).rjust(12, '0').rstrip('0')}"


def floor_pesos(minor: int) -> int:
    """Minor units floored to whole pesos (M3, S6)."""
    return minor // MINOR_PER_PESO


def as_fraction(minor: int) -> Fraction:
    """Minor units as an exact rational number of pesos (for reports)."""
    return Fraction(minor, MINOR_PER_PESO)


def parse_percent(value: int | str) -> int:
    """A percentage (``"12.5"``, ``10``) to parts per million; at most four decimals."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise MoneyError(f"percentage must be an integer or a decimal string, got {value!r}")
    text = str(value).strip()
    match = _DECIMAL.match(text) if len(text) <= 40 else None
    if not match:
        raise MoneyError(f"percentage {text[:50]!r} is not a non-negative decimal number")
    whole, fraction = match.group(1), match.group(2) or ""
    if len(fraction) > 4:
        raise MoneyError(f"percentage {value!r} has more than four decimals")
    ppm = int(whole) * 10_000 + int(fraction.ljust(4, "0") or "0")
    if ppm > PPM:
        raise MoneyError(f"percentage {value!r} is above 100")
    return ppm


def format_percent(ppm: int) -> str:
    """Parts per million to a percentage string: 125_000 -> ``"12.5"``."""
    whole, fraction = divmod(ppm, 10_000)
    return f"{whole}" if fraction == 0 else f"{whole}.{str(fraction).rjust(4, '0').rstrip('0')}"


def percent_of_floored(minor: int, ppm: int) -> int:
    """``ppm`` of an exact balance, floored to whole pesos (S6)."""
    return (minor * ppm) // (PPM * MINOR_PER_PESO)


def split_equally(amount: int, seats: list[int]) -> dict[int, int]:
    """Split whole pesos between winners: equal parts, the remainder to the lowest seat (S3; at a
    studio table every winning bet, O4). One pass: 10,000 winners cost 10,000 entries."""
    share, remainder = divmod(amount, len(seats))
    parts = dict.fromkeys(seats, share)
    parts[min(seats)] += remainder
    return parts
