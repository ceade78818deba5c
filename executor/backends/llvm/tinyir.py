"""A minimal LLVM IR text builder: the subset of ``llvmlite.ir`` that
``codegen`` uses, with the same names and call signatures.

Why: generating a kernel with ``llvmlite.ir`` cost about 4 ms of Python per
variant (object per instruction, name de-duplication, recursive ``str``
formatting) -- as much as LLVM's whole -O0 code generation, and half the
compile latency a pipeline waits for.  Here every instruction is formatted
into its text line when it is built (only phi nodes, which get incoming
edges later, are rendered at the end), so building a kernel costs a few
hundred microseconds.  The text it prints is the same IR llvmlite prints
(typed-pointer syntax, which LLVM's parser upgrades), and the tests parse
it with verification on.
"""
from __future__ import annotations

import struct

# ---------------------------------------------------------------- types


class Type:
    __slots__ = ("text", "_ptr")

    def __init__(self, text: str) -> None:
        self.text = text
        self._ptr: PointerType | None = None

    def as_pointer(self) -> "PointerType":
        if self._ptr is None:
            self._ptr = PointerType(self)
        return self._ptr

    def __str__(self) -> str:
        return self.text


class _IntType(Type):
    __slots__ = ("width",)

    def __init__(self, width: int) -> None:
        super().__init__(f"i{width}")
        self.width = width


_ints: dict = {}


def IntType(width: int) -> _IntType:
    """Interned, so ``v.type == I64`` and ``ty is I128`` work as with llvmlite."""
    t = _ints.get(width)
    if t is None:
        t = _ints[width] = _IntType(width)
    return t


_float = Type("float")
_double = Type("double")
_void = Type("void")


def FloatType() -> Type:
    return _float


def DoubleType() -> Type:
    return _double


def VoidType() -> Type:
    return _void


class PointerType(Type):
    __slots__ = ("pointee",)

    def __init__(self, pointee: Type) -> None:
        super().__init__(pointee.text + "*")
        self.pointee = pointee


class ArrayType(Type):
    __slots__ = ("element", "count")

    def __init__(self, element: Type, count: int) -> None:
        super().__init__(f"[{count} x {element.text}]")
        self.element = element
        self.count = count


class FunctionType(Type):
    __slots__ = ("ret", "args")

    def __init__(self, ret: Type, args) -> None:
        super().__init__(f"{ret.text} ({', '.join(a.text for a in args)})")
        self.ret = ret
        self.args = list(args)


# ---------------------------------------------------------------- values


class Value:
    __slots__ = ("type", "ref", "attrs")

    def __init__(self, ty: Type, ref: str) -> None:
        self.type = ty
        self.ref = ref
        self.attrs = ""

    def add_attribute(self, attr: str) -> None:
        """Function arguments: ``noalias`` and friends."""
        self.attrs += " " + attr

    def typed(self) -> str:
        return f"{self.type.text} {self.ref}"


def Constant(ty: Type, value) -> Value:
    if ty is _double or ty is _float:
        # exact: LLVM takes the double's bit pattern in hex (float constants too)
        return Value(ty, "0x%016X" % struct.unpack("<Q", struct.pack("<d", float(value)))[0])
    if ty.text == "i1":
        return Value(ty, "true" if value else "false")
    return Value(ty, str(int(value)))


class Block:
    __slots__ = ("name", "lines", "fn")

    def __init__(self, fn: "Function", name: str) -> None:
        self.fn = fn
        self.name = name
        self.lines: list = []       # str, or a _Phi rendered at the end


class _Phi(Value):
    __slots__ = ("incoming",)

    def __init__(self, ty: Type, ref: str) -> None:
        super().__init__(ty, ref)
        self.incoming: list = []

    def add_incoming(self, value: Value, block: Block) -> None:
        self.incoming.append((value, block))

    def __str__(self) -> str:
        edges = ", ".join(f"[{v.ref}, %\"{b.name}\"]" for v, b in self.incoming)
        return f"  {self.ref} = phi {self.type.text} {edges}"


