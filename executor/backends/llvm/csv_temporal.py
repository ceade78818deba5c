"""IR for dates and timestamps in the compiled COPY reader (``csv.py``).

Event streams carry a timestamp in every row, so the reader parses the
strict ISO grammar of ``protocol/copy_temporal.py`` in the same single pass
as the numbers around it::

    YYYY-MM-DD                                        (date)
    YYYY-MM-DD{ |T}HH:MM:SS[.f{1,6}][Z|{+|-}HH[[:]MM]]  (timestamp[tz])

and stores int64 ticks: days since 1970 for a date, microseconds since 1970
(UTC for timestamptz) otherwise.  Every check branches to ``bail`` at the
first character that does not fit, so no byte past the line's newline is
ever read and anything else (a zone on a timestamp without time zone, no
offset on a timestamptz outside a UTC session, BC, infinity, a leap second,
a seventh fractional digit, an impossible date) declines the chunk to the
exact general path.

Event times are nearly sorted, so a timestamp whose first 16 bytes (date,
hour, minute) are the previous row's reuses that row's microseconds and
reads seconds and a six- or three-digit fraction as one 8-byte word
(``csv_swar``): on YSB rows this halved the reader's time per row.  Any
other spelling takes the checks above, which remember the minute read.
"""
from __future__ import annotations

from llvmlite import ir

from . import csv_swar

I8, I64 = ir.IntType(8), ir.IntType(64)
_US_SEC = 1_000_000
_US_DAY = 86_400 * _US_SEC
_MAX_ZONE_HOUR = 15                  # PostgreSQL's MAX_TZDISP_HOUR
_DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
_FRAC_SCALE = [0, 100_000, 10_000, 1_000, 100, 10, 1]      # by fractional digit count


def c(v: int, t: ir.IntType = I64) -> ir.Constant:
    return ir.Constant(t, v)


class Emitter:
    """Straight-line checks over one field: each either continues in a new
    block or branches to ``bail``."""

    def __init__(self, b: ir.IRBuilder, fn: ir.Function, tag: str, data, bail, term: ir.Constant,
                 length=None) -> None:
        self.b, self.fn, self.tag, self.data, self.bail, self.term = b, fn, tag, data, bail, term
        self.length = length              # the chunk's byte count (the fixed-width fast path checks it)
        self.count = 0

    def block(self, what: str) -> ir.Block:
        self.count += 1
        return self.fn.append_basic_block(f"{self.tag}_{what}{self.count}")

    def require(self, cond) -> None:
        ok = self.block("ok")
        self.b.cbranch(cond, ok, self.bail)
        self.b.position_at_end(ok)

    def char(self, p):
        return self.b.load(self.b.gep(self.data, [p]))

    def is_char(self, p, chars: bytes):
        ch = self.char(p)
        conds = [self.b.icmp_unsigned("==", ch, c(x, I8)) for x in chars]
        out = conds[0]
        for x in conds[1:]:
            out = self.b.or_(out, x)
        return out

    def expect(self, p, chars: bytes) -> None:
        self.require(self.is_char(p, chars))

    def number(self, p, count: int):
        """``count`` digits from ``p``, in order, bailing at a non-digit."""
        value = c(0)
        for k in range(count):
            d = self.b.sub(self.b.zext(self.char(self.b.add(p, c(k))), I64), c(48))
            self.require(self.b.icmp_unsigned("<", d, c(10)))
            value = self.b.add(self.b.mul(value, c(10)), d)
        return value

    def table(self, name: str, values: list[int]) -> ir.GlobalVariable:
        mod = self.fn.module
        g = mod.globals.get(name)
        if g is None:
            g = ir.GlobalVariable(mod, ir.ArrayType(I64, len(values)), name)
            g.initializer = ir.Constant(ir.ArrayType(I64, len(values)), values)
            g.global_constant = True
        return g

    def lookup(self, name: str, values: list[int], idx):
        return self.b.load(self.b.gep(self.table(name, values), [c(0), idx]))

    def word(self, p):
        return csv_swar.word(self.b, self.data, p)

    def state(self, name: str, init: int):
        """An i64 carried from row to row (an alloca in the entry block, which
        mem2reg turns into a value in a register)."""
        entry = ir.IRBuilder(self.fn.entry_basic_block)
        entry.position_at_start(self.fn.entry_basic_block)
        slot = entry.alloca(I64, name=f"{self.tag}_{name}")
        entry.store(c(init), slot)
        return slot


