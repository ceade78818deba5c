"""TABLESAMPLE in the planner (issue 18, item 3): the method checked to
exist, the relation checked to be a table, the arguments bound; what a
method does to the rows is ``execution.sampling``, the syntax is
``tablesample_syntax``."""
from __future__ import annotations

from typing import Any

from sqlglot import exp

from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError

from ..execution import operators, sampling
from .binder import ExprBinder, Scope
from .tablesample_syntax import UNITS

UNDEFINED_OBJECT = "42704"


def method_of(node: exp.TableSample) -> str:
    """The method named, checked to exist (42704 as PostgreSQL)."""
    method = node.args["method"].name.lower() if node.args.get("method") is not None else ""
    if method not in sampling.METHODS:
        raise PgError(UNDEFINED_OBJECT, f'tablesample method "{method}" does not exist')
    return method


def sampled(planner: Any, node: exp.TableSample, op: operators.Op, rel: Any) -> operators.Op:
    """``op`` (the scan of ``rel``) under its TABLESAMPLE."""
    method = method_of(node)
    kind = getattr(rel, "kind", None)
    if kind == "f" and method != "bernoulli":
        raise PgError(FEATURE_NOT_SUPPORTED, f"TABLESAMPLE {method.upper()} on a stream is not implemented yet",
                      hint="For a fixed-size uniform sample of a stream, aggregate it: SELECT reservoir_sample(x, n) "
                           "FROM s (per group with GROUP BY); BERNOULLI (p) samples rows as they arrive.")
    if kind not in ("r", "m", "f"):
        raise PgError(FEATURE_NOT_SUPPORTED, "TABLESAMPLE clause can only be applied to tables and materialized views",
                      hint="Sample the tables the view reads.")
    args = [node.args["percent"]] if node.args.get("percent") is not None else list(node.expressions)
    if len(args) != 1:
        raise PgError("2202H", f"tablesample method {method} requires 1 argument, not {len(args)}")
    b = ExprBinder(planner, Scope([], None), context="TABLESAMPLE")
    arg = planner.coerce(b.bind(args[0]), type_oids.FLOAT8)
    seed = node.args.get("seed")
    seed_e = planner.coerce(b.bind(seed), type_oids.FLOAT8) if seed is not None else None
    if kind == "f":                  # an insert-time filter of the stream pipeline
        return operators.Filter(op, sampling.BernoulliMask(arg, seed_e))
    return sampling.SampleScan(op, method, arg, seed_e, node.meta.get(UNITS))