class Function(Value):
    def __init__(self, module: "Module", fnty: FunctionType, name: str) -> None:
        super().__init__(fnty.as_pointer(), f'@"{name}"')
        self.ftype = fnty
        self.name = name
        self.args = tuple(Value(t, f"%a{k}") for k, t in enumerate(fnty.args))
        self.blocks: list = []
        self._names: dict = {}
        self._tmp = 0
        self.module = module
        module.functions.append(self)

    def append_basic_block(self, name: str = "") -> Block:
        name = name or "bb"
        k = self._names.get(name, 0)
        self._names[name] = k + 1
        b = Block(self, name if k == 0 else f"{name}.{k}")
        self.blocks.append(b)
        return b

    def tmp(self, name: str = "") -> str:
        self._tmp += 1
        return f'%"{name}.{self._tmp}"' if name else f"%t{self._tmp}"

    def __str__(self) -> str:
        args = ", ".join(f"{a.type.text}{a.attrs} {a.ref}" for a in self.args)
        out = [f"define {self.ftype.ret.text} {self.ref}({args})", "{"]
        for b in self.blocks:
            out.append(f'"{b.name}":')
            out.extend(x if isinstance(x, str) else str(x) for x in b.lines)
        out.append("}")
        return "\n".join(out)


class Module:
    def __init__(self, name: str = "") -> None:
        self.name = name
        self.functions: list = []
        self.declarations: set[str] = set()     # intrinsics the builder called

    def __str__(self) -> str:
        parts = sorted(self.declarations) + [str(f) for f in self.functions]
        return f'; ModuleID = "{self.name}"\n\n' + "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------- builder

_ICMP_S = {"==": "eq", "!=": "ne", "<": "slt", "<=": "sle", ">": "sgt", ">=": "sge"}
_ICMP_U = {"==": "eq", "!=": "ne", "<": "ult", "<=": "ule", ">": "ugt", ">=": "uge"}
_FCMP_O = {"==": "oeq", "!=": "one", "<": "olt", "<=": "ole", ">": "ogt", ">=": "oge", "ord": "ord", "uno": "uno"}
_FCMP_U = {"==": "ueq", "!=": "une", "<": "ult", "<=": "ule", ">": "ugt", ">=": "uge", "ord": "ord", "uno": "uno"}