def emit(e: Emitter, kind: str, pos, col, row, nxt, naive_utc: bool) -> None:
    """Parse the field at ``pos`` into ``col[row]``, leave ``pos`` after its
    terminator, and branch to ``nxt``."""
    b = e.b
    p0 = b.load(pos)
    prev = _Minute(e) if kind != "date" and e.length is not None else None
    if prev is not None:
        _same_minute(e, prev, p0, col, row, pos, nxt, kind == "tstz", naive_utc)
    days = _date(e, p0)
    if kind == "date":
        e.require(b.icmp_unsigned("==", e.char(b.add(p0, c(10))), e.term))
        b.store(days, b.gep(col, [row]))
        b.store(b.add(p0, c(11)), pos)
        b.branch(nxt)
        return
    e.expect(b.add(p0, c(10)), b" T")
    clock, minute, after = _clock(e, p0)
    offset, end = _zone(e, after, kind == "tstz", naive_utc)
    base = b.add(b.mul(days, c(_US_DAY)), minute)
    b.store(b.sub(b.add(base, clock), offset), b.gep(col, [row]))
    if prev is not None:
        prev.remember(p0, base)
    b.store(b.add(end, c(1)), pos)
    b.branch(nxt)


class _Minute:
    """The last timestamp the general path read: its first 16 bytes
    (``YYYY-MM-DD{ |T}HH:MM``, two words) and their microseconds.  Event
    streams are nearly sorted, so most rows repeat them."""

    def __init__(self, e: Emitter) -> None:
        self.e = e
        # zero until a row is read (a valid prefix starts with a digit; the data may hold zero bytes)
        self.lo, self.hi, self.base = e.state("prev_lo", 0), e.state("prev_hi", 0), e.state("prev_base", 0)

    def remember(self, p0, base) -> None:
        b, e = self.e.b, self.e
        b.store(e.word(p0), self.lo)
        b.store(e.word(b.add(p0, c(8))), self.hi)
        b.store(base, self.base)


#: the fixed-width tail after a known minute: ``:SS.ffffff`` and the terminator
_TAIL = 27


def _same_minute(e: Emitter, prev: _Minute, p0, col, row, pos, nxt, with_tz: bool, naive_utc: bool) -> None:
    """The fast path of ``YYYY-MM-DD{ |T}HH:MM:SS.ffffff`` (six or three
    fractional digits, then the zone as :func:`_zone` reads it) whose first
    16 bytes are the previous row's: compare two words, then read the digits
    of seconds and fraction at once (SWAR).  Anything else goes on to the
    general path (the builder is left there), which updates the remembered
    minute.  The prefix holds no delimiter (:func:`csv.usable`), so equal
    bytes are the same field start; after six digits the general path reads
    the zone at the same place, by the same code."""
    b = e.b
    fits, probe, general = e.block("fits"), e.block("probe"), e.block("general")
    b.cbranch(b.icmp_signed("<=", b.add(p0, c(_TAIL)), e.length), fits, general)
    b.position_at_end(fits)
    lo = b.load(prev.lo)
    same = b.and_(b.and_(b.icmp_unsigned("==", e.word(p0), lo), b.icmp_unsigned("!=", lo, c(0))),
                  b.icmp_unsigned("==", e.word(b.add(p0, c(8))), b.load(prev.hi)))
    b.cbranch(same, probe, general)
    b.position_at_end(probe)
    a = e.word(b.add(p0, c(16)))                        # ':' S S '.' f f f f
    z = e.word(b.add(p0, c(19)))                        # '.' f f f f f f (zone or terminator)
    marks = b.icmp_unsigned("==", b.and_(a, c(0xFF0000FF)), c(ord(".") << 24 | ord(":")))
    digits = b.or_(b.and_(b.lshr(a, c(8)), c(0xFFFF)), b.shl(b.lshr(z, c(8)), c(16)))    # S S f f f f f f
    _fraction_tail(e, prev, p0, col, row, pos, nxt, marks, digits, _TAIL - 1, with_tz, naive_utc, e.block("millis"))
    # milliseconds (JavaScript's and Java's spelling): S S f f f, then '000'
    seventh = b.sub(b.lshr(a, c(56)), c(48))             # the byte after three digits: not a fourth digit
    millis = b.or_(b.or_(b.and_(b.lshr(a, c(8)), c(0xFFFF)), b.shl(b.and_(b.lshr(a, c(32)), c(0xFFFFFF)), c(16))),
                   c(0x303030 << 40))
    _fraction_tail(e, prev, p0, col, row, pos, nxt, b.and_(marks, b.icmp_unsigned(">=", seventh, c(10))), millis,
                   _TAIL - 4, with_tz, naive_utc, general)


