"""Java's Double.toString, for what Kafka prints or stores as a Java double (a quota
described by kafka-configs.sh, a DOUBLE quota written to ZooKeeper)."""

from __future__ import annotations

import decimal
import math


def java_double(value: float) -> str:
    """The shortest digits that read back as `value` (Java 19+; Python's repr finds the
    same), plain from 10^-3 up to 10^7 with at least one decimal, else computerized
    scientific notation (1.0E7, 2.5E-4)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    magnitude = abs(value)
    if magnitude == 0:
        return sign + "0.0"
    d = decimal.Decimal(repr(magnitude))
    if 1e-3 <= magnitude < 1e7:
        whole, _, fraction = format(d, "f").partition(".")
        return f"{sign}{whole}.{fraction.rstrip('0') or '0'}"
    digits = "".join(str(x) for x in d.normalize().as_tuple().digits)
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{d.adjusted()}"
