"""PostgreSQL 15's mathematical functions that the main registry lacked:
hyperbolic and degree-based trigonometry, cot, div, factorial, gcd, lcm,
scale, min_scale, trim_scale.

Why a module of its own: the degree functions follow float.c's exact-value
construction (sind(30) is exactly 0.5) and the numeric ones numeric.c's
scale rules; together they are a unit of PostgreSQL's math chapter.
"""
from __future__ import annotations

import decimal
import math

from splitstream.protocol.errors import DIVISION_BY_ZERO, NUMERIC_VALUE_OUT_OF_RANGE, PgError

from splitstream.protocol import oids as type_oids

from .functions import elementwise, register, scalar

_RAD = 0.0174532925199432957692
_OUT_OF_RANGE = "input is out of range"
_NAN = float("nan")


def _out_of_range() -> PgError:
    return PgError(NUMERIC_VALUE_OUT_OF_RANGE, _OUT_OF_RANGE)


def _sin_0_to_30(x: float) -> float:
    return (math.sin(x * _RAD) / _SIN_30) / 2.0


def _cos_0_to_60(x: float) -> float:
    return 1.0 - ((1.0 - math.cos(x * _RAD)) / _ONE_MINUS_COS_60) / 2.0


def _sind_q1(x: float) -> float:
    return _sin_0_to_30(x) if x <= 30.0 else _cos_0_to_60(90.0 - x)


def _cosd_q1(x: float) -> float:
    return _cos_0_to_60(x) if x <= 60.0 else _sin_0_to_30(90.0 - x)


_SIN_30 = math.sin(30.0 * _RAD)
_ONE_MINUS_COS_60 = 1.0 - math.cos(60.0 * _RAD)
_ASIN_0_5, _ACOS_0_5, _ATAN_1_0 = math.asin(0.5), math.acos(0.5), math.atan(1.0)
_TAN_45 = _sind_q1(45.0) / _cosd_q1(45.0)
_COT_45 = _cosd_q1(45.0) / _sind_q1(45.0)


def _reduce(x: float) -> float:
    if math.isinf(x):
        raise _out_of_range()
    return math.fmod(x, 360.0)


def sind(x: float) -> float:
    if math.isnan(x):
        return x
    x, sign = _reduce(x), 1.0
    if x < 0.0:
        x, sign = -x, -sign
    if x > 180.0:
        x, sign = 360.0 - x, -sign
    if x > 90.0:
        x = 180.0 - x
    return sign * _sind_q1(x)


def cosd(x: float) -> float:
    if math.isnan(x):
        return x
    x, sign = abs(_reduce(x)), 1.0
    if x > 180.0:
        x = 360.0 - x
    if x > 90.0:
        x, sign = 180.0 - x, -sign
    return sign * _cosd_q1(x)


def _tan_cot(x: float, cot: bool) -> float:
    if math.isnan(x):
        return x
    x, sign = _reduce(x), 1.0
    if x < 0.0:
        x, sign = -x, -sign
    if x > 180.0:
        x, sign = 360.0 - x, -sign
    if x > 90.0:
        x, sign = 180.0 - x, -sign
    s, c = _sind_q1(x), _cosd_q1(x)
    value = _fdiv(c, s) / _COT_45 if cot else _fdiv(s, c) / _TAN_45
    result = sign * value
    return 0.0 if result == 0.0 else result       # no minus zero, as PostgreSQL forces


def _asind_q1(x: float) -> float:
    if x <= 0.5:
        return (math.asin(x) / _ASIN_0_5) * 30.0
    return 90.0 - (math.acos(x) / _ACOS_0_5) * 60.0


def _acosd_q1(x: float) -> float:
    if x <= 0.5:
        return 90.0 - (math.asin(x) / _ASIN_0_5) * 30.0
    return (math.acos(x) / _ACOS_0_5) * 60.0


def _unit(x: float) -> float:
    if x < -1.0 or x > 1.0:
        raise _out_of_range()
    return x


def asind(x: float) -> float:
    if math.isnan(x):
        return x
    x = _unit(x)
    return _asind_q1(x) if x >= 0.0 else -_asind_q1(-x)


def acosd(x: float) -> float:
    if math.isnan(x):
        return x
    x = _unit(x)
    return _acosd_q1(x) if x >= 0.0 else 90.0 + _asind_q1(-x)


def cot(x: float) -> float:
    if math.isnan(x):
        return x
    if math.isinf(x):
        raise _out_of_range()
    return _fdiv(1.0, math.tan(x))


def _fdiv(a: float, b: float) -> float:
    """a / b with C's IEEE result for a zero divisor (signed infinity)."""
    if b == 0:
        return math.copysign(math.inf, a) * math.copysign(1.0, b) if a != 0 else _NAN
    return a / b


def _hyperbolic(fn, low: float = -math.inf, high: float = math.inf):
    def f(x: float) -> float:
        if math.isnan(x):
            return x
        if x < low or x > high:
            raise _out_of_range()
        try:
            return fn(x)
        except OverflowError:              # sinh/cosh overflow to infinity, as PostgreSQL returns
            return math.copysign(math.inf, x) if fn is math.sinh else math.inf
        except ValueError:                 # atanh(+-1)
            return math.copysign(math.inf, x)

    return f


