"""pg_get_viewdef: a view's query printed as PostgreSQL 15's ruleutils.c prints it.

PostgreSQL does not keep a view's text: it deparses the stored query tree, so
clients (psql's ``\\d+`` and ``\\sv``, pg_views, pg_dump) see a canonical form:
lowercase function names, every column qualified by its range-table name, the
casts the parser inserted, and a fixed line layout.  splitstream keeps the
view's SQL; this module re-parses it and prints that canonical form, resolving
names and types against the catalog as PostgreSQL's parser would have.

The layout mirrors ruleutils' ``appendContextKeyword`` (an indent level moved
by fixed steps, a newline before each clause) and its two modes: plain
(``pg_get_viewdef(oid)``, pg_views: every operator parenthesised) and pretty
(``pg_get_viewdef(oid, true)``, psql: parentheses only where precedence needs
them, isSimpleNode's rules).  A query this printer does not know falls back to
the stored text rather than printing something wrong.
"""
from __future__ import annotations

import sqlglot
from sqlglot import exp

from splitstream.catalog.objects import definition_text, system_catalogs as system
from splitstream.protocol import oids as T
from splitstream.protocol.errors import PgError

from ..execution import privileges
from .binder import ident
from .dialect import DIALECT
from .planner import join_groups
from .viewdef_expr import _SQL_SYNTAX, JOIN, STD, UNKNOWN, VAR, ExprPrinter, Rte, Unsupported, _common, _quote_ident


