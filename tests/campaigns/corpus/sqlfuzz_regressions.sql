-- Statements reduced from the SQL fuzzing campaign's findings (tests/campaigns/sqlfuzz.py),
-- each compared with PostgreSQL 15 by tests/campaigns/test_sql_stream_campaigns.py.
CREATE TABLE {{p}}_n (g int4, f float8, n numeric, i8 int8, i2 int2);
INSERT INTO {{p}}_n VALUES (1, 'NaN', 'NaN', 9223372036854775807, -32768), (1, 2, 2, 9223372036854775807, 1),
  (2, 'NaN', 'NaN', -9223372036854775808, 7), (3, 5, 5, 4, NULL), (3, NULL, NULL, NULL, 3), (1, -1, -1.50, -7, -1),
  (4, '-0', 1.5, 0, 0), (4, 0, 1.50, 2, 2);
-- NaN equals NaN and sorts above every number (float8 and numeric)
SELECT f, f = f, f > 1e308, f IS DISTINCT FROM f, n = n, n > 1, n < 'NaN', f = 2 FROM {{p}}_n;
SELECT count(*) FROM {{p}}_n WHERE f = 'NaN' OR n = 'NaN';
-- ordered
SELECT n FROM {{p}}_n ORDER BY n DESC NULLS LAST, g;
-- ordered
SELECT g, min(f), max(f), min(n), max(n) FROM {{p}}_n GROUP BY g ORDER BY g;
SELECT min(f), max(f), min(n), max(n) FROM {{p}}_n;
SELECT count(DISTINCT f), count(DISTINCT n) FROM {{p}}_n;
-- ordered
SELECT n, count(*) FROM {{p}}_n GROUP BY n ORDER BY n;
SELECT sign(f), sign(n) FROM {{p}}_n;
-- abs() of the minimum integer does not fit
-- error 22003
SELECT abs(i2) FROM {{p}}_n;
-- error 22003
SELECT abs(i8) FROM {{p}}_n;
-- error 22003
SELECT abs((-2147483648)::int4);
SELECT abs(i2) FROM {{p}}_n WHERE i2 > -32768;
-- integer division truncates toward zero, also at the int8 minimum
SELECT i8 / 2, i8 % 2, i8 / -3, i8 % -3, 4::int8 / i8 FROM {{p}}_n WHERE i8 <> 0;
-- error 22003
SELECT i8 / -1 FROM {{p}}_n;
SELECT (-9223372036854775808)::int8 % -1, -7 / 2, -7 % 2, 7 % -2, avg(4::int8 / (-9223372036854775808)::int8);
-- numeric arithmetic with NULL and NaN operands
SELECT n + g, n - g, n * g, n / 3, 3 / n, n % 2 FROM {{p}}_n WHERE n IS NULL OR n <> 0;
SELECT 'NaN'::numeric / 0, 1::numeric / 'Infinity'::numeric, 'Infinity'::numeric / -2;
-- variance of int8 values is exact; no spread is a plain 0
SELECT var_pop(i8) AS v, var_samp(9223372036854775807::int8) AS s FROM {{p}}_n;
SELECT stddev_samp(x) AS a, var_pop(x) AS b FROM (VALUES (1.5), (1.5)) v(x);
-- a float8 sum that overflows from finite values is an error (an infinite input is not); the vectorised
-- aggregate checks it, compiled (LLVM) float8 sums do not yet (open, see stream_known_differences.toml)
-- error 22003
SELECT sum(x) FROM (VALUES (1e308::float8), (1e308::float8)) v(x);
SELECT sum(x), avg(x) FROM (VALUES (1e308::float8), ('Infinity'::float8), (1e308)) v(x);
SELECT sum(x) FROM (VALUES ('-Infinity'::float8), ('Infinity'::float8), (1)) v(x);
-- an infinity after the overflow does not excuse it; one before it does
-- error 22003
SELECT sum(x) FROM (VALUES (1e308::float8), (1e308::float8), ('-Infinity'::float8)) v(x);
SELECT sum(x) FROM (VALUES ('-Infinity'::float8), (1e308::float8), (1e308::float8)) v(x);
-- float8 variance whose sums overflow is an error, as the sum's
-- error 22003
SELECT var_pop(x) FROM (VALUES (1e200::float8), (-1e200::float8)) v(x);
SELECT var_pop(x), stddev_samp(x) FROM (VALUES ('Infinity'::float8), (1::float8)) v(x);
-- greatest/least order NaN above every number
SELECT greatest(n, 1), least(n, 1), greatest(1, f), least(1, f), least(NULL::float8, f) FROM {{p}}_n;
SELECT var_pop(x), stddev_samp(x) FROM (VALUES ('Infinity'::float8), ('-Infinity'::float8)) v(x);
-- concat prints a value with its type's output function (bool: t/f)
SELECT concat('a', f > 0, NULL, n), concat_ws(',', g = 1, i2) FROM {{p}}_n;
-- a numeric literal with an exponent has the scale its digits give (1e20: 0)
SELECT 1e20 * 1.0, 1.5e3, 2.5e-3, -0.5 * 1e20;
-- float8 infinities cast to numeric stay infinite (PostgreSQL 15); numeric NaN/infinity to an integer is 0A000
SELECT CAST(f AS numeric), round(CAST(f AS numeric), 3), CAST('-Infinity'::float8 AS numeric) FROM {{p}}_n;
-- error 0A000
SELECT 'Infinity'::numeric::int8;
-- error 0A000
SELECT n::int4 FROM {{p}}_n;
-- a WHERE condition does not sink into the left side of a later FULL or RIGHT join
SELECT a.g, a2.g, b.g FROM {{p}}_n a CROSS JOIN {{p}}_n a2 FULL JOIN {{p}}_n b ON a2.i2 = b.g + 10
  WHERE a.f > 1 OR CAST(a2.g AS bool);
