-- Scalar expressions: arithmetic result types, casts, three-valued logic, errors.
-- Every computed column is aliased: PostgreSQL's names for operators are ?column?.
SELECT 1 + 2 AS a, 7 / 2 AS int_div, -7 / 2 AS neg_div, 7 % 3 AS m, -7 % 3 AS neg_m;
SELECT 7 / 2.0 AS num_div, 1::numeric / 3 AS third, 2.50 * 2 AS scale_mul, 1.5 + 1.25 AS scale_add;
SELECT 10::smallint + 1::smallint AS i2, 10::smallint * 1000 AS i4, 2147483647::bigint + 1 AS i8;
SELECT 1.0::float8 / 3 AS f8, 0.1::float4 + 0.2::float4 AS f4, 3 * 0.5::float8 AS f8b;
SELECT 2 ^ 10 AS pw, 2.0 ^ 0.5 AS pw_num, abs(-5) AS ab, abs(-2.5) AS abn;
SELECT round(2.5) AS r1, round(-2.5) AS r2, round(2.345, 2) AS r3, trunc(2.789, 1) AS t1, ceil(2.1) AS c1, floor(-2.1) AS f1;
SELECT round(2.5::float8) AS rf, sqrt(16) AS sq, mod(17, 5) AS md, sign(-3) AS sg, greatest(1, 5, 3) AS g, least(4, 2, 8) AS l;
SELECT 9223372036854775807 AS big, -2147483648 AS minint, 2147483648 AS int8lit, 12345678901234567890 AS numlit;
SELECT 0.1 + 0.2 AS exact, 1e3 AS sci, 1.5e-3 AS sci2, 100::numeric(10,2) AS n102, 3.14159::numeric(5,2) AS n52;
-- error 22003
SELECT 2147483647 + 1;
-- error 22003
SELECT 32767::smallint + 1::smallint;
-- error 22003
SELECT 9223372036854775807 + 1;
-- error 22003
SELECT (-2147483648) * -1;
-- error 22012
SELECT 1 / 0;
-- error 22012
SELECT 1.5 / 0;
-- error 22012
SELECT 5 % 0;
-- error 22012
SELECT 1::float8 / 0;
-- error 22003
SELECT 123.456::numeric(4,2);
SELECT '42'::int AS i, '  42  '::int AS i_ws, '3.5'::numeric AS n, '1e2'::float8 AS f, 'true'::boolean AS b, 'off'::boolean AS b2;
SELECT CAST('2024-02-29' AS date) AS d, '12:34:56'::time AS t, '2024-01-01 10:00'::timestamp AS ts, '1 day 2 hours'::interval AS iv;
SELECT 3.7::int AS r_up, 3.2::int AS r_down, (-3.5)::int AS r_neg, 2.5::int AS half, '7'::text::int AS via_text;
SELECT 42::text AS t, 4.50::text AS nt, true::text AS bt, 1::boolean AS ib, 0::boolean AS ib0;
-- error 22P02
SELECT 'abc'::int;
-- error 22P02
SELECT '1.5'::int;
-- error 22P02
SELECT 'maybe'::boolean;
-- error 22P02
SELECT 'x1'::numeric;
-- error 22007
SELECT 'not a date'::date;
-- error 22008
SELECT '2023-02-30'::date;
-- error 22003
SELECT '99999999999'::int;
-- error 22003
SELECT 40000::smallint;
SELECT NULL::int + 1 AS n1, NULL = NULL AS n2, NULL IS NULL AS n3, 1 IS NOT NULL AS n4, NULL::int IS DISTINCT FROM 1 AS n5, 2 IS NOT DISTINCT FROM 2 AS n6;
SELECT true AND NULL AS a1, false AND NULL AS a2, true OR NULL AS o1, false OR NULL AS o2, NOT NULL::boolean AS nn;
SELECT (NULL::boolean) IS UNKNOWN AS u1, true IS TRUE AS t1, false IS NOT TRUE AS t2, NULL::boolean IS FALSE AS f1;
SELECT 1 IN (1, 2) AS in1, 3 IN (1, 2) AS in2, 3 IN (1, NULL) AS in3, 1 IN (1, NULL) AS in4, 3 NOT IN (1, NULL) AS in5, 3 NOT IN (1, 2) AS in6;
SELECT 5 BETWEEN 1 AND 10 AS b1, 5 NOT BETWEEN 6 AND 10 AS b2, 5 BETWEEN SYMMETRIC 10 AND 1 AS b3, NULL::int BETWEEN 1 AND 2 AS b4;
SELECT CASE WHEN 1 > 2 THEN 'a' WHEN 2 > 1 THEN 'b' ELSE 'c' END AS c1, CASE 3 WHEN 1 THEN 'one' WHEN 3 THEN 'three' END AS c2, CASE WHEN false THEN 1 END AS c3;
SELECT CASE WHEN NULL THEN 1 ELSE 2 END AS c4, CASE 1 WHEN 1 THEN 1.5 ELSE 2 END AS c5;
SELECT COALESCE(NULL, NULL, 3) AS co1, COALESCE(NULL::text, 'x') AS co2, NULLIF(1, 1) AS nf1, NULLIF(1, 2) AS nf2, NULLIF('a', 'b') AS nf3;
SELECT COALESCE(1, 2.5) AS co_num, COALESCE(NULL, 1::bigint, 2) AS co_big;
-- error 42804
SELECT CASE WHEN true THEN 1 ELSE 'x'::text END;
-- error 42883
SELECT 'a'::text + 1;
-- error 42601
SELECT 1 +;
-- error 42601
SELEC 1;
-- error 42601
SELECT * FROM;
-- error 42703
SELECT nosuchcolumn;
-- error 42P01
SELECT * FROM no_such_table_anywhere;
-- error 42883
SELECT no_such_function(1);