class Printer(ExprPrinter):
    """get_query_def: a view's query, clause by clause."""

    def query(self, q: exp.Expression, start: int, names: list[str] | None, visible: bool) -> None:
        """get_query_def: a SELECT (or set operation) at indent ``start``;
        ``names``: the output column names (a view's), ``visible``: whether
        each column's name is printed when it is not the expression's own."""
        c = self.c
        c.indent = start
        with_ = q.args.get("with_")
        saved_ctes = self.ctes
        if with_ is not None:
            self.with_clause(with_)
        try:
            self._query_body(q, names, visible)
        finally:
            self.ctes = saved_ctes

    def with_clause(self, with_: exp.With) -> None:
        """get_with_clause: WITH name AS ( query ) on lines of their own."""
        c = self.c
        if with_.args.get("recursive"):
            raise Unsupported("WITH RECURSIVE")
        c.indent += STD
        c.buf += " "
        sep = "WITH "
        self.ctes = dict(self.ctes)
        for cte in with_.expressions:
            name = ident(cte.args["alias"].this)
            if cte.args["alias"].columns or cte.args.get("materialized") is not None:
                raise Unsupported("CTE options")
            c.buf += sep + _quote_ident(name) + " AS ("
            c.keyword("", 0, 0, 0)
            outer = c.indent
            self.query(cte.this, c.indent, None, True)
            c.indent = outer
            c.keyword("", 0, 0, 0)
            c.buf += ")"
            self.ctes[name] = self.output_columns(cte.this)
            sep = ", "
        c.indent -= STD
        c.keyword("", 0, 0, 0)

    def _query_body(self, q: exp.Expression, names: list[str] | None, visible: bool) -> None:
        c = self.c
        if isinstance(q, exp.SetOperation):
            self.setop(q, names, visible, top=True)
            self.order_limit(q)
            return
        if not isinstance(q, exp.Select):
            raise Unsupported(type(q).__name__)
        saved = c.scopes
        c.scopes = saved + [self.range_table(q)]
        try:
            self.basic_select(q, names, visible)
            self.order_limit(q)
        finally:
            c.scopes = saved

    def setop(self, q: exp.Expression, names: list[str] | None, visible: bool, top: bool = False) -> None:
        """get_setop_query: the branches of UNION / INTERSECT / EXCEPT, each
        keyword on a line of its own; nested set operations of another kind
        in parentheses."""
        c = self.c
        if not isinstance(q, exp.SetOperation):
            if not isinstance(q, exp.Select) or q.args.get("order") or q.args.get("limit") or q.args.get("offset"):
                raise Unsupported("set operation branch")
            saved = c.scopes
            c.scopes = saved + [self.range_table(q)]
            try:
                self.basic_select(q, names, visible)
            finally:
                c.scopes = saved
                c.indent -= STD
            return
        if not top and (q.args.get("order") or q.args.get("limit")):
            raise Unsupported("ordered set operation branch")
        word = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}[type(q)]
        all_ = not q.args.get("distinct", True)
        left = q.this
        need = isinstance(left, exp.SetOperation) and (type(left) is not type(q) or
                                                       (not left.args.get("distinct", True)) != all_)
        sub = STD if need else 0
        if need:
            c.buf += "("
            c.keyword("", sub, 0, 0)
        self.setop(left, names, visible)
        if need:
            c.keyword(") ", -sub, 0, 0)
        else:
            c.keyword("", -sub, 0, 0)
        c.buf += word + " " + ("ALL " if all_ else "")
        right = q.expression
        need = isinstance(right, exp.SetOperation)
        sub = STD if need else 0
        if need:
            c.buf += "("
        c.keyword("", sub, 0, 0)
        self.setop(right, names, False)
        c.indent -= sub
        if need:
            c.keyword(")", 0, 0, 0)

    def basic_select(self, q: exp.Select, names: list[str] | None, visible: bool) -> None:
        c = self.c
        c.indent += STD
        c.buf += " SELECT"
        distinct = q.args.get("distinct")
        if distinct is not None:
            on = distinct.args.get("on")
            if on is not None:
                c.buf += " DISTINCT ON (" + ", ".join(self.expr_text(e) for e in on.expressions) + ")"
            else:
                c.buf += " DISTINCT"
        self.target_list(q.expressions, names, visible)
        self.from_clause(q)
        where = q.args.get("where")
        if where is not None:
            c.keyword(" WHERE ", -STD, STD, 1)
            self.expr(where.this, None, False)
        group = q.args.get("group")
        if group is not None:
            c.keyword(" GROUP BY ", -STD, STD, 1)
            items = list(group.expressions)
            for kind in ("rollup", "cube", "grouping_sets"):
                items += group.args.get(kind) or []
            for i, g in enumerate(items):
                if i:
                    c.buf += ", "
                if isinstance(g, (exp.Rollup, exp.Cube)):     # get_rule_groupingset
                    c.buf += ("ROLLUP(" if isinstance(g, exp.Rollup) else "CUBE(")
                    for j, x in enumerate(g.expressions):
                        c.buf += ", " if j else ""
                        self.sort_group_item(self._positional(q, x))
                    c.buf += ")"
                elif isinstance(g, exp.Expression) and not isinstance(g, exp.GroupingSets):
                    self.sort_group_item(self._positional(q, g))
                else:
                    raise Unsupported("GROUPING SETS")
        having = q.args.get("having")
        if having is not None:
            c.keyword(" HAVING ", -STD, STD, 0)
            self.expr(having.this, None, False)
        windows = q.args.get("windows")
        if windows:
            c.keyword(" WINDOW ", -STD, STD, 1)
            c.buf += ", ".join(f"{_quote_ident(ident(w.this))} AS {self.window_spec(w)}" for w in windows)

    @staticmethod
    def _positional(q: exp.Expression, g: exp.Expression) -> exp.Expression:
        """GROUP BY 1 / ORDER BY 1: the select-list expression it names."""
        if isinstance(g, exp.Literal) and not g.is_string and str(g.this).isdigit():
            k = int(g.this)
            if 1 <= k <= len(q.expressions):
                e = q.expressions[k - 1]
                return e.this if isinstance(e, exp.Alias) else e
        if isinstance(g, exp.Column) and not g.table:
            for e in q.expressions:     # an output column's alias (ORDER BY total)
                if isinstance(e, exp.Alias) and e.alias == ident(g.this) and not any(
                        r.find(ident(g.this)) is not None for r in (q.meta.get("rtes") or [])):
                    return e.this
        return g

    @staticmethod
    def _column_number(q: exp.Expression, e: exp.Expression) -> int:
        if isinstance(e, exp.Literal) and not e.is_string and str(e.this).isdigit():
            return int(e.this)
        left = q
        while isinstance(left, exp.SetOperation):
            left = left.this
        if isinstance(e, exp.Column) and isinstance(left, exp.Select):
            for i, item in enumerate(left.expressions, 1):
                if (item.alias_or_name or "").lower() == ident(e.this):
                    return i
        raise Unsupported("ORDER BY of a set operation")

    def sort_group_item(self, e: exp.Expression) -> None:
        """get_rule_sortgroupclause: an expression other than a column in
        parentheses (always around function-like ones, which could read as a row)."""
        e = e.this if isinstance(e, exp.Paren) else e
        if isinstance(e, exp.Column):
            return self.expr(e, None, True)
        function_like = isinstance(e, (exp.Func, exp.Window, exp.Filter)) and not isinstance(
            e, (exp.Binary, exp.Cast, exp.Case) + tuple(_SQL_SYNTAX))
        need = self.c.pretty or function_like
        self.c.buf += "(" if need else ""
        self.expr(e, None, True)
        self.c.buf += ")" if need else ""

    def order_limit(self, q: exp.Expression) -> None:
        c = self.c
        order = q.args.get("order")
        if order is not None:
            c.keyword(" ORDER BY ", -STD, STD, 1)
            for i, o in enumerate(order.expressions):
                if i:
                    c.buf += ", "
                if isinstance(q, exp.SetOperation):    # force_colno: a set operation's output by position
                    c.buf += str(self._column_number(q, o.this))
                else:
                    self.sort_group_item(self._positional(q, o.this))
                if o.args.get("desc"):
                    c.buf += " DESC"
                nulls_first = o.args.get("nulls_first")
                if nulls_first is not None and bool(nulls_first) != bool(o.args.get("desc")):
                    c.buf += " NULLS FIRST" if nulls_first else " NULLS LAST"
        offset = q.args.get("offset")
        if offset is not None:
            c.keyword(" OFFSET ", -STD, STD, 0)
            self.expr(offset.expression, None, False)
        limit = q.args.get("limit")
        if limit is not None:
            c.keyword(" LIMIT ", -STD, STD, 0)
            value = limit.args.get("count") if isinstance(limit, exp.Fetch) else limit.expression
            if isinstance(limit, exp.Fetch) and (limit.args.get("limit_options") or exp.LimitOptions()).args.get(
                    "with_ties"):
                raise Unsupported("FETCH ... WITH TIES")
            if value is None:
                value = exp.Literal.number(1)      # FETCH FIRST ROW ONLY
            if isinstance(value, exp.Null) or isinstance(value, exp.Var) and value.name.upper() == "ALL":
                c.buf += "ALL"
            else:
                self.expr(value, None, False)

    def target_list(self, items: list[exp.Expression], names: list[str] | None, visible: bool) -> None:
        c = self.c
        sep = " "
        last_multiline = False
        colno = 0
        for e in self._expand_stars(items):
            c.buf += sep
            sep = ", "
            body = e.this if isinstance(e, exp.Alias) else e
            outer = c.buf
            c.buf = ""
            own = self.column_name(body)
            self.expr(body, None, True, top=True)
            attname = own if isinstance(body, exp.Column) else (None if visible else "?column?")
            colname = names[colno] if names is not None and colno < len(names) else (
                e.alias if isinstance(e, exp.Alias) else self.figure_name(body))
            colno += 1
            if colname and (attname is None or attname != colname):
                c.buf += " AS " + _quote_ident(colname)
            field_text, c.buf = c.buf, outer
            if field_text.startswith("\n"):
                c.buf = c.buf.rstrip(" ")
            else:
                line = c.buf[c.buf.rfind("\n") + 1:]
                if colno > 1 and (len(line) + len(field_text) > 0 or last_multiline):
                    c.keyword("", -STD, STD, VAR)
            last_multiline = "\n" in field_text.lstrip("\n") if field_text.startswith("\n") else "\n" in field_text
            c.buf += field_text

    def _expand_stars(self, items: list[exp.Expression]) -> list[exp.Expression]:
        """``*`` and ``t.*``: the columns they stand for (PostgreSQL stores them expanded)."""
        out: list[exp.Expression] = []
        for e in items:
            if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
                table = e.table if isinstance(e, exp.Column) else ""
                for rte in self.c.scopes[-1]:
                    if table and rte.refname != table:
                        continue
                    out.extend(exp.column(n, table=rte.refname, quoted=n != n.lower()) for n, _ in rte.columns
                               if n not in rte.hidden)
            else:
                out.append(e)
        return out

    # -- FROM ------------------------------------------------------------

    def range_table(self, q: exp.Select) -> list[Rte]:
        rtes: list[Rte] = []
        frm = q.args.get("from_")
        items = ([frm.this] if frm is not None else []) + [j.this for j in q.args.get("joins") or []]
        for item in items:
            rtes.append(self.rte_of(item))
        q.meta["rtes"] = rtes
        return rtes

    def rte_of(self, item: exp.Expression) -> Rte:
        alias = item.args.get("alias")
        refname = ident(alias.this) if alias is not None and alias.this is not None else None
        col_aliases = [ident(c) for c in alias.columns] if alias is not None else []
        if isinstance(item, exp.Table) and isinstance(item.this, exp.Func):
            if refname is None or len(col_aliases) != 1:
                raise Unsupported("function in FROM without a column alias")
            rte = Rte(refname, [(col_aliases[0], self.call(item.this)[2])])
        elif isinstance(item, exp.Table) and not item.args.get("db") and ident(item.this) in self.ctes:
            name = ident(item.this)
            rte = Rte(refname or name, list(self.ctes[name]))
        elif isinstance(item, exp.Table):
            rel = self.lookup(item)
            cols = [(c.name, c.type_oid) for c in rel.live_columns]
            rte = Rte(refname or rel.name, cols, frozenset(c.name for c in rel.live_columns if c.hidden))
        elif isinstance(item, exp.Values):
            rows = item.expressions
            if refname is None or not rows:
                raise Unsupported("VALUES without alias")
            first = rows[0].expressions
            rte = Rte(refname, [(f"column{i + 1}", self._values_type(rows, i)) for i in range(len(first))])
        elif isinstance(item, exp.Subquery):
            if refname is None:
                raise Unsupported("subquery without alias")
            rte = Rte(refname, self.output_columns(item.this))
        else:
            raise Unsupported(type(item).__name__)
        for i, n in enumerate(col_aliases[: len(rte.columns)]):
            rte.columns[i] = (n, rte.columns[i][1])
        return rte

    def _values_type(self, rows: list[exp.Expression], i: int) -> int:
        """A VALUES column's type: the common type of its rows' items (unknown: text)."""
        known = [t for t in (self.type_of(r.expressions[i]) for r in rows) if t != UNKNOWN]
        return _common(known) if known else T.TEXT

    def values_rows(self, item: exp.Values, rte: Rte) -> None:
        """get_values_def: ( VALUES (...), (...))."""
        c = self.c
        c.buf += "( VALUES "
        for i, row in enumerate(item.expressions):
            c.buf += ", " if i else ""
            c.buf += "("
            for j, x in enumerate(row.expressions):
                c.buf += "," if j else ""      # get_values_def's separator has no blank
                self.expr(x, rte.columns[j][1], True)
            c.buf += ")"
        c.buf += ") " + _quote_ident(rte.refname)

    def output_columns(self, q: exp.Expression) -> list[tuple[str, int]]:
        """The (name, type) columns of a subquery or CTE: those of its (first) SELECT."""
        while isinstance(q, exp.SetOperation):
            q = q.this
        if not isinstance(q, exp.Select):
            raise Unsupported(type(q).__name__)
        inner = type(self)(self.state, self.c.pretty, self.depends_on, self.search_path)
        inner.ctes, inner.zone = self.ctes, self.zone
        inner.c.scopes = self.c.scopes + [inner.range_table(q)]
        return [(e.alias if isinstance(e, exp.Alias) else inner.figure_name(e),
                 inner.type_of(e.this if isinstance(e, exp.Alias) else e)) for e in inner._expand_stars(q.expressions)]

    def lookup(self, t: exp.Table):
        """The relation a FROM item names: one the view depends on (the name
        was resolved when the view was created), else by the usual schemas."""
        schema = ident(t.args.get("db")) if t.args.get("db") else None
        name = ident(t.this)
        for oid in self.depends_on:
            rel = self.state.rels.get(oid)
            if rel is not None and rel.name == name and (schema is None or rel.schema == schema):
                return rel
        for s in [schema] if schema else ["pg_catalog"] + self.search_path:
            rel = self.state.lookup(s, name)
            if rel is not None:
                return rel
        raise Unsupported(f"relation {name}")

    def from_clause(self, q: exp.Select) -> None:
        c = self.c
        frm = q.args.get("from_")
        if frm is None:
            return
        joins = q.args.get("joins") or []
        # comma-separated items are joins without a kind or condition
        groups: list[list[exp.Expression]] = [[frm.this]]
        for j in joins:
            if not j.args.get("kind") and not j.args.get("side") and j.args.get("on") is None \
                    and not j.args.get("using") and not self._is_explicit_join(j):
                groups.append([j.this])
            else:
                groups[-1].append(j)
        rtes = iter(c.scopes[-1])
        for i, group in enumerate(groups):
            if i == 0:
                c.keyword(" FROM ", -STD, STD, 2)
                self.from_item(group, rtes)
            else:
                c.buf += ", "
                outer = c.buf
                c.buf = ""
                self.from_item(group, rtes)
                item, c.buf = c.buf, outer
                if item.startswith("\n"):
                    c.buf = c.buf.rstrip(" ")
                else:
                    c.keyword("", -STD, STD, VAR)
                c.buf += item

    @staticmethod
    def _is_explicit_join(j: exp.Join) -> bool:
        """CROSS JOIN (a comma has neither a kind nor a condition)."""
        return str(j.args.get("kind") or "").upper() == "CROSS"

    def from_item(self, group: list[exp.Expression], rtes) -> None:
        """A FROM item: a relation or subquery, then the JOINs hanging on it
        (left-deep, each one parenthesised in plain mode)."""
        c = self.c
        if not c.pretty:
            c.buf += "(" * (len(group) - 1)
        self.range_item(group[0], next(rtes))
        for j in group[1:]:
            kind = (j.args.get("side") or j.args.get("kind") or "").upper()
            on, using = j.args.get("on"), j.args.get("using")
            word = {"LEFT": " LEFT JOIN ", "RIGHT": " RIGHT JOIN ", "FULL": " FULL JOIN "}.get(kind)
            if word is None:
                word = " JOIN " if on is not None or using else " CROSS JOIN "
            c.keyword(word, -STD, STD, JOIN)
            self.range_item(j.this, next(rtes))
            if using:
                c.buf += " USING (" + ", ".join(_quote_ident(ident(u)) for u in using) + ")"
            elif on is not None:
                c.buf += " ON "
                if not c.pretty:
                    c.buf += "("
                self.expr(on, None, False)
                if not c.pretty:
                    c.buf += ")"
            elif word != " CROSS JOIN ":
                c.buf += " ON TRUE"
            if not c.pretty:
                c.buf += ")"

    def _visible(self, rel) -> bool:
        """generate_relation_name: unqualified when the search path finds this relation by its name."""
        for s in ["pg_catalog"] + self.search_path:
            found = self.state.lookup(s, rel.name)
            if found is not None:
                return found.oid == rel.oid
        return False

    def range_item(self, item: exp.Expression, rte: Rte) -> None:
        c = self.c
        alias = item.args.get("alias")
        if isinstance(item, exp.Table) and isinstance(item.this, exp.Func):
            self.function(item.this)        # a set-returning function: its alias and column names follow
            c.buf += " " + _quote_ident(rte.refname)
        elif isinstance(item, exp.Values):
            self.values_rows(item, rte)
        elif isinstance(item, exp.Table):
            if not item.args.get("db") and ident(item.this) in self.ctes:
                name = ident(item.this)
                c.buf += _quote_ident(name) + ("" if rte.refname == name else " " + _quote_ident(rte.refname))
                return
            rel = self.lookup(item)
            c.buf += _quote_ident(rel.name) if self._visible(rel) else f"{_quote_ident(rel.schema)}.{_quote_ident(rel.name)}"
            if rte.refname != rel.name:
                c.buf += " " + _quote_ident(rte.refname)
        else:
            c.buf += "("
            saved_indent = c.indent
            self.query(item.this, c.indent, None, True)
            c.indent = saved_indent
            c.buf += ") " + _quote_ident(rte.refname)
        if alias is not None and alias.columns:
            c.buf += "(" + ", ".join(_quote_ident(n) for n, _ in rte.columns) + ")"