def _fraction_tail(e: Emitter, prev: _Minute, p0, col, row, pos, nxt, ok, digits, zone_at: int, with_tz: bool,
                   naive_utc: bool, otherwise) -> None:
    """If ``ok`` and the eight bytes of ``digits`` (seconds and fraction,
    scaled to microseconds) are digits below a minute: store the remembered
    minute plus them less the zone at ``p0 + zone_at``, and go on to ``nxt``;
    else on to ``otherwise`` (the builder is left there)."""
    b = e.b
    hit = e.block("hit")
    micros = csv_swar.value(b, digits)
    ok = b.and_(ok, b.and_(csv_swar.all_digits(b, digits), b.icmp_unsigned("<", micros, c(60 * _US_SEC))))
    b.cbranch(ok, hit, otherwise)
    b.position_at_end(hit)
    offset, end = _zone(e, b.add(p0, c(zone_at)), with_tz, naive_utc)      # a further digit: no zone, bail
    b.store(b.sub(b.add(b.load(prev.base), micros), offset), b.gep(col, [row]))
    b.store(b.add(end, c(1)), pos)
    b.branch(nxt)
    b.position_at_end(otherwise)


def _date(e: Emitter, p0):
    """YYYY-MM-DD: days since 1970-01-01 (a real calendar day from 0001)."""
    b = e.b
    y = e.number(p0, 4)
    e.expect(b.add(p0, c(4)), b"-")
    m = e.number(b.add(p0, c(5)), 2)
    e.expect(b.add(p0, c(7)), b"-")
    d = e.number(b.add(p0, c(8)), 2)
    e.require(b.and_(b.icmp_unsigned(">=", y, c(1)), b.icmp_unsigned(">=", d, c(1))))
    e.require(b.and_(b.icmp_unsigned(">=", m, c(1)), b.icmp_unsigned("<=", m, c(12))))
    leap = b.or_(b.and_(b.icmp_unsigned("==", b.urem(y, c(4)), c(0)), b.icmp_unsigned("!=", b.urem(y, c(100)), c(0))),
                 b.icmp_unsigned("==", b.urem(y, c(400)), c(0)))
    extra = b.zext(b.and_(leap, b.icmp_unsigned("==", m, c(2))), I64)
    e.require(b.icmp_unsigned("<=", d, b.add(e.lookup("days_in_month", _DAYS_IN_MONTH, m), extra)))
    # days from civil (Howard Hinnant's algorithm); every term is non-negative from year 1
    early = b.icmp_unsigned("<=", m, c(2))
    yy = b.sub(y, b.zext(early, I64))
    era = b.udiv(yy, c(400))
    yoe = b.sub(yy, b.mul(era, c(400)))
    mp = b.select(early, b.add(m, c(9)), b.sub(m, c(3)))
    doy = b.sub(b.add(b.udiv(b.add(b.mul(mp, c(153)), c(2)), c(5)), d), c(1))
    doe = b.add(b.sub(b.add(b.mul(yoe, c(365)), b.udiv(yoe, c(4))), b.udiv(yoe, c(100))), doy)
    return b.sub(b.add(b.mul(era, c(146_097)), doe), c(719_468))