_F8 = "float8 -> float8"
for _name, _fn in (("sind", sind), ("cosd", cosd), ("tand", lambda x: _tan_cot(x, False)),
                   ("cotd", lambda x: _tan_cot(x, True)), ("asind", asind), ("acosd", acosd),
                   ("atand", lambda x: x if math.isnan(x) else (math.atan(x) / _ATAN_1_0) * 45.0), ("cot", cot),
                   ("sinh", _hyperbolic(math.sinh)), ("cosh", _hyperbolic(math.cosh)), ("tanh", _hyperbolic(math.tanh)),
                   ("asinh", _hyperbolic(math.asinh)), ("acosh", _hyperbolic(math.acosh, low=1.0)),
                   ("atanh", _hyperbolic(math.atanh, -1.0, 1.0))):
    scalar(_name, sigs=_F8)(_fn)
scalar("atan2d", sigs="float8, float8 -> float8")(
    lambda y, x: _NAN if math.isnan(y) or math.isnan(x) else (math.atan2(y, x) / _ATAN_1_0) * 45.0)


# ------------------------------------------------------------ numeric

_WIDE = decimal.Context(prec=150000, Emax=999999, Emin=-999999)
_NUMERIC_MAX_DIGITS = 131072


def _dscale(d: decimal.Decimal) -> int:
    return max(0, -d.as_tuple().exponent) if d.is_finite() else 0     # type: ignore[operator]


def _div(x: decimal.Decimal, y: decimal.Decimal) -> decimal.Decimal:
    """div(x, y): the integer quotient, truncated toward zero."""
    if x.is_nan() or y.is_nan():
        return decimal.Decimal("NaN")
    if y == 0:
        raise PgError(DIVISION_BY_ZERO, "division by zero")
    if x.is_infinite():
        if y.is_infinite():
            return decimal.Decimal("NaN")
        return x if y > 0 else -x
    if y.is_infinite():
        return decimal.Decimal(0)
    return _WIDE.divide_int(x, y).quantize(decimal.Decimal(1), context=_WIDE)


def _factorial(n: int) -> decimal.Decimal:
    if n < 0:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "factorial of a negative number is undefined")
    if n > 1 and math.lgamma(n + 1) / math.log(10) >= _NUMERIC_MAX_DIGITS:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
    return decimal.Decimal(math.factorial(n))


_INT_LIMITS = {type_oids.INT4: (2 ** 31, "integer"), type_oids.INT8: (2 ** 63, "bigint")}


def _lcm(a: int, b: int) -> int:
    return abs(a * b) // math.gcd(a, b) if a and b else 0


def _gcd_lcm(op):
    """gcd/lcm over int4, int8 (an out-of-range result is 22003, as
    gcd(-2147483648, 0) is) or numeric (at the larger scale of the two)."""

    def value(a, b, limit):
        if isinstance(a, decimal.Decimal):
            return _numeric_pair(a, b, op)
        r = op(a, b)
        if r >= limit[0]:
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{limit[1]} out of range")
        return r

    def impl(cols, n, ctx):
        limit = _INT_LIMITS.get(cols[0].oid, (0, ""))
        return elementwise(lambda a, b: value(a, b, limit), cols[0].oid)(cols, n, ctx)

    return impl


def _numeric_pair(x: decimal.Decimal, y: decimal.Decimal, op) -> decimal.Decimal:
    """gcd/lcm of numerics: over the integers at the larger scale of the two."""
    if not (x.is_finite() and y.is_finite()):
        return decimal.Decimal("NaN")
    s = max(_dscale(x), _dscale(y))
    a, b = int(x.scaleb(s, _WIDE)), int(y.scaleb(s, _WIDE))
    r = decimal.Decimal(op(a, b)).scaleb(-s, _WIDE)
    return r.quantize(decimal.Decimal(1).scaleb(-s), context=_WIDE)


scalar("div", sigs="numeric, numeric -> numeric")(_div)
scalar("factorial", sigs="int8 -> numeric")(_factorial)
_GCD_SIGS = "int4, int4 -> int4 | int8, int8 -> int8 | numeric, numeric -> numeric"
register("gcd", sigs=_GCD_SIGS)(_gcd_lcm(math.gcd))
register("lcm", sigs=_GCD_SIGS)(_gcd_lcm(_lcm))
scalar("scale", sigs="numeric -> int4")(lambda v: _dscale(v) if v.is_finite() else None)
scalar("min_scale", sigs="numeric -> int4")(lambda v: _dscale(v.normalize(_WIDE)) if v.is_finite() else None)
scalar("trim_scale", sigs="numeric -> numeric")(
    lambda v: v if not v.is_finite() else (v.normalize(_WIDE) if _dscale(v.normalize(_WIDE)) > 0
                                           else v.quantize(decimal.Decimal(1), context=_WIDE)))