def view_definition(state, rel, pretty: bool = False, session=None) -> str:
    """pg_get_viewdef(view, pretty): ruleutils' text for ``rel``'s query, or the
    stored text when the query holds a construct this printer does not know."""
    try:
        tree = sqlglot.parse_one(rel.sql, read=DIALECT)
        if not isinstance(tree, exp.Expression):
            raise Unsupported("not a query")
        tree = join_groups.unfold_first(tree)     # FROM (a JOIN b ON ...): a view restored from pg_dump's text
        p = Printer(state, pretty, rel.depends_on, privileges.search_path(session))
        p.zone = (session.settings.get("timezone") if session is not None else None) or "UTC"
        p.query(tree, 0, [c.name for c in rel.live_columns if not c.hidden], True)
        return p.c.buf + ";"
    except (Unsupported, PgError, LookupError, ValueError, TypeError):
        # a construct not reproduced, or a definition naming what has changed since:
        # the stored text (valid SQL, in sqlglot's spelling) rather than an error in \d+
        return " " + _stored_text(state, rel, privileges.search_path(session)).strip().rstrip(";") + ";"


#: the FROM-clause functions whose first argument names a relation
_WINDOW_SOURCES = frozenset({"TUMBLE", "HOP", "SESSION"})


def _stored_text(state, rel, search_path: list[str]) -> str:
    """A view's stored text with each relation it was created over qualified
    where ``search_path`` would not find it by its name (pg_dump's empty
    path), so that the text recreates the same view."""
    try:
        tree = sqlglot.parse_one(rel.sql, read=DIALECT)
        if not isinstance(tree, exp.Expression):
            return rel.sql
        p = Printer(state, False, rel.depends_on, search_path)
        for node in list(tree.find_all(exp.Table, exp.Column)):
            if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and not node.args.get("db"):
                key = "db"
            elif isinstance(node, exp.Column) and not node.args.get("table") and isinstance(node.parent, exp.Anonymous) \
                    and str(node.parent.this).upper() in _WINDOW_SOURCES and node.parent.expressions[0] is node:
                key = "table"
            else:
                continue
            target = next((r for oid in rel.depends_on if (r := state.rels.get(oid)) is not None
                           and r.name == ident(node.this)), None)
            if target is not None and not p._visible(target):
                node.set(key, exp.to_identifier(target.schema))
        return tree.sql(DIALECT)
    except (sqlglot.errors.ParseError, ValueError, TypeError):
        return rel.sql


def check_expression(state, rel, sql: str, pretty: bool = False) -> str:
    """A CHECK constraint's expression over ``rel``'s columns as
    pg_get_constraintdef prints it (bare column names, implicit casts
    shown: ``(balance >= (0)::numeric)``), or the stored text when the
    printer does not reproduce it."""
    try:
        p = Printer(state, pretty, (), [])
        p.varprefix = False
        p.c.scopes.append([Rte(rel.name, [(c.name, c.type_oid) for c in rel.live_columns])])
        tree = sqlglot.parse_one(sql, read=DIALECT)
        if not isinstance(tree, exp.Expression):
            raise Unsupported("not an expression")
        return p.expr_text(tree)
    except (Unsupported, PgError, LookupError, ValueError, TypeError, sqlglot.errors.ParseError):
        return sql


# pg_views, pg_matviews and pg_get_viewdef print views through this module, CHECK constraints too
system.set_view_formatter(view_definition)
definition_text.set_check_formatter(check_expression)
