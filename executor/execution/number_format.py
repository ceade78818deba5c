"""to_char for numbers: PostgreSQL 15's numeric template processor
(formatting.c's NUMDesc_prepare, the per-type number strings of
int4/int8/float4/float8/numeric_to_char, and NUM_processor), in the C
locale splitstream reports (decimal point ".", group separator ",",
currency symbol " ").

Why a module of its own: the template language (9 0 . , D G S MI PL SG PR
L RN TH V EEEE FM and literal text) is a small interpreter whose output
depends on every flag at once; it is followed step by step so that each
template prints what PostgreSQL prints, including its quirks.
"""
from __future__ import annotations

import decimal
import math
from dataclasses import dataclass

from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, NUMERIC_VALUE_OUT_OF_RANGE, SYNTAX_ERROR, PgError

#: template keywords, longest first where one is a prefix of another
_KEYWORDS = ("EEEE", "eeee", "FM", "fm", "MI", "mi", "PL", "pl", "PR", "pr", "RN", "rn", "SG", "sg", "SP", "sp", "TH",
             "th", ",", ".", "0", "9", "B", "b", "C", "c", "D", "d", "G", "g", "L", "l", "S", "s", "V", "v")
_IDS = {k: k.upper() for k in _KEYWORDS}
_IDS.update({"rn": "rn", "th": "th"})
DBL_DIG, FLT_DIG = 15, 6


@dataclass
class _Desc:
    """NUMDesc: digit counts and flags of a template."""

    pre: int = 0
    post: int = 0
    multi: int = 0
    zero_start: int = 0
    zero_end: int = 0
    lsign: str = ""          # "", "pre", "post"
    pre_lsign_num: int = 0
    decimal: bool = False
    zero: bool = False
    fill: bool = False
    minus: bool = False
    plus: bool = False
    bracket: bool = False
    roman: bool = False
    multi_flag: bool = False
    eeee: bool = False
    blank: bool = False


def _parse(fmt: str) -> list[tuple[str, str]]:
    """The template as (kind, text) nodes: ("key", id) or ("lit", characters)."""
    nodes: list[tuple[str, str]] = []
    i = 0
    while i < len(fmt):
        if fmt[i] == '"':
            j = fmt.find('"', i + 1)
            j = len(fmt) if j < 0 else j
            nodes.extend(("lit", ch) for ch in fmt[i + 1:j])
            i = j + 1
            continue
        if fmt.startswith('\\"', i):
            nodes.append(("lit", '"'))
            i += 2
            continue
        key = next((k for k in _KEYWORDS if fmt.startswith(k, i)), None)
        if key is None:
            nodes.append(("lit", fmt[i]))
            i += 1
        else:
            nodes.append(("key", _IDS[key]))
            i += len(key)
    return nodes


def _err(message: str) -> PgError:
    return PgError(SYNTAX_ERROR, message)


def _prepare(nodes: list[tuple[str, str]]) -> _Desc:
    """NUMDesc_prepare over every keyword node."""
    d = _Desc()
    for kind, key in nodes:
        if kind != "key":
            continue
        if d.eeee and key not in ("EEEE",):
            raise _err('"EEEE" must be the last pattern used')
        if key in ("9", "0"):
            if d.bracket:
                raise _err('"9" must be ahead of "PR"')
            if key == "9" and d.multi_flag:
                d.multi += 1
                continue
            if key == "0" and not d.zero and not d.decimal:
                d.zero, d.zero_start = True, d.pre + 1
            if d.decimal:
                d.post += 1
            else:
                d.pre += 1
            if key == "0":
                d.zero_end = d.pre
        elif key == "B":
            if d.pre == 0 and d.post == 0 and not d.zero:
                d.blank = True
        elif key in ("D", "."):
            if d.decimal:
                raise _err("multiple decimal points")
            if d.multi_flag:
                raise _err('cannot use "V" and decimal point together')
            d.decimal = True
        elif key == "FM":
            d.fill = True
        elif key == "S":
            if d.lsign:
                raise _err('cannot use "S" twice')
            if d.plus or d.minus or d.bracket:
                raise _err('cannot use "S" and "PL"/"MI"/"SG"/"PR" together')
            if not d.decimal:
                d.lsign, d.pre_lsign_num = "pre", d.pre
            else:
                d.lsign = "post"
        elif key in ("MI", "PL", "SG"):
            if d.lsign:
                raise _err(f'cannot use "S" and "{key}" together')
            d.minus = d.minus or key in ("MI", "SG")
            d.plus = d.plus or key in ("PL", "SG")
        elif key == "PR":
            if d.lsign or d.plus or d.minus:
                raise _err('cannot use "PR" and "S"/"PL"/"MI"/"SG" together')
            d.bracket = True
        elif key in ("RN", "rn"):
            d.roman = True
        elif key == "V":
            if d.decimal:
                raise _err('cannot use "V" and decimal point together')
            d.multi_flag = True
        elif key == "EEEE":
            if d.eeee:
                raise _err('cannot use "EEEE" twice')
            if d.blank or d.fill or d.lsign or d.bracket or d.minus or d.plus or d.roman or d.multi_flag:
                raise _err('"EEEE" is incompatible with other formats')
            d.eeee = True
    return d