SELECT a.g, b.g FROM {{p}}_n a JOIN {{p}}_n a2 ON a.g = a2.g RIGHT JOIN {{p}}_n b ON a2.i2 = b.g WHERE a.g > 0 OR b.g = 4;
-- scaled int64 numeric sums that could wrap go the exact way
SELECT n + 123456789.123456789, trunc(i8::numeric + 123456789.123456789), i8::numeric - (-1.5) FROM {{p}}_n;
SELECT sum(DISTINCT trunc(i8::numeric + 123456789.123456789)) FROM {{p}}_n;
-- IN / NOT IN a subquery: NaN equals NaN
SELECT g FROM {{p}}_n WHERE f NOT IN (SELECT f FROM {{p}}_n WHERE f IS NOT NULL);
SELECT g FROM {{p}}_n WHERE f IN (SELECT f FROM {{p}}_n WHERE f IS NOT NULL);
SELECT g FROM {{p}}_n a WHERE floor(n) NOT IN (SELECT n FROM {{p}}_n b WHERE CAST(a.g AS bool) AND b.n IS NOT NULL);
DROP TABLE {{p}}_n;
-- numeric infinities (PostgreSQL 15): infinity * 0 and infinity - infinity are NaN; sqrt(NaN) is NaN
SELECT x * 0, x - x, x / x, x + 1, x * -2, abs(x), sqrt(abs(x)), round(x, 2), sign(x), x::float8
  FROM (VALUES ('Infinity'::numeric), ('-Infinity'::numeric), (2.5)) v(x);
SELECT sqrt(x), round(x, 2), trunc(x, 1), ceil(x), floor(x), abs(x) FROM (VALUES ('NaN'::numeric)) v(x);
-- numeric sqrt has PostgreSQL's result scale (at least 16 significant digits)
SELECT sqrt(x) FROM (VALUES (4), (0), (2), (1e20), (0.0004), (123456789.123456789), (1.5e-10)) v(x);
-- ORDER BY a float8 column: NULLs, infinities and NaN each in their place
CREATE TABLE {{p}}_f (g int4, x float8);
INSERT INTO {{p}}_f VALUES (1, 'Infinity'), (2, NULL), (3, '-Infinity'), (4, 'NaN'), (5, 0), (6, '-0'), (7, 1.5), (8, NULL),
  (9, 'NaN'), (10, 'Infinity');
-- ordered
SELECT x, g FROM {{p}}_f ORDER BY x, g;
-- ordered
SELECT x, g FROM {{p}}_f ORDER BY x DESC, g;
-- ordered
SELECT x, g FROM {{p}}_f ORDER BY x NULLS FIRST, g LIMIT 3;
-- ordered
SELECT x, g FROM {{p}}_f ORDER BY x DESC NULLS LAST, g LIMIT 5;
DROP TABLE {{p}}_f;
-- an outer join's NULL-extended rows stay NULL through a later filter (lazily gathered object columns)
CREATE TABLE {{p}}_l (id int4, c numeric, t text, k int2);
INSERT INTO {{p}}_l SELECT i, (i % 5)::numeric / 2, 'v' || i, (i % 4)::int2 FROM generate_series(1, 12) i;
SELECT a.id, b.id, b.c, b.t FROM {{p}}_l a CROSS JOIN {{p}}_l a2 LEFT JOIN {{p}}_l b ON a2.c = b.k WHERE a.id = 3;
SELECT DISTINCT b.c, b.t FROM {{p}}_l a CROSS JOIN {{p}}_l a2 LEFT JOIN {{p}}_l b ON a2.c = b.k WHERE a.id % 3 = 0;
DROP TABLE {{p}}_l;
-- JOIN binds tighter than the comma: a, b RIGHT/FULL JOIN c is a x (b RIGHT JOIN c)
SELECT * FROM (VALUES (1)) a(x), (VALUES (2)) b(y) RIGHT JOIN (VALUES (2), (3)) c(z) ON b.y = c.z;
SELECT * FROM (VALUES (1), (5)) a(x), (VALUES (2)) b(y) FULL JOIN (VALUES (2), (3)) c(z) ON b.y = c.z, (VALUES (9)) d(w);
SELECT count(*), count(a.x), count(b.y) FROM (VALUES (1), (2)) a(x), (VALUES (7)) b(y) RIGHT JOIN (VALUES (7), (8)) c(z) ON b.y = c.z WHERE c.z > 0;
