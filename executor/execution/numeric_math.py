"""ln, exp, log and power on numeric, with the result scales PostgreSQL 15's
numeric.c chooses, and its answers for NaN and the infinities.

Why a module of its own: PostgreSQL does not round these to a fixed number
of digits; it estimates the decimal weight of the result
(``estimate_ln_dweight``, log10(e) times the argument for exp) and keeps at
least 16 significant digits, never fewer decimals than an input shows
(``numeric_ln``, ``numeric_exp``, ``log_var``).  The value is computed with
decimal at enough precision and rounded half away from zero to that scale.
"""
from __future__ import annotations

import decimal
import math

import numpy as np

from splitstream.protocol.errors import (DIVISION_BY_ZERO, INVALID_ARGUMENT_FOR_POWER, NUMERIC_VALUE_OUT_OF_RANGE,
                                         PgError)

D = decimal.Decimal
_MIN_SIG_DIGITS = 16
_MAX_DISPLAY_SCALE = 1000
_NAN = D("NaN")


def dscale(d: D) -> int:
    return max(0, -int(d.as_tuple().exponent)) if d.is_finite() else 0


def _groups(x: D) -> tuple[int, int, int]:
    """(weight, first, first two) of |x| in base-10000 digits, as NumericVar
    holds it: ``first two`` is first * 10000 + second when x has more digits."""
    a = abs(x).normalize()
    weight = a.adjusted() // 4
    first = int(a.scaleb(-4 * weight))
    rest = a.scaleb(-4 * weight) - first
    return weight, first, first * 10000 + int(rest.scaleb(4)) if rest else -1


def ln_dweight(x: D) -> int:
    """estimate_ln_dweight: the decimal weight of ln(x)."""
    if x <= 0:
        return 0
    if D("0.9") <= x <= D("1.1"):
        near = x - 1
        return 0 if near == 0 else near.adjusted()
    weight, first, two = _groups(x)
    digits, dweight = (first, weight * 4) if two < 0 else (two, weight * 4 - 4)
    ln_var = math.log(digits) + dweight * math.log(10)
    return int(math.log10(abs(ln_var))) if ln_var else 0


def _rounded(value: D, rscale: int) -> D:
    ctx = decimal.Context(prec=max(rscale + value.adjusted() + 5, 20), Emax=999999, Emin=-999999)
    return value.quantize(D(1).scaleb(-rscale), rounding=decimal.ROUND_HALF_UP, context=ctx)


def _scale(rscale: int, *inputs: D) -> int:
    return min(max(rscale, *(dscale(d) for d in inputs), 0), _MAX_DISPLAY_SCALE)


def _context(rscale: int, weight: int) -> decimal.Context:
    return decimal.Context(prec=rscale + max(weight, 0) + 30, Emax=999999, Emin=-999999)


def _check_log_argument(x: D) -> None:
    if x == 0:
        raise PgError("2201E", "cannot take logarithm of zero")
    if x < 0:
        raise PgError("2201E", "cannot take logarithm of a negative number")


def numeric_ln(x: D) -> D:
    if x.is_nan():
        return x
    _check_log_argument(x)
    if x.is_infinite():
        return x
    rscale = _scale(_MIN_SIG_DIGITS - ln_dweight(x), x)
    return _rounded(x.ln(_context(rscale, ln_dweight(x))), rscale)


def numeric_log(base: D, x: D) -> D:
    """log(base, x) = ln(x) / ln(base), at log_var's scale."""
    if base.is_nan() or x.is_nan():
        return _NAN
    _check_log_argument(base)
    _check_log_argument(x)
    if base.is_infinite() or x.is_infinite():
        if base.is_infinite() and x.is_infinite():
            return _NAN
        return D(0) if base.is_infinite() else x
    if base == 1:
        raise PgError(DIVISION_BY_ZERO, "division by zero")
    rscale = _scale(_MIN_SIG_DIGITS - (ln_dweight(x) - ln_dweight(base)), base, x)
    ctx = _context(rscale, abs(ln_dweight(x)) + abs(ln_dweight(base)) + 4)
    return _rounded(ctx.divide(x.ln(ctx), base.ln(ctx)), rscale)