_ROMAN = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"), (10, "X"),
          (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))


def _roman(n: int) -> str:
    if n > 3999 or n < 1:
        return "#" * 15
    out = []
    for value, word in _ROMAN:
        while n >= value:
            out.append(word)
            n -= value
    return "".join(out)


def _hashes(d: _Desc) -> str:
    """An overflowed number: '#' for every digit, '.' at the decimal point."""
    s = "#" * (d.pre + d.post + 1)
    return s[:d.pre] + "." + s[d.pre + 1:]


def _pad(d: _Desc, numstr: str) -> tuple[str, int]:
    """(number string, leading blanks) after the digit-count check."""
    pre_len = numstr.find(".") if "." in numstr else len(numstr)
    if pre_len < d.pre:
        return numstr, d.pre - pre_len
    if pre_len > d.pre:
        return _hashes(d), 0
    return numstr, 0


def _sci(value: decimal.Decimal, post: int) -> str:
    """numeric_out_sci: d.ddde+NN with ``post`` decimals."""
    if value == 0:
        exp10 = 0
    else:
        exp10 = value.adjusted()
    mant = (value.scaleb(-exp10)).quantize(decimal.Decimal(1).scaleb(-post), rounding=decimal.ROUND_HALF_UP,
                                          context=decimal.Context(prec=200))
    if abs(mant) >= 10:                 # 9.99 rounded up to 10.0
        exp10 += 1
        mant = (value.scaleb(-exp10)).quantize(decimal.Decimal(1).scaleb(-post), rounding=decimal.ROUND_HALF_UP,
                                              context=decimal.Context(prec=200))
    return f"{mant:f}e{exp10:+03d}"


def _eeee_special(d: _Desc) -> str:
    s = "#" * (d.pre + d.post + 6)
    return " " + s[1:d.pre + 1] + "." + s[d.pre + 2:]


def _number_string(value, kind: str, d: _Desc) -> tuple[str, str, int]:
    """(number string, sign, leading blanks) as <type>_to_char prepares them."""
    if d.roman:
        if kind == "float":       # (int) rint(value): out of int range is INT_MIN on x86, printed as ###
            n = int(round(value)) if math.isfinite(value) and abs(value) < 2 ** 31 else 0
        else:
            v = decimal.Decimal(value)
            if not v.is_finite():
                raise PgError(FEATURE_NOT_SUPPORTED, f"cannot convert {'NaN' if v.is_nan() else 'infinity'} to integer")
            n = int(v.to_integral_value(rounding=decimal.ROUND_HALF_UP))
        if not -(2 ** 31) <= n < 2 ** 31:      # int_to_roman takes an int4
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range")
        return _roman(n), "+", 0
    if d.eeee:
        if kind == "float":
            if not math.isfinite(value):
                return _eeee_special(d), "+", 0
            s = f"{value:+.{d.post}e}"
        else:
            v = decimal.Decimal(value)
            if not v.is_finite():
                return _eeee_special(d), "+", 0
            s = _sci(v, d.post)
            s = s if s.startswith("-") else "+" + s
        return (" " + s[1:]) if s.startswith("+") else s, "+", 0
    if kind == "float":
        return _float_string(value, d)
    if d.multi_flag:
        scale = 10 ** d.multi
        value = decimal.Decimal(value) * scale
        # int4_to_char and int8_to_char multiply with their type's checked
        # multiplication (PostgreSQL 15.20; earlier minor releases wrapped):
        # the power of ten and the product must both fit
        bits = {"int4": 31, "int8": 63}.get(kind)
        if bits is not None and not (scale < 2 ** bits and -(2 ** bits) <= value < 2 ** bits):
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range" if bits == 31 else "bigint out of range")
        d.pre += d.multi
    v = decimal.Decimal(value)
    if v.is_finite():
        v = v.quantize(decimal.Decimal(1).scaleb(-d.post), rounding=decimal.ROUND_HALF_UP,
                       context=decimal.Context(prec=200))
        text = f"{v:f}"
    else:
        text = "NaN" if v.is_nan() else ("-Infinity" if v < 0 else "Infinity")
    sign = "-" if text.startswith("-") else "+"
    numstr, spaces = _pad(d, text.lstrip("-"))
    return numstr, sign, spaces


