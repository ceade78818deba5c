"""LLVM IR for the fused filter -> group -> aggregate kernel.

One *shape* (see :class:`Shape`) becomes one module with two functions:

* ``gen``  – the generic variant: open-addressing hash table (linear probing)
  in native memory, keyed by up to two int64 keys plus their NULL bits;
* ``spec`` – the specialised variant: a dense array indexed by
  ``(key - min)`` behind a range guard (Grizzly, section 6.2).

Both have the signature ``i64 f(i64* args, i64 start, i64 end)``: ``args``
holds column pointers, parameter values (literals are parameters, so a
module serves every statement of the same shape) and the state pointers.
Both return the index of the first row they did *not* process: ``end`` when
done, otherwise the row whose key fell outside the dense range (``spec``) or
that needed a new group in a full table (``gen``).  Rows before that index
are fully applied and the row itself is untouched, so the caller can grow
or deoptimise and resume at exactly that row: nothing lost, nothing counted
twice.

A third, shape-independent function ``rehash`` rebuilds the slot array of a
generic table from its group key arrays (growth and dense->hash migration).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import tinyir as ir     # the subset of llvmlite.ir we use, ~10x cheaper to build

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
I128 = ir.IntType(128)
F32 = ir.FloatType()
F64 = ir.DoubleType()

DTYPES = {"i2": I16, "i4": I32, "i8": I64, "f4": F32, "f8": F64}

# aggregate kinds and how many state pointers each takes
AGG_PTRS = {"star": 0, "count": 1, "sum_i": 2, "sum_f": 2, "sum_128": 2, "min": 2, "max": 2}

H1 = 0x9E3779B97F4A7C15
H2 = 0xC2B2AE3D27D4EB4F
H3 = 0xFF51AFD7ED558CCD
TILE = 1024
#: Rows ahead whose group state the kernel prefetches: on a table far larger
#: than the caches (a view grouped by 10M customers) every row's hash slot and
#: state are cache misses, and fetching them a few rows early overlaps them.
PREFETCH_AHEAD = 16
SEL_UNROLL = 4               # rows per iteration of the dense kernel's selection pass: ~10% faster,
                             # ~5 ms more codegen; the hash kernel (probing dominates) keeps 1


@dataclass(frozen=True)
class Shape:
    """The plan shape a module is compiled for (the module cache key).

    inputs: dtype code per input column slot ('i2','i4','i8','f4','f8')
    conj:   conjuncts (op, left, right, domain); a leaf is ('c', slot, via)
            or ('p', param index); domain 'i' compares as int64, 'f' as
            double; via 'f4' rounds an integer column through float4 first
    nparams: number of literal parameters
    keys:   input slot of each grouping key (0, 1 or 2 keys)
    aggs:   (kind, input slot or -1)
    nullable: per input slot, whether the code reads a NULL mask (a batch
            with NULLs in a slot compiled as not nullable needs another module)
    premask: whether a vectorised premask (bytes) is ANDed into the filter
    panes:  per key, None or (slide, origin, hop slot or -1): the key's slot
            holds int64 microseconds and the kernel groups by the pane index
            floor((ts - origin) / slide) - hop (TUMBLE/HOP computed in the
            loop: no numpy pass for the pane bound, and pane indexes are
            dense where microsecond bounds are 1 in ``slide`` apart)
    """

    inputs: tuple
    conj: tuple
    nparams: int
    keys: tuple
    aggs: tuple
    nullable: tuple = ()
    premask: bool = False
    panes: tuple = ()

    def with_nullable(self, nullable) -> "Shape":
        return Shape(self.inputs, self.conj, self.nparams, self.keys, self.aggs, tuple(nullable), self.premask,
                     self.panes)

    def pane(self, j: int):
        """(slide, origin, hop slot) when key ``j`` is a pane index, else None."""
        return self.panes[j] if j < len(self.panes) else None


class Layout:
    """Index of every entry of the ``args`` array for one shape."""

    def __init__(self, shape: Shape) -> None:
        c = len(shape.inputs)
        self.ncols = c
        self.data = list(range(c))
        self.nulls = list(range(c, 2 * c))
        self.premask = 2 * c
        self.params = list(range(2 * c + 1, 2 * c + 1 + shape.nparams))
        t = 2 * c + 1 + shape.nparams
        self.table = t
        # generic: slots, mask, ctl, gk1, gk2, gflags ; dense: min1, min2, r1, r2, stride2
        self.rows = t + 6
        self.agg = []
        k = t + 7
        for kind, _slot in shape.aggs:
            self.agg.append(list(range(k, k + AGG_PTRS[kind])))
            k += AGG_PTRS[kind]
        self.size = k


def _hash(b: ir.IRBuilder, k1, k2, nb):
    h = b.mul(k1, ir.Constant(I64, H1))
    h = b.xor(h, b.mul(b.add(k2, b.zext(nb, I64)), ir.Constant(I64, H2)))
    h = b.xor(h, b.lshr(h, ir.Constant(I64, 32)))
    h = b.mul(h, ir.Constant(I64, H3))
    h = b.xor(h, b.lshr(h, ir.Constant(I64, 29)))
    return h


class _Kernel:
    def __init__(self, module: ir.Module, shape: Shape, name: str, dense: bool, unroll: int = SEL_UNROLL) -> None:
        self.shape, self.dense, self.unroll = shape, dense, unroll
        self.lay = Layout(shape)
        fn = ir.Function(module, ir.FunctionType(I64, [I64.as_pointer(), I64, I64]), name)
        fn.args[0].add_attribute("noalias")
        self.fn = fn
        self.args, self.start, self.end = fn.args
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))

    # -- entry-block helpers
    def _arg(self, k):
        return self.b.load(self.b.gep(self.args, [ir.Constant(I64, k)]))

    def _ptr(self, k, ty):
        return self.b.inttoptr(self._arg(k), ty.as_pointer())

    def build(self) -> None:
        sh, lay = self.shape, self.lay
        self.cols = [self._ptr(lay.data[i], DTYPES[d]) for i, d in enumerate(sh.inputs)]
        self.nullp = [self._ptr(lay.nulls[i], I8) if self._nullable(i) else None for i in range(len(sh.inputs))]
        self.pm = self._ptr(lay.premask, I8) if sh.premask else None
        self.params = [self._arg(k) for k in lay.params]
        t = lay.table
        if self.dense:
            self.mins = [self._arg(t), self._arg(t + 1)]
            self.ranges = [self._arg(t + 2), self._arg(t + 3)]
            self.stride2 = self._arg(t + 4)
        else:
            self.slots = self._ptr(t, I32)
            self.mask = self._arg(t + 1)
            self.ctl = self._ptr(t + 2, I64)
            self.gk = [self._ptr(t + 3, I64), self._ptr(t + 4, I64)]
            self.gflags = self._ptr(t + 5, I8)
        self.rows = self._ptr(lay.rows, I64)
        self.aggp: list[list[ir.Value]] = []
        for (kind, slot), idxs in zip(sh.aggs, lay.agg):
            if kind == "star":
                self.aggp.append([])
            elif kind == "count":
                self.aggp.append([self._ptr(idxs[0], I64)])
            elif kind == "sum_i":
                self.aggp.append([self._ptr(idxs[0], I64), self._ptr(idxs[1], I64)])
            elif kind == "sum_f":
                self.aggp.append([self._ptr(idxs[0], F64), self._ptr(idxs[1], I64)])
            elif kind == "sum_128":
                self.aggp.append([self._ptr(idxs[0], I128), self._ptr(idxs[1], I64)])
            else:  # min / max: value array in the column's own dtype, has-flags
                self.aggp.append([self._ptr(idxs[0], DTYPES[sh.inputs[slot]]), self._ptr(idxs[1], I8)])
        if sh.conj or sh.premask:
            self._build_tiled()
        else:
            self._build_simple()

    def _nullable(self, slot) -> bool:
        return bool(self.shape.nullable) and bool(self.shape.nullable[slot])

    def _loop(self, start, end, name, step=1):
        """for i in [start, end): returns (i phi, body block, latch, exit block); builder at body."""
        b = self.b
        pre = b.block
        head = self.fn.append_basic_block(name + "_head")
        body = self.fn.append_basic_block(name + "_body")
        latch = self.fn.append_basic_block(name + "_latch")
        done = self.fn.append_basic_block(name + "_done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name)
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", i, end), body, done)
        b.position_at_end(latch)
        i.add_incoming(b.add(i, ir.Constant(I64, step)), latch)
        b.branch(head)
        b.position_at_end(body)
        return i, latch, done

    def _build_simple(self):
        """No filter: one loop, group + update per row."""
        b = self.b
        i, latch, done = self._loop(self.start, self.end, "row")
        self.i, self.latch = i, latch
        self.vals, self.nulls = {}, {}
        if not self.dense:
            self._prefetch(lambda k: self._ahead(i, k, self.end, lambda r: r))
        g = self._group()
        self._update(g)
        b.branch(latch)
        b.position_at_end(done)
        b.ret(self.end)

    def _sel_loop(self, start, end, cnt0, selp, t, name, unroll):
        """for i in [start, end) step unroll: append i - t to the selection
        vector, branch-free; returns (final i, final count) for the code after."""
        b = self.b
        pre = b.block
        head = self.fn.append_basic_block(name + "_head")
        body = self.fn.append_basic_block(name + "_body")
        out = self.fn.append_basic_block(name + "_done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name + "_i")
        cnt = b.phi(I64, name + "_cnt")
        i.add_incoming(start, pre)
        cnt.add_incoming(cnt0, pre)
        b.cbranch(b.icmp_signed("<", i, end), body, out)
        b.position_at_end(body)
        c = cnt
        for k in range(unroll):
            r = i if k == 0 else b.add(i, ir.Constant(I64, k))
            self.i = r
            self.vals, self.nulls = {}, {}
            ok = ir.Constant(I1, 1)
            if self.pm is not None:
                ok = b.icmp_unsigned("!=", b.load(b.gep(self.pm, [r])), ir.Constant(I8, 0))
            for cj in self.shape.conj:
                ok = b.and_(ok, self._conj_value(cj))
            b.store(b.trunc(b.sub(r, t), I32), b.gep(selp, [c]))
            c = b.add(c, b.zext(ok, I64))
        i.add_incoming(b.add(i, ir.Constant(I64, unroll)), b.block)
        cnt.add_incoming(c, b.block)
        b.branch(head)
        b.position_at_end(out)
        return i, cnt

    def _build_tiled(self):
        """Filter in tiles: a branch-free pass writes the qualifying row numbers
        into a selection vector (no mispredictions at any selectivity), then a
        second loop groups and aggregates only those rows (Crotty: predicate
        evaluation separated from the data-dependent work)."""
        b = self.b
        sel = b.alloca(ir.ArrayType(I32, TILE), name="sel")
        selp = b.gep(sel, [ir.Constant(I32, 0), ir.Constant(I32, 0)])
        t, tile_latch, done = self._loop(self.start, self.end, "tile", step=TILE)
        tend0 = b.add(t, ir.Constant(I64, TILE))
        tend = b.select(b.icmp_signed("<", tend0, self.end), tend0, self.end)
        # phase 1: selection vector, SEL_UNROLL rows per iteration (the loop
        # test and increment were a third of its instructions), then the rest
        cnt = ir.Constant(I64, 0)
        start = t
        unroll = self.unroll if self.dense else 1
        if unroll > 1:
            last = b.sub(tend, ir.Constant(I64, unroll - 1))
            i, cnt = self._sel_loop(t, last, cnt, selp, t, "selu", unroll)
            start = i
        _i, cnt = self._sel_loop(start, tend, cnt, selp, t, "sel", 1)
        # phase 2: group + aggregate the selected rows
        j, latch2, done2 = self._loop(ir.Constant(I64, 0), cnt, "agg")
        if not self.dense:
            self._prefetch(lambda k: self._ahead(j, k, cnt, lambda r: b.add(t, b.zext(b.load(b.gep(selp, [r])), I64))))
        self.i = b.add(t, b.zext(b.load(b.gep(selp, [j])), I64))
        self.latch = latch2
        self.vals, self.nulls = {}, {}
        g = self._group()
        self._update(g)
        b.branch(latch2)
        b.position_at_end(done2)
        b.branch(tile_latch)
        b.position_at_end(done)
        b.ret(self.end)

    # -- prefetching
    def _ahead(self, j, k: int, end, row):
        """Row number of the k-th row after position ``j`` (``j`` itself near the end)."""
        b = self.b
        ja = b.add(j, ir.Constant(I64, k))
        return row(b.select(b.icmp_signed("<", ja, end), ja, j))

    def _slot_of(self, r):
        """Pointer to row ``r``'s first hash slot (its key taken as not NULL)."""
        b, nk = self.b, len(self.shape.keys)
        keys = []
        for j, slot in enumerate(self.shape.keys):
            v = b.load(b.gep(self.cols[slot], [r]))
            v = v if self.shape.inputs[slot] == "i8" else b.sext(v, I64)
            pane = self.shape.pane(j)
            if pane is not None:
                hop = pane[2]
                h = None if hop < 0 else b.load(b.gep(self.cols[hop], [r]))
                v = self._pane_index(v, pane, h if h is None or self.shape.inputs[hop] == "i8" else b.sext(h, I64))
            keys.append(v)
        k2 = keys[1] if nk > 1 else ir.Constant(I64, 0)
        return b.gep(self.slots, [b.and_(_hash(b, keys[0], k2, ir.Constant(I8, 0)), self.mask)])

    def _prefetch(self, ahead) -> None:
        """Two-stage software prefetch for generic tables (``ahead(k)``: the row
        k rows on).  The row PREFETCH_AHEAD on gets its hash slot fetched; the
        row half as far on, whose slot has arrived by now, gets the key and
        state lines of the group in that slot.  On a table far larger than the
        caches each of those is a miss; fetched early they overlap instead of
        stalling the row that needs them.  A NULL key, a collision or a new
        group only fetch useless lines: prefetches never fault.  Dense tables
        are prefetched well enough by the hardware at the sizes they are
        chosen for (explicit prefetches measured no faster)."""
        b = self.b
        if not self.shape.keys:
            return
        b.prefetch(self._slot_of(ahead(PREFETCH_AHEAD)))
        gid = b.load(self._slot_of(ahead(PREFETCH_AHEAD // 2)))
        g = b.sext(b.select(b.icmp_signed("<", gid, ir.Constant(I32, 0)), ir.Constant(I32, 0), gid), I64)
        b.prefetch(b.gep(self.gk[0], [g]), write=False)
        if len(self.shape.keys) > 1:
            b.prefetch(b.gep(self.gk[1], [g]), write=False)
        b.prefetch(b.gep(self.gflags, [g]), write=False)
        b.prefetch(b.gep(self.rows, [g]))
        for ptrs in self.aggp:
            for p in ptrs:
                b.prefetch(b.gep(p, [g]))

    # -- row body helpers (the body is a chain of blocks; each dominates the next)
    def _new_block(self, name):
        return self.fn.append_basic_block(name)

    def _fail_here(self, cond, name):
        """if cond: return i (leave the row untouched for the caller)."""
        b = self.b
        fail = self._new_block(name + "_fail")
        cont = self._new_block(name + "_ok")
        b.cbranch(cond, fail, cont)
        b.position_at_end(fail)
        b.ret(self.i)
        b.position_at_end(cont)

    def value(self, slot):
        v = self.vals.get(slot)
        if v is None:
            v = self.b.load(self.b.gep(self.cols[slot], [self.i]))
            self.vals[slot] = v
        return v

    def is_null(self, slot):
        """i1 NULL flag of this row's value in ``slot`` (constant false when not nullable)."""
        if not self._nullable(slot):
            return ir.Constant(I1, 0)
        v = self.nulls.get(slot)
        if v is None:
            b = self.b
            v = b.icmp_unsigned("!=", b.load(b.gep(self.nullp[slot], [self.i])), ir.Constant(I8, 0))
            self.nulls[slot] = v
        return v

    def _leaf(self, leaf, domain):
        b = self.b
        if leaf[0] == "p":
            raw = self.params[leaf[1]]
            return raw if domain == "i" else b.bitcast(raw, F64)
        _, slot, via = leaf
        dt = self.shape.inputs[slot]
        v = self.value(slot)
        if domain == "i":
            return v if dt == "i8" else b.sext(v, I64)
        if dt[0] == "i":
            if via == "f4":
                return b.fpext(b.sitofp(v, F32), F64)
            return b.sitofp(v, F64)
        return v if dt == "f8" else b.fpext(v, F64)

    def _conj_value(self, cj):
        """i1: the conjunct is TRUE for this row (NULL and FALSE both reject)."""
        op, left, right, domain = cj
        b = self.b
        x, y = self._leaf(left, domain), self._leaf(right, domain)
        if domain == "i":
            ok = b.icmp_signed({"=": "==", "<>": "!="}.get(op, op), x, y)
        else:
            ok = _pg_float_compare(b, op, x, y)
        for leaf in (left, right):
            if leaf[0] == "c":
                ok = b.and_(ok, b.not_(self.is_null(leaf[1])))
        return ok

    def _key(self, j):
        """(int64 value, i1 null) of grouping key j."""
        slot = self.shape.keys[j]
        b = self.b
        nl = self.is_null(slot)
        v = self.value(slot)
        if self.shape.inputs[slot] != "i8":
            v = b.sext(v, I64)
        pane = self.shape.pane(j)
        if pane is not None:
            hop = pane[2]
            h = None
            if hop >= 0:
                h = self.value(hop)
                h = h if self.shape.inputs[hop] == "i8" else b.sext(h, I64)
                nl = b.or_(nl, self.is_null(hop))
            v = self._pane_index(v, pane, h)
        v = b.select(nl, ir.Constant(I64, 0), v)
        return v, nl

    def _pane_index(self, us, pane, hop):
        """floor((us - origin) / slide) [- hop]: the slide is a constant of the
        module, so the division compiles to a multiply and shifts."""
        b = self.b
        slide, origin, _h = pane
        x = b.sub(us, ir.Constant(I64, origin)) if origin else us
        s = ir.Constant(I64, slide)
        q = b.sdiv(x, s)
        q = b.sub(q, b.zext(b.icmp_signed("<", b.srem(x, s), ir.Constant(I64, 0)), I64))
        return q if hop is None else b.sub(q, hop)

    def _group(self):
        b = self.b
        nk = len(self.shape.keys)
        keys = [self._key(j) for j in range(nk)]
        if self.dense:
            idx = []
            for j, (v, nl) in enumerate(keys):
                d = b.sub(v, self.mins[j])
                out = b.and_(b.not_(nl), b.icmp_unsigned(">", d, self.ranges[j]))
                self._fail_here(out, f"guard{j}")
                idx.append(b.select(nl, b.add(self.ranges[j], ir.Constant(I64, 1)), d))
            if nk == 0:
                return ir.Constant(I64, 0)
            return idx[0] if nk == 1 else b.add(b.mul(idx[0], self.stride2), idx[1])
        zero = ir.Constant(I64, 0)
        k1, n1 = keys[0] if nk > 0 else (zero, ir.Constant(I1, 0))
        k2, n2 = keys[1] if nk > 1 else (zero, ir.Constant(I1, 0))
        nb = b.or_(b.zext(n1, I8), b.shl(b.zext(n2, I8), ir.Constant(I8, 1)))
        h = _hash(b, k1, k2, nb)
        pos0 = b.and_(h, self.mask)
        before = b.block
        probe = self._new_block("probe")
        b.branch(probe)
        b.position_at_end(probe)
        pos = b.phi(I64, "pos")
        pos.add_incoming(pos0, before)
        gid = b.load(b.gep(self.slots, [pos]))
        empty = b.icmp_signed("<", gid, ir.Constant(I32, 0))
        newg = self._new_block("newgroup")
        cmpb = self._new_block("cmpkey")
        found = self._new_block("found")
        b.cbranch(empty, newg, cmpb)
        # compare stored key
        b.position_at_end(cmpb)
        g64 = b.sext(gid, I64)
        eq = b.icmp_unsigned("==", b.load(b.gep(self.gk[0], [g64])), k1)
        if nk > 1:           # with one key the second key word is always 0
            eq = b.and_(eq, b.icmp_unsigned("==", b.load(b.gep(self.gk[1], [g64])), k2))
        eq = b.and_(eq, b.icmp_unsigned("==", b.load(b.gep(self.gflags, [g64])), nb))
        nxt = self._new_block("probe_next")
        b.cbranch(eq, found, nxt)
        b.position_at_end(nxt)
        pos.add_incoming(b.and_(b.add(pos, ir.Constant(I64, 1)), self.mask), nxt)
        b.branch(probe)
        # new group
        b.position_at_end(newg)
        cnt_p = self.ctl
        lim_p = b.gep(self.ctl, [ir.Constant(I64, 1)])
        n = b.load(cnt_p)
        full = b.icmp_signed(">=", n, b.load(lim_p))
        self._fail_here(full, "full")
        b.store(k1, b.gep(self.gk[0], [n]))
        b.store(k2, b.gep(self.gk[1], [n]))
        b.store(nb, b.gep(self.gflags, [n]))
        b.store(b.trunc(n, I32), b.gep(self.slots, [pos]))
        b.store(b.add(n, ir.Constant(I64, 1)), cnt_p)
        newdone = b.block
        b.branch(found)
        b.position_at_end(found)
        g = b.phi(I64, "g")
        g.add_incoming(g64, cmpb)
        g.add_incoming(n, newdone)
        return g

    def _update(self, g):
        """Aggregate one row into group ``g``.  Counts are kept as NULL counts
        (non-NULL count = rows - nulls at conversion), so an input compiled as
        not nullable costs no count update at all (one read-modify-write of
        three for sum over a NOT NULL column)."""
        b = self.b
        rp = b.gep(self.rows, [g])
        b.store(b.add(b.load(rp), ir.Constant(I64, 1)), rp)
        for (kind, slot), ptrs in zip(self.shape.aggs, self.aggp):
            if kind == "star":
                continue
            nl = self.is_null(slot)
            nullable = self._nullable(slot)
            if kind == "count":
                if nullable:
                    p = b.gep(ptrs[0], [g])
                    b.store(b.add(b.load(p), b.zext(nl, I64)), p)
                continue
            dt = self.shape.inputs[slot]
            v = self.value(slot)
            if kind in ("sum_i", "sum_f", "sum_128"):
                sp = b.gep(ptrs[0], [g])
                if kind == "sum_f":
                    x = v if dt == "f8" else (b.fpext(v, F64) if dt == "f4" else b.sitofp(v, F64))
                    if nullable:
                        x = b.select(nl, ir.Constant(F64, -0.0), x)
                    b.store(b.fadd(b.load(sp), x), sp)
                else:
                    ty = I64 if kind == "sum_i" else I128
                    x = v if v.type == ty else b.sext(v, ty)
                    if nullable:
                        x = b.select(nl, ir.Constant(ty, 0), x)
                    if ty is I128:
                        b.store(b.add(b.load(sp, align=8), x), sp, align=8)
                    else:
                        b.store(b.add(b.load(sp), x), sp)
                if nullable:
                    cp = b.gep(ptrs[1], [g])
                    b.store(b.add(b.load(cp), b.zext(nl, I64)), cp)
                continue
            # min / max, PostgreSQL order for floats (NaN above every number)
            vp, hp = b.gep(ptrs[0], [g]), b.gep(ptrs[1], [g])
            cur, has = b.load(vp), b.load(hp)
            nohas = b.icmp_unsigned("==", has, ir.Constant(I8, 0))
            if dt[0] == "i":
                better = b.icmp_signed("<" if kind == "min" else ">", v, cur)
            else:
                vnan = b.fcmp_unordered("uno", v, v)
                cnan = b.fcmp_unordered("uno", cur, cur)
                if kind == "max":
                    better = b.or_(b.fcmp_ordered(">", v, cur), b.and_(vnan, b.not_(cnan)))
                else:
                    better = b.or_(b.fcmp_ordered("<", v, cur), b.and_(cnan, b.not_(vnan)))
            take = b.and_(b.not_(nl), b.or_(nohas, better))
            b.store(b.select(take, v, cur), vp)
            b.store(b.or_(has, b.zext(b.not_(nl), I8)), hp)


def _pg_float_compare(b, op: str, x, y):
    """PostgreSQL's float order (float8_cmp_internal): NaN equals NaN and
    sorts above every other value, so ``NaN > 0`` and ``NaN = NaN`` are true."""
    xn, yn = b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y)
    both = b.and_(xn, yn)
    if op in ("=", "<>"):
        eq = b.or_(b.fcmp_ordered("==", x, y), both)
        return eq if op == "=" else b.not_(eq)
    ordered = b.fcmp_ordered(op, x, y)
    nan_side = {"<": b.and_(b.not_(xn), yn), "<=": yn, ">": b.and_(xn, b.not_(yn)), ">=": xn}[op]
    return b.or_(ordered, nan_side)


def build_module(shape: Shape, variants=("gen", "spec"), names=None, unroll: int = SEL_UNROLL) -> str:
    """IR text of ``variants``; ``names`` gives their symbols (unique per engine:
    many modules share one MCJIT engine), by default the variant names.
    ``unroll`` 1 for tier-1 code (less to compile; tier 2 unrolls)."""
    m = ir.Module(name="ss_kernel")
    for v, name in zip(variants, names or variants):
        _Kernel(m, shape, name, dense=(v == "spec"), unroll=unroll).build()
    return str(m)


def build_runtime_module() -> str:
    """``void rehash(i32* slots, i64 mask, i64* gk1, i64* gk2, i8* gflags, i64 n)``."""
    m = ir.Module(name="ss_runtime")
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [I32.as_pointer(), I64, I64.as_pointer(), I64.as_pointer(),
                                                         I8.as_pointer(), I64]), "rehash")
    slots, mask, gk1, gk2, gfl, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    entry = b.block
    head = fn.append_basic_block("head")
    body = fn.append_basic_block("body")
    probe = fn.append_basic_block("probe")
    nextp = fn.append_basic_block("next")
    place = fn.append_basic_block("place")
    done = fn.append_basic_block("done")
    b.branch(head)
    b.position_at_end(head)
    g = b.phi(I64)
    g.add_incoming(ir.Constant(I64, 0), entry)
    b.cbranch(b.icmp_signed("<", g, n), body, done)
    b.position_at_end(body)
    # the slot of a group PREFETCH_AHEAD on: growing a table of millions of
    # groups is one cache miss per group otherwise, taken one at a time
    ga = b.add(g, ir.Constant(I64, PREFETCH_AHEAD))
    ga = b.select(b.icmp_signed("<", ga, n), ga, g)
    ha = _hash(b, b.load(b.gep(gk1, [ga])), b.load(b.gep(gk2, [ga])), b.load(b.gep(gfl, [ga])))
    b.prefetch(b.gep(slots, [b.and_(ha, mask)]))
    h = _hash(b, b.load(b.gep(gk1, [g])), b.load(b.gep(gk2, [g])), b.load(b.gep(gfl, [g])))
    p0 = b.and_(h, mask)
    b.branch(probe)
    b.position_at_end(probe)
    pos = b.phi(I64)
    pos.add_incoming(p0, body)
    cur = b.load(b.gep(slots, [pos]))
    b.cbranch(b.icmp_signed("<", cur, ir.Constant(I32, 0)), place, nextp)
    b.position_at_end(nextp)
    pos.add_incoming(b.and_(b.add(pos, ir.Constant(I64, 1)), mask), nextp)
    b.branch(probe)
    b.position_at_end(place)
    b.store(b.trunc(g, I32), b.gep(slots, [pos]))
    g.add_incoming(b.add(g, ir.Constant(I64, 1)), place)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    _build_drive(m)
    return str(m)