class IRBuilder:
    def __init__(self, block: Block) -> None:
        self.block = block

    def position_at_end(self, block: Block) -> None:
        self.block = block

    def _emit(self, ty: Type, text: str, name: str = "") -> Value:
        ref = self.block.fn.tmp(name)
        self.block.lines.append(f"  {ref} = {text}")
        return Value(ty, ref)

    # -- arithmetic and logic
    def _bin(self, op: str, a: Value, b: Value, name: str = "") -> Value:
        return self._emit(a.type, f"{op} {a.type.text} {a.ref}, {b.ref}", name)

    def add(self, a, b, name=""):
        return self._bin("add", a, b, name)

    def sub(self, a, b, name=""):
        return self._bin("sub", a, b, name)

    def mul(self, a, b, name=""):
        return self._bin("mul", a, b, name)

    def sdiv(self, a, b, name=""):
        return self._bin("sdiv", a, b, name)

    def srem(self, a, b, name=""):
        return self._bin("srem", a, b, name)

    def and_(self, a, b, name=""):
        return self._bin("and", a, b, name)

    def or_(self, a, b, name=""):
        return self._bin("or", a, b, name)

    def xor(self, a, b, name=""):
        return self._bin("xor", a, b, name)

    def shl(self, a, b, name=""):
        return self._bin("shl", a, b, name)

    def lshr(self, a, b, name=""):
        return self._bin("lshr", a, b, name)

    def fadd(self, a, b, name=""):
        return self._bin("fadd", a, b, name)

    def not_(self, a, name=""):
        return self._emit(a.type, f"xor {a.type.text} {a.ref}, -1", name)

    # -- casts
    def _cast(self, op: str, v: Value, ty: Type, name: str = "") -> Value:
        return self._emit(ty, f"{op} {v.type.text} {v.ref} to {ty.text}", name)

    def zext(self, v, ty, name=""):
        return self._cast("zext", v, ty, name)

    def sext(self, v, ty, name=""):
        return self._cast("sext", v, ty, name)

    def trunc(self, v, ty, name=""):
        return self._cast("trunc", v, ty, name)

    def sitofp(self, v, ty, name=""):
        return self._cast("sitofp", v, ty, name)

    def fpext(self, v, ty, name=""):
        return self._cast("fpext", v, ty, name)

    def bitcast(self, v, ty, name=""):
        return self._cast("bitcast", v, ty, name)

    def inttoptr(self, v, ty, name=""):
        return self._cast("inttoptr", v, ty, name)

    # -- comparisons and select
    def icmp_signed(self, op, a, b, name=""):
        return self._emit(IntType(1), f"icmp {_ICMP_S[op]} {a.type.text} {a.ref}, {b.ref}", name)

    def icmp_unsigned(self, op, a, b, name=""):
        return self._emit(IntType(1), f"icmp {_ICMP_U[op]} {a.type.text} {a.ref}, {b.ref}", name)

    def fcmp_ordered(self, op, a, b, name=""):
        return self._emit(IntType(1), f"fcmp {_FCMP_O[op]} {a.type.text} {a.ref}, {b.ref}", name)

    def fcmp_unordered(self, op, a, b, name=""):
        return self._emit(IntType(1), f"fcmp {_FCMP_U[op]} {a.type.text} {a.ref}, {b.ref}", name)

    def select(self, cond, a, b, name=""):
        return self._emit(a.type, f"select i1 {cond.ref}, {a.type.text} {a.ref}, {b.type.text} {b.ref}", name)

    # -- memory
    def gep(self, ptr: Value, indices, name=""):
        """Typed-pointer GEP; the result type follows the indices (arrays step in)."""
        assert isinstance(ptr.type, PointerType)
        ty = ptr.type.pointee
        res = ty
        for _ in indices[1:]:
            assert isinstance(res, ArrayType)
            res = res.element
        idx = ", ".join(i.typed() for i in indices)
        return self._emit(res.as_pointer(), f"getelementptr {ty.text}, {ptr.type.text} {ptr.ref}, {idx}", name)

    def load(self, ptr, name="", align=None):
        ty = ptr.type.pointee
        al = f", align {align}" if align else ""
        return self._emit(ty, f"load {ty.text}, {ptr.type.text} {ptr.ref}{al}", name)

    def prefetch(self, ptr, write: bool = True) -> None:
        """``llvm.prefetch`` of the line at ``ptr`` into all cache levels."""
        self.block.fn.module.declarations.add(
            "declare void @llvm.prefetch.p0(ptr nocapture readonly, i32 immarg, i32 immarg, i32 immarg)")
        self.block.lines.append(f"  call void @llvm.prefetch.p0(ptr {ptr.ref}, i32 {int(write)}, i32 3, i32 1)")

    def store(self, value, ptr, align=None):
        al = f", align {align}" if align else ""
        self.block.lines.append(f"  store {value.type.text} {value.ref}, {ptr.type.text} {ptr.ref}{al}")

    def alloca(self, ty, name=""):
        return self._emit(ty.as_pointer(), f"alloca {ty.text}", name)

    def atomic_rmw(self, op, ptr, val, ordering, name=""):
        return self._emit(val.type, f"atomicrmw {op} {ptr.type.text} {ptr.ref}, {val.typed()} {ordering}", name)

    def call(self, fn, args, name=""):
        fty = fn.type.pointee
        a = ", ".join(v.typed() for v in args)
        if fty.ret is _void:
            self.block.lines.append(f"  call void {fn.ref}({a})")
            return None
        return self._emit(fty.ret, f"call {fty.ret.text} {fn.ref}({a})", name)

    def phi(self, ty, name=""):
        p = _Phi(ty, self.block.fn.tmp(name))
        self.block.lines.append(p)
        return p

    # -- terminators
    def branch(self, target: Block) -> None:
        self.block.lines.append(f'  br label %"{target.name}"')

    def cbranch(self, cond, a: Block, b: Block) -> None:
        self.block.lines.append(f'  br i1 {cond.ref}, label %"{a.name}", label %"{b.name}"')

    def ret(self, v) -> None:
        self.block.lines.append(f"  ret {v.typed()}")

    def ret_void(self) -> None:
        self.block.lines.append("  ret void")
