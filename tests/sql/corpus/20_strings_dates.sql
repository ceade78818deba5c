-- String, pattern, date/time/interval and JSON functions.
SELECT length('hello') AS l, upper('abc') AS u, lower('ABC') AS lo, 'ab' || 'cd' AS cat, 'n=' || 42 AS catnum, concat('a', NULL, 1) AS cc, concat_ws('-', 'a', NULL, 'b') AS cw;
SELECT substring('hello world' FROM 7) AS s1, substring('hello' FROM 2 FOR 3) AS s2, substr('hello', 2, 2) AS s3, left('hello', 2) AS le, right('hello', 3) AS ri;
SELECT position('lo' IN 'hello') AS p, strpos('hello', 'l') AS sp, replace('banana', 'an', 'AN') AS rp, reverse('abc') AS rv, repeat('ab', 3) AS rpt;
SELECT trim('  x  ') AS t1, ltrim('  x  ') AS t2, rtrim('  x  ') AS t3, btrim('xxaxx', 'x') AS t4, trim(both 'x' from 'xxbxx') AS t5, trim(leading 'x' from 'xxb') AS t6;
SELECT lpad('5', 3, '0') AS lp, rpad('ab', 5, '*') AS rp, lpad('abcdef', 3) AS lp_trunc, initcap('hello wORLD') AS ic, split_part('a,b,c', ',', 2) AS spp;
SELECT translate('12345', '143', 'ax') AS tr, ascii('A') AS asc1, chr(66) AS ch, md5('abc') AS md, to_hex(255) AS hx, starts_with('hello', 'he') AS sw;
SELECT 'abc' LIKE 'a%' AS l1, 'abc' LIKE '_b_' AS l2, 'abc' NOT LIKE 'b%' AS l3, 'ABC' ILIKE 'a%' AS l4, 'ABC' NOT ILIKE 'x%' AS l5, 'a%c' LIKE 'a\%c' AS l6, NULL LIKE 'a' AS l7;
SELECT 'foobar' ~ 'o+b' AS r1, 'FOO' ~* 'foo' AS r2, 'foo' !~ 'x' AS r3, 'FOO' !~* 'f' AS r4, 'abc' SIMILAR TO 'a(b|x)c' AS r5;
SELECT regexp_replace('a1b22c', '[0-9]+', '#') AS rr1, regexp_replace('a1b22c', '[0-9]+', '#', 'g') AS rr2, regexp_match('foo123', '[0-9]+') AS rm;
SELECT 'x' = 'x' AS e1, 'a' < 'b' AS e2, 'abc' > 'abd' AS e3, 'a'::varchar(5) = 'a' AS e4, 'ab'::char(4) = 'ab' AS e5, length('ab'::char(4)) AS e6;
SELECT 'ab'::char(4) AS padded, 'abcdef'::varchar(3) AS trunc_v, 'abc'::char(2) AS trunc_c;
SELECT DATE '2024-01-31' + 1 AS d1, DATE '2024-03-01' - 1 AS d2, DATE '2024-03-01' - DATE '2024-01-01' AS ddiff, DATE '2024-01-31' + INTERVAL '1 month' AS dm;
SELECT TIMESTAMP '2024-01-01 10:00' + INTERVAL '90 minutes' AS t1, TIMESTAMP '2024-01-02' - TIMESTAMP '2024-01-01 12:00' AS t2, TIMESTAMP '2024-05-05 05:05:05' - INTERVAL '1 day' AS t3;
SELECT INTERVAL '1 day' + INTERVAL '3 hours' AS i1, INTERVAL '1 hour' * 3 AS i2, INTERVAL '1 day' / 2 AS i3, -INTERVAL '2 days' AS i4, INTERVAL '1 year 2 months' AS i5, INTERVAL '36 hours' AS i6;
SELECT date_trunc('month', TIMESTAMP '2024-05-17 13:45:10') AS m, date_trunc('hour', TIMESTAMP '2024-05-17 13:45:10') AS h, date_trunc('year', DATE '2024-05-17') AS y, date_trunc('week', TIMESTAMP '2024-05-17 13:45') AS w;
SELECT extract(year FROM DATE '2024-05-17') AS y, extract(month FROM TIMESTAMP '2024-05-17 13:45:10') AS mo, extract(day FROM DATE '2024-05-17') AS d, extract(hour FROM TIMESTAMP '2024-05-17 13:45:10') AS h;
SELECT extract(dow FROM DATE '2024-05-17') AS dow, extract(doy FROM DATE '2024-05-17') AS doy, extract(epoch FROM TIMESTAMP '2024-01-01 00:00:01') AS ep, extract(quarter FROM DATE '2024-05-17') AS q;
SELECT extract(epoch FROM INTERVAL '1 day 1 hour') AS iep, extract(minute FROM INTERVAL '2 hours 30 minutes') AS imin;
SELECT to_char(DATE '2024-05-07', 'YYYY-MM-DD') AS c1, to_char(TIMESTAMP '2024-05-07 14:05:09', 'HH24:MI:SS') AS c2, to_char(TIMESTAMP '2024-05-07 14:05:09', 'DD/MM/YYYY HH12 AM') AS c3;
SELECT to_char(1234.5, '9999.99') AS n1, to_char(42, '000') AS n2, to_char(DATE '2024-12-25', 'Mon DD YYYY') AS c4;
SELECT make_date(2024, 2, 29) AS md, age(TIMESTAMP '2024-05-01', TIMESTAMP '2023-01-15') AS ag, DATE '2024-01-01' < DATE '2024-01-02' AS dc, DATE '2024-01-01' = TIMESTAMP '2024-01-01 00:00' AS dts;
-- error 22008
SELECT DATE '2024-13-01';
-- error 22008
SELECT TIMESTAMP '2024-01-01 25:00:00';
-- error 42883
SELECT DATE '2024-01-01' + DATE '2024-01-02';
SELECT '{"a": 1, "b": [1, 2, {"c": "x"}]}'::json -> 'b' AS j1, '{"a": 1, "b": [1, 2]}'::jsonb -> 'b' AS j2, '{"a": 1}'::jsonb ->> 'a' AS j3, '[10, 20, 30]'::jsonb -> 1 AS j4, '[10, 20]'::jsonb ->> 0 AS j5;
SELECT '{"a": {"b": {"c": 5}}}'::jsonb #> '{a,b}' AS p1, '{"a": {"b": {"c": 5}}}'::jsonb #>> '{a,b,c}' AS p2, '{"a": 1}'::jsonb -> 'zz' AS missing;
SELECT '{"a": 1, "b": 2}'::jsonb @> '{"a": 1}'::jsonb AS contains, '{"a": 1}'::jsonb ? 'a' AS has_key, '{"a": 1}'::jsonb || '{"b": 2}'::jsonb AS merged, '{"b": 1, "a": [1,2]}'::jsonb AS normalized;
SELECT jsonb_typeof('[1]'::jsonb) AS t1, jsonb_array_length('[1, 2, 3]'::jsonb) AS al, json_build_object('k', 1, 'v', 'x') AS bo, to_jsonb(ARRAY[1, 2]) AS tj, '  {"a":1}  '::json AS raw_json;
-- error 22P02
SELECT '{bad json'::jsonb;
SELECT x, x * 2 AS dbl FROM generate_series(1, 5) AS x;
SELECT * FROM generate_series(10, 1, -3) AS g;
SELECT generate_series(1, 3) AS s, 'k' AS k;
SELECT * FROM generate_series(DATE '2024-01-01', DATE '2024-01-03', INTERVAL '1 day') AS d;
SELECT * FROM generate_series(0.5, 2.0, 0.5) AS n;
SELECT count(*) AS n, sum(g) AS s FROM generate_series(1, 1000) AS g;
SELECT unnest(ARRAY[3, 1, 2]) AS u;
SELECT ARRAY[1, 2, 3] AS arr, (ARRAY[1, 2, 3])[2] AS second, array_length(ARRAY[1, 2, 3], 1) AS alen, array_to_string(ARRAY['a', 'b'], ',') AS ats, string_to_array('a,b,c', ',') AS sta, 2 = ANY(ARRAY[1, 2]) AS anyp, 5 > ALL(ARRAY[1, 2]) AS allp;
-- date_part returns double precision, EXTRACT numeric (PostgreSQL 14+)
SELECT date_part('year', date '2024-03-01') AS y, pg_typeof(date_part('epoch', timestamp '2024-03-01 10:00:00.5')) AS dp_type, pg_typeof(extract(year from date '2024-03-01')) AS ex_type, date_part('epoch', timestamp '2024-03-01 10:00:00.5') AS ep;
SELECT pg_typeof(1) AS a, pg_typeof(1.5) AS b, pg_typeof('x'::varchar(3)) AS c, pg_typeof(now()) AS d, pg_typeof(array[1, 2]) AS e, pg_typeof(1::bigint) AS f;
-- error 42883
SELECT no_such_function(1, 'a'::text, 1.5);
SELECT pg_try_advisory_xact_lock(7) AS got;
-- casts evaluated in the session's TimeZone
SET TimeZone = 'Asia/Tokyo';
SELECT (timestamptz '2024-01-01 12:00:00+00')::text AS t, (timestamptz '2024-01-01 20:00:00+00')::date AS d, (timestamptz '2024-01-01 12:00:00+00')::timestamp AS ts, '2024-01-01 12:00'::timestamptz AS tz_local, (timestamptz '2024-01-01 12:00:00+00')::time AS tm, '2024-01-01 12:00+02'::timestamptz AS tz_off;
SELECT timestamptz '2024-07-01 00:00' AS summer, ('2024-03-10 12:00'::timestamp)::timestamptz AS from_ts, ('2024-03-10'::date)::timestamptz AS from_date;
SET TimeZone = 'America/New_York';
SELECT ('2024-03-10 12:00'::timestamp)::timestamptz AS dst_day, (timestamptz '2024-11-03 06:30+00')::timestamp AS fall_back, (timestamptz '2024-06-01 03:00+00')::date AS d;
SET TimeZone = 'UTC';
-- a typed literal is cast by a following ::, as PostgreSQL reads it
SELECT timestamp '2024-01-01 10:00'::timestamptz, pg_typeof(timestamp '2024-01-01 10:00'::timestamptz) AS t1, date '2024-01-02'::text || 'x' AS dx, pg_typeof(date '2024-01-02'::text) AS t2, int4 '5'::int8 + 1 AS n, pg_typeof(int4 '5'::int8) AS t3;
SELECT '5'::int::text, (1 + 2)::text, CASE WHEN true THEN 1 END::text, coalesce(1, 2)::text, (length('ab')::int8)::text;
-- dollar-quoted constants, and comment markers inside quotes
SELECT $$abc$$;
SELECT $$a--b$$ AS c, $q$it's /* not a comment */$q$ AS d, length($$x$$) AS n, $$12$$::int + 1 AS i;
SELECT 'x' || $$y$$ AS xy, $$a$$ = 'a' AS eq, '--' AS dashes, E'\\'--' AS esc;
