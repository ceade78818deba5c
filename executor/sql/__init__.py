"""The SQL front end: splitstream's dialect (a subclass of sqlglot's
PostgreSQL dialect), the binder (names, types and coercions as PostgreSQL has
them), the planner (``planner/``: FROM, joins, grouping, select list,
decorrelation), table functions and the binding of window calls."""
