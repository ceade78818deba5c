"""Named notation (``f(name => value)``) for calls: splitting a call's
arguments into values and names, and the parameter names and defaults of
the built-in functions PostgreSQL 15 declares with them (pg_proc's
proargnames), so ``make_interval(days => 3)`` binds as the positional call
``make_interval(0, 0, 0, 3, 0, 0, 0.0)``.

Why a table here rather than the whole catalog's names: the built-ins that
take named arguments in practice are the make_* constructors; a named
argument to any other built-in is refused (42883), as PostgreSQL does for
a name the function does not have.
"""
from __future__ import annotations

from typing import Callable

from sqlglot import exp

from splitstream.protocol.errors import SYNTAX_ERROR, UNDEFINED_FUNCTION, PgError

from ..execution.signatures import NO_MATCH_HINT

#: name -> (parameter names, default SQL per parameter or None for none)
BUILTIN_PARAMETERS: dict[str, tuple[tuple[str, ...], tuple[str | None, ...]]] = {
    "make_interval": (("years", "months", "weeks", "days", "hours", "mins", "secs"),
                      ("0", "0", "0", "0", "0", "0", "0.0")),
    "make_date": (("year", "month", "day"), (None, None, None)),
    "make_time": (("hour", "min", "sec"), (None, None, None)),
    "make_timestamp": (("year", "month", "mday", "hour", "min", "sec"), (None,) * 6),
    "make_timestamptz": (("year", "month", "mday", "hour", "min", "sec", "timezone"), (None,) * 6 + ("",)),
}


def _name_of(node: exp.Expression) -> str:
    this = node.this
    if isinstance(this, exp.Identifier):
        return this.this if this.quoted else this.this.lower()
    return this.name.lower()


def split_named(nodes: list[exp.Expression]) -> tuple[list[exp.Expression], list[str | None]]:
    """A call's argument values and their names (None: positional), with
    PostgreSQL's 42601 for a repeated name or a positional after a named one."""
    vals: list[exp.Expression] = []
    names: list[str | None] = []
    for a in nodes:
        if isinstance(a, (exp.Kwarg, exp.PropertyEQ)):
            name = _name_of(a)
            if name in names:
                raise PgError(SYNTAX_ERROR, f'argument name "{name}" used more than once')
            names.append(name)
            vals.append(a.expression)
        else:
            if names and names[-1] is not None:
                raise PgError(SYNTAX_ERROR, "positional argument cannot follow named argument")
            names.append(None)
            vals.append(a)
    return vals, names


def has_named(nodes: list[exp.Expression]) -> bool:
    return any(isinstance(a, (exp.Kwarg, exp.PropertyEQ)) for a in nodes)


def positional(name: str, nodes: list[exp.Expression],
               type_name: Callable[[exp.Expression], str]) -> list[exp.Expression]:
    """The arguments of a built-in call in named notation, as positional
    ones with the declared defaults filled in (a trailing "" default is
    left out: make_timestamptz without timezone is the 6-argument form);
    ``type_name`` names an argument's type for the 42883 message."""
    vals, names = split_named(nodes)
    words = _call_words(vals, names, type_name)
    params, defaults = BUILTIN_PARAMETERS.get(name, ((), ()))
    slots: list[exp.Expression | None] = [None] * len(params)
    for i, (v, n) in enumerate(zip(vals, names)):
        at = i if n is None else (params.index(n) if n in params else -1)
        if at < 0 or at >= len(params) or slots[at] is not None:
            raise _no_such_call(name, words)
        slots[at] = v
    out: list[exp.Expression] = []
    for i, (slot, default) in enumerate(zip(slots, defaults)):
        if slot is None:
            if default is None:
                raise _no_such_call(name, words)
            if default == "":
                if any(s is not None for s in slots[i:]):
                    raise _no_such_call(name, words)
                break
            slot = exp.Literal.number(default)
        out.append(slot)
    return out


def _call_words(vals: list[exp.Expression], names: list[str | None],
                type_name: Callable[[exp.Expression], str]) -> str:
    return ", ".join((f"{n} => " if n else "") + type_name(v) for v, n in zip(vals, names))


def no_such_call(name: str, nodes: list[exp.Expression], type_name: Callable[[exp.Expression], str]) -> PgError:
    """42883 for a call in named notation, named as the user wrote it
    (make_interval(days => bigint), not the positional form it became)."""
    return _no_such_call(name, _call_words(*split_named(nodes), type_name))


def _no_such_call(name: str, words: str) -> PgError:
    return PgError(UNDEFINED_FUNCTION, f"function {name}({words}) does not exist", hint=NO_MATCH_HINT)
