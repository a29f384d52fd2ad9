"""Kubernetes resource quantities ("100m", "1.5", "128Gi", "1e3"), parsed exactly.

One parser for the simulated scheduler (which must judge requests as kube-scheduler does)
and the planned placement strategy (which predicts what that scheduler will accept): if the
two read a quantity differently, the planner would promise room the scheduler refuses. It
is pure and imports nothing of the project, so both sides of the sim/controller layering
may use it. (The CEL library in sim/cel.py keeps its own Decimal-based quantity type: CEL
prints and adds quantities, which wants decimal text, not a fraction.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Final

__all__ = ["parse_quantity"]

_QUANTITY_RE: Final = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$"
)
_SUFFIX_FACTORS: Final[Mapping[str, Fraction]] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def parse_quantity(q: str | int | float) -> Fraction | int:
    """Parse a Kubernetes resource quantity ("100m", "1.5", "128Gi", "1G", "1e3") exactly.

    Exact rational arithmetic, because "100m" of CPU must compare equal to "0.1" and memory in
    bytes must not lose units to float rounding. Returns an `int` when the value is integral.
    Raises ValueError for anything kube-apiserver would reject as a quantity.
    """
    if isinstance(q, bool):
        raise ValueError(f"quantities must match the regular expression, got {q!r}")
    if isinstance(q, int):
        return q
    if isinstance(q, float):
        if not math.isfinite(q):
            raise ValueError(f"quantity must be finite, got {q!r}")
        value = Fraction(repr(q))
    elif isinstance(q, str):
        m = _QUANTITY_RE.match(q)
        if m is None:
            raise ValueError(
                f"quantities must match the regular expression "
                f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {q!r}"
            )
        number, exponent, suffix = m.group(1), m.group(2), m.group(3) or ""
        value = Fraction(number)
        if exponent:
            exp = int(exponent[1:])
            if abs(exp) > 100:
                raise ValueError(f"quantity exponent out of range: {q!r}")
            value *= Fraction(10) ** exp
        else:
            value *= _SUFFIX_FACTORS[suffix]
    else:
        raise ValueError(f"quantity must be a string or number, got {type(q).__name__}")
    return value.numerator if value.denominator == 1 else value