def numeric_exp(x: D) -> D:
    if x.is_nan():
        return x
    if x.is_infinite():
        return x if x > 0 else D(0)
    val = max(min(float(x) * 0.434294481903252, 2000.0), -2000.0)
    rscale = _scale(_MIN_SIG_DIGITS - int(val), x)
    if abs(float(x)) >= 6000:
        if x > 0:
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
        return D(0).scaleb(-rscale)
    return _rounded(x.exp(_context(rscale, int(val) + 1)), rscale)


def power_domain(base_negative, base_zero, exp_negative, exp_fractional) -> None:
    """PostgreSQL's two refusals of x ^ y (numeric_power, dpow); arguments are
    booleans or boolean arrays over the non-NULL rows."""
    if np.any(base_zero & exp_negative):
        raise PgError(INVALID_ARGUMENT_FOR_POWER, "zero raised to a negative power is undefined")
    if np.any(base_negative & exp_fractional):
        raise PgError(INVALID_ARGUMENT_FOR_POWER, "a negative number raised to a non-integer power yields a complex result")


def _result_weight(x: D, y: D) -> float:
    """power_var's estimate of log10 of the result: ln(x) to about 8
    significant digits, times y at that scale, times 0.434294481903252."""
    local = max(8 - ln_dweight(abs(x)), 0)
    ctx = decimal.Context(prec=local + 40, Emax=999999, Emin=-999999)
    ln_base = _rounded(abs(x).ln(ctx), local)
    return float(_rounded(ctx.multiply(ln_base, y), local))


def _power_var_int_scale(x: D) -> int:
    return min(max(_MIN_SIG_DIGITS, dscale(x)), _MAX_DISPLAY_SCALE)


def numeric_power(x: D, y: D) -> D:
    """numeric ^ numeric with PostgreSQL 15's result scale (power_var and
    power_var_int): at least 16 significant digits, never fewer decimals
    than either input shows, at most 1000."""
    integral = y == y.to_integral_value()
    power_domain(x < 0, x == 0, y < 0, not integral)
    if x == 0 and not integral:
        return D(0).scaleb(-_MIN_SIG_DIGITS)
    if x == 0 or (x == 1 and integral):      # 0 ^ 0 is 1, as in PostgreSQL
        return D(1 if y == 0 or x == 1 else 0).quantize(D(1).scaleb(-_power_var_int_scale(x)))
    digits = float(y) * float(abs(x).log10(decimal.Context(prec=20)))   # the result's decimal weight
    if integral and abs(y) < 2 ** 31:        # power_var_int: the scale ignores the result's size
        rscale = _power_var_int_scale(x)
    else:
        val = _result_weight(x, y)
        if abs(val) > 2000 * 3.01:
            if val > 0:
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
            return D(0).scaleb(-_MAX_DISPLAY_SCALE)
        rscale = _scale(_MIN_SIG_DIGITS - int(val * 0.434294481903252), x, y)
    if digits >= 131072:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
    if digits < -(rscale + 2):               # underflow: zero at the result's scale
        return D(0).scaleb(-rscale)
    ctx = decimal.Context(prec=max(60, int(abs(digits)) + rscale + 30), Emax=999999, Emin=-999999)
    r = ctx.power(x, y) if not integral or abs(y) > 2 ** 31 else ctx.power(x, int(y))
    return _rounded(r, rscale)


def _nonfinite_power(x: D, y: D) -> D:
    """numeric_power's answers where NaN or an infinity is involved."""
    one, inf = D(1), D("Infinity")
    if x.is_nan() or y.is_nan():
        return one if (not x.is_nan() and x == 1) or (not y.is_nan() and y == 0) else _NAN
    if y.is_infinite():
        if x == 0 and y < 0:
            raise PgError(INVALID_ARGUMENT_FOR_POWER, "zero raised to a negative power is undefined")
        if abs(x) == 1:
            return one
        return (inf if abs(x) > 1 else D(0)) if y > 0 else (D(0) if abs(x) > 1 else inf)
    if y == 0:
        return one
    if x < 0 and y != y.to_integral_value():
        raise PgError(INVALID_ARGUMENT_FOR_POWER, "a negative number raised to a non-integer power yields a complex result")
    if y < 0:
        return D(0)
    odd = y == y.to_integral_value() and int(y) % 2 == 1
    return -x if x < 0 and odd else abs(x)


def power(x: D, y: D) -> D:
    """numeric ^ numeric and power(numeric, numeric)."""
    return numeric_power(x, y) if x.is_finite() and y.is_finite() else _nonfinite_power(x, y)