def _float_string(value: float, d: _Desc, digits: int = DBL_DIG) -> tuple[str, str, int]:
    if d.multi_flag:
        value = value * math.pow(10, d.multi)
        d.pre += d.multi
    pre_len = len(_c_fixed(abs(value), 0))
    if pre_len >= digits:
        d.post = 0
    elif pre_len + d.post > digits:
        d.post = digits - pre_len
    text = _c_fixed(value, d.post)
    sign = "-" if text.startswith("-") else "+"
    numstr, spaces = _pad(d, text.lstrip("-"))
    return numstr, sign, spaces


def _c_fixed(value: float, places: int) -> str:
    """%.*f as PostgreSQL's own snprintf prints it (NaN, Infinity, -Infinity)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    return f"{value:.{places}f}"


def _th(number: str, upper: bool) -> str:
    last = number[-1:]
    if not last.isdigit():
        raise PgError("22P02", f'"{number}" is not a number')
    if len(number) > 1 and number[-2] == "1":
        last = "0"
    word = {"1": "st", "2": "nd", "3": "rd"}.get(last, "th")
    return word.upper() if upper else word


class _Processor:
    """NUM_processor in the to_char direction."""

    def __init__(self, d: _Desc, number: str, sign: str, pre_spaces: int) -> None:
        self.d, self.number, self.sign, self.pre_spaces = d, number, sign, pre_spaces
        self.out: list[str] = []
        self.pos = 0                 # Np->number_p as an index
        self.num_curr = 0
        self.num_in = False
        self.last_relevant: int | None = None
        if d.zero_start:
            d.zero_start -= 1
        if d.roman:
            fill = d.fill
            self.d = d = _Desc(roman=True, fill=fill)
            self.sign, self.pre_spaces = "", 0
        if d.plus or d.minus:
            self.sign_wrote = not (d.plus and not d.minus)
        else:
            if self.sign != "-" and d.fill:
                d.bracket = False
            self.sign_wrote = self.sign == "+" and d.fill and not d.lsign
            if d.lsign == "pre" and d.pre == d.pre_lsign_num:
                d.lsign = "post"
        self.num_count = d.post + d.pre - 1
        if d.fill and d.decimal:
            self.last_relevant = self._last_relevant_decnum()
            if self.last_relevant is not None and d.zero_end > self.pre_spaces:
                last_zero = d.zero_end - self.pre_spaces
                if self.last_relevant < last_zero:
                    self.last_relevant = last_zero
        if not self.sign_wrote and self.pre_spaces == 0:
            self.num_count += 1

    def _last_relevant_decnum(self) -> int | None:
        p = self.number.find(".")
        if p < 0:
            return None
        result = p
        for i in range(p + 1, len(self.number)):
            if self.number[i] != "0":
                result = i
        return result

    def _char(self, i: int | None) -> str:
        return self.number[i] if i is not None and 0 <= i < len(self.number) else ""

    def _predec_space(self) -> bool:
        return (not self.d.zero and self.pos == 0 and self.number[:1] == "0" and self.d.post != 0)

    def numpart(self, key: str) -> None:
        d = self.d
        if d.roman:
            return
        self.num_in = False
        if not self.sign_wrote and (self.num_curr >= self.pre_spaces or (d.zero and d.zero_start == self.num_curr)) \
                and (not self._predec_space() or self._char(self.last_relevant) == "."):
            if d.lsign:
                if d.lsign == "pre":
                    self.out.append("-" if self.sign == "-" else "+")
                    self.sign_wrote = True
            elif d.bracket:
                self.out.append(" " if self.sign == "+" else "<")
                self.sign_wrote = True
            elif self.sign == "+":
                if not d.fill:
                    self.out.append(" ")
                self.sign_wrote = True
            elif self.sign == "-":
                self.out.append("-")
                self.sign_wrote = True
        if key in ("9", "0", "D", "."):
            if self.num_curr < self.pre_spaces and (d.zero_start > self.num_curr or not d.zero):
                if not d.fill:
                    self.out.append(" ")
            elif d.zero and self.num_curr < self.pre_spaces and d.zero_start <= self.num_curr:
                self.out.append("0")
                self.num_in = True
            else:
                self._digit(key)
            end = self.num_count + (1 if self.pre_spaces else 0) + (1 if d.decimal else 0)
            if self.last_relevant is not None and self.last_relevant == self.pos:
                end = self.num_curr
            if self.num_curr + 1 == end:
                if self.sign_wrote and d.bracket:
                    self.out.append(" " if self.sign == "+" else ">")
                elif d.lsign == "post":
                    self.out.append("-" if self.sign == "-" else "+")
        self.num_curr += 1

    def _digit(self, key: str) -> None:
        d = self.d
        ch = self._char(self.pos)
        if ch == ".":
            if self.last_relevant is None or self._char(self.last_relevant) != ".":
                self.out.append(".")
            elif d.fill and self._char(self.last_relevant) == ".":
                self.out.append(".")
        else:
            if self.last_relevant is not None and self.pos > self.last_relevant and key != "0":
                pass
            elif self._predec_space():
                if not d.fill:
                    self.out.append(" ")
                elif self.last_relevant is not None and self._char(self.last_relevant) == ".":
                    self.out.append("0")
            else:
                self.out.append(ch)
                self.num_in = True
        if ch:
            self.pos += 1

    def run(self, nodes: list[tuple[str, str]]) -> str:
        d = self.d
        for kind, key in nodes:
            if kind == "lit":
                self.out.append(key)
                continue
            if key in ("9", "0", ".", "D"):
                self.numpart(key)
            elif key in (",", "G"):
                if self.num_in:
                    self.out.append(",")
                elif not d.fill:
                    self.out.append(" ")
            elif key == "L":
                self.out.append(" ")
            elif key in ("RN", "rn"):
                text = self.number if key == "RN" else self.number.lower()
                self.out.append(text if d.fill else text.rjust(15))
            elif key in ("TH", "th"):
                if d.roman or self.number[:1] == "#" or self.sign == "-" or d.decimal:
                    continue
                self.out.append(_th(self.number, key == "TH"))
            elif key == "MI":
                if self.sign == "-":
                    self.out.append("-")
                elif not d.fill:
                    self.out.append(" ")
            elif key == "PL":
                if self.sign == "+":
                    self.out.append("+")
                elif not d.fill:
                    self.out.append(" ")
            elif key == "SG":
                self.out.append(self.sign)
        return "".join(self.out)


def to_char(value, fmt: str, kind: str) -> str:
    """to_char(number, template); ``kind``: "int4", "int8", "float4", "float" (float8) or "numeric"."""
    if not fmt:
        return ""
    nodes = _parse(fmt)
    d = _prepare(nodes)
    if d.eeee:
        return _number_string(value, "float" if kind.startswith("float") else "numeric", d)[0]
    if kind == "float4":
        if d.roman:
            numstr, sign, spaces = _number_string(value, "float", d)
        else:
            numstr, sign, spaces = _float_string(value, d, FLT_DIG)
    else:
        numstr, sign, spaces = _number_string(value, "float" if kind == "float" else kind, d)
    return _Processor(d, numstr, sign, spaces).run(nodes)