def _build_drive(m: ir.Module) -> None:
    """``i64 drive(i64 kernel, i64* args, i64* ctl, i64* out)``: the morsel loop
    in native code.  Threads sharing ``ctl`` = [next row (atomic), end, step]
    take morsels with an atomic add and run ``kernel`` on each, so a thread
    makes one ctypes call (one GIL release) per batch, not one per morsel.
    Returns -1 when no morsel is left, or the row where the kernel stopped
    (guard failure / full table) with out[0] = that morsel's end, for the
    caller to finish in Python.  out[1] accumulates the rows taken."""
    kty = ir.FunctionType(I64, [I64.as_pointer(), I64, I64])
    fn = ir.Function(m, ir.FunctionType(I64, [I64, I64.as_pointer(), I64.as_pointer(), I64.as_pointer()]), "drive")
    fp, args, ctl, out = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    kern = b.inttoptr(fp, kty.as_pointer())
    end = b.load(b.gep(ctl, [ir.Constant(I64, 1)]))
    step = b.load(b.gep(ctl, [ir.Constant(I64, 2)]))
    loop = fn.append_basic_block("loop")
    body = fn.append_basic_block("body")
    fail = fn.append_basic_block("fail")
    exhausted = fn.append_basic_block("exhausted")
    b.branch(loop)
    b.position_at_end(loop)
    a = b.atomic_rmw("add", ctl, step, "monotonic")
    b.cbranch(b.icmp_signed(">=", a, end), exhausted, body)
    b.position_at_end(body)
    e0 = b.add(a, step)
    e = b.select(b.icmp_signed("<", e0, end), e0, end)
    taken = b.gep(out, [ir.Constant(I64, 1)])
    b.store(b.add(b.load(taken), b.sub(e, a)), taken)
    r = b.call(kern, [args, a, e])
    b.cbranch(b.icmp_signed(">=", r, e), loop, fail)
    b.position_at_end(fail)
    b.store(e, out)
    b.ret(r)
    b.position_at_end(exhausted)
    b.ret(ir.Constant(I64, -1))