def _clock(e: Emitter, p0):
    """HH:MM:SS[.f{1,6}] at p0 + 11: microseconds since the minute, the
    minute's since midnight, and the position after it."""
    b = e.b
    hh = e.number(b.add(p0, c(11)), 2)
    e.expect(b.add(p0, c(13)), b":")
    mi = e.number(b.add(p0, c(14)), 2)
    e.expect(b.add(p0, c(16)), b":")
    ss = e.number(b.add(p0, c(17)), 2)
    e.require(b.and_(b.icmp_unsigned("<=", hh, c(23)),
                     b.and_(b.icmp_unsigned("<=", mi, c(59)), b.icmp_unsigned("<=", ss, c(59)))))
    minute = b.mul(b.add(b.mul(hh, c(60)), mi), c(60 * _US_SEC))
    start = b.block
    dot = b.icmp_unsigned("==", e.char(b.add(p0, c(19))), c(ord("."), I8))
    frac_block, done = e.block("frac"), e.block("clock")
    b.cbranch(dot, frac_block, done)
    b.position_at_end(frac_block)
    ends = [(start, c(0), c(0))]        # (block, fraction, its digits) where the fraction ends
    frac = c(0)
    for k in range(6):
        d = b.sub(b.zext(e.char(b.add(p0, c(20 + k))), I64), c(48))
        is_digit = b.icmp_unsigned("<", d, c(10))
        if k == 0:
            e.require(is_digit)          # "SS." with no digit: left to the exact path
        else:
            more, stop = e.block("fracdigit"), e.block("fracend")
            b.cbranch(is_digit, more, stop)
            b.position_at_end(stop)
            ends.append((stop, frac, c(k)))
            b.branch(done)
            b.position_at_end(more)
        frac = b.add(b.mul(frac, c(10)), d)
    seventh = b.sub(b.zext(e.char(b.add(p0, c(26))), I64), c(48))
    e.require(b.icmp_unsigned(">=", seventh, c(10)))     # PostgreSQL rounds a seventh digit: not here
    ends.append((b.block, frac, c(6)))
    b.branch(done)
    b.position_at_end(done)
    f_phi, n_phi = b.phi(I64), b.phi(I64)
    for blk, fv, nv in ends:
        f_phi.add_incoming(fv, blk)
        n_phi.add_incoming(nv, blk)
    scaled = b.mul(f_phi, e.lookup("frac_scale", _FRAC_SCALE, n_phi))
    after = b.add(p0, b.select(b.icmp_unsigned("==", n_phi, c(0)), c(19), b.add(n_phi, c(20))))
    return b.add(b.mul(ss, c(_US_SEC)), scaled), minute, after


def _zone(e: Emitter, q, with_tz: bool, naive_utc: bool):
    """The zone at ``q`` up to the terminator: its offset east of UTC in
    microseconds, and the terminator's position.  Without time zone only
    the terminator is accepted; with it Z, {+|-}HH, {+|-}HHMM, {+|-}HH:MM,
    or nothing when the session is in UTC."""
    b = e.b
    ch = e.char(q)
    if not with_tz:
        e.require(b.icmp_unsigned("==", ch, e.term))
        return c(0), q
    naive, zulu, signed, done = e.block("naive"), e.block("zulu"), e.block("signed"), e.block("zoned")
    sw = b.switch(ch, e.bail)
    if naive_utc:
        sw.add_case(e.term, naive)
    sw.add_case(c(ord("Z"), I8), zulu)
    sw.add_case(c(ord("+"), I8), signed)
    sw.add_case(c(ord("-"), I8), signed)
    ends = []                            # (block, offset, terminator position)
    b.position_at_end(naive)
    ends.append((naive, c(0), q))
    b.branch(done)
    b.position_at_end(zulu)
    e.require(b.icmp_unsigned("==", e.char(b.add(q, c(1))), e.term))
    ends.append((b.block, c(0), b.add(q, c(1))))
    b.branch(done)
    b.position_at_end(signed)
    sign = b.select(b.icmp_unsigned("==", ch, c(ord("-"), I8)), c(-1), c(1))
    hh = e.number(b.add(q, c(1)), 2)
    e.require(b.icmp_unsigned("<=", hh, c(_MAX_ZONE_HOUR)))
    hours_only, colon, compact = e.block("zhh"), e.block("zcolon"), e.block("zcompact")
    sw2 = b.switch(e.char(b.add(q, c(3))), compact)
    sw2.add_case(e.term, hours_only)
    sw2.add_case(c(ord(":"), I8), colon)
    b.position_at_end(hours_only)
    ends.append((hours_only, b.mul(sign, b.mul(hh, c(3600 * _US_SEC))), b.add(q, c(3))))
    b.branch(done)
    for block, first in ((colon, 4), (compact, 3)):
        b.position_at_end(block)
        mm = e.number(b.add(q, c(first)), 2)
        end = b.add(q, c(first + 2))
        e.require(b.and_(b.icmp_unsigned("<=", mm, c(59)), b.icmp_unsigned("==", e.char(end), e.term)))
        ends.append((b.block, b.mul(sign, b.mul(b.add(b.mul(hh, c(60)), mm), c(60 * _US_SEC))), end))
        b.branch(done)
    b.position_at_end(done)
    off, pos = b.phi(I64), b.phi(I64)
    for blk, ov, pv in ends:
        off.add_incoming(ov, blk)
        pos.add_incoming(pv, blk)
    return off, pos
