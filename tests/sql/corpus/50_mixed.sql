-- Mixed: result types of aggregates, transactions in one simple-query string,
-- NULL handling in grouping/joins/sorting, and more error codes.
CREATE TABLE {{p}}_m (g text, i int, b bigint, s smallint, n numeric, f float8, r real, d date, ts timestamp);
INSERT INTO {{p}}_m VALUES ('a', 1, 10, 1, 1.5, 0.5, 1.25, '2024-01-01', '2024-01-01 10:00'), ('a', 2, 20, 2, 2.25, 1.5, 2.5, '2024-02-01', '2024-01-01 11:30'), ('b', 3, 30, 3, NULL, NULL, NULL, NULL, NULL), ('b', NULL, NULL, NULL, 4, 2, 3, '2024-03-01', '2024-03-01 00:00'), (NULL, 5, 50, 5, 5.125, 4, 4, '2024-04-01', '2024-04-01 12:00');
SELECT sum(i) AS si, sum(b) AS sb, sum(s) AS ss, sum(n) AS sn, sum(f) AS sf, sum(r) AS sr FROM {{p}}_m;
SELECT avg(i) AS ai, avg(b) AS ab, avg(s) AS avs, avg(n) AS an, avg(f) AS af, avg(r) AS ar FROM {{p}}_m;
SELECT min(i) AS mi, max(b) AS mb, min(n) AS mn, max(f) AS mf, min(d) AS md, max(ts) AS mts, min(g) AS mg FROM {{p}}_m;
SELECT g, sum(n) AS sn, avg(f) AS af, count(n) AS cn FROM {{p}}_m GROUP BY g ORDER BY g NULLS FIRST;
SELECT g, i FROM {{p}}_m ORDER BY g DESC NULLS FIRST, i;
SELECT i * 2 AS i2, b * 2 AS b2, s * 2 AS s2, n * 2 AS n2, f * 2 AS f2, r * 2 AS r2 FROM {{p}}_m ORDER BY i NULLS LAST;
SELECT i + b AS ib, s + i AS si, n + i AS ni, f + n AS fn, r + f AS rf, i / 2 AS idiv, n / 3 AS ndiv FROM {{p}}_m ORDER BY i NULLS LAST;
SELECT d + 30 AS d30, ts - d AS since, d - DATE '2024-01-01' AS days, ts + INTERVAL '1 day' AS tomorrow FROM {{p}}_m ORDER BY i NULLS LAST;
SELECT date_trunc('month', ts) AS m, count(*) AS c FROM {{p}}_m GROUP BY 1 ORDER BY 1 NULLS LAST;
SELECT i::text AS it, n::int AS ni, f::numeric AS fnum, r::float8 AS rf, s::int AS si, b::int AS bi FROM {{p}}_m ORDER BY i NULLS LAST;
SELECT * FROM {{p}}_m WHERE n > 2 AND f < 3;
SELECT * FROM {{p}}_m WHERE n IS NULL OR f IS NULL;
SELECT g, count(*) AS c FROM {{p}}_m WHERE i IN (1, 3, 5) GROUP BY g ORDER BY g NULLS LAST;
SELECT count(*) AS c FROM {{p}}_m WHERE g NOT IN ('a');
SELECT count(*) AS c FROM {{p}}_m a JOIN {{p}}_m b ON a.g = b.g;
SELECT count(*) AS c FROM {{p}}_m a JOIN {{p}}_m b ON a.g IS NOT DISTINCT FROM b.g;
SELECT x.g, y.c FROM (SELECT DISTINCT g FROM {{p}}_m) x LEFT JOIN (SELECT g, count(*) AS c FROM {{p}}_m WHERE i > 1 GROUP BY g) y ON x.g = y.g ORDER BY 1 NULLS FIRST;
BEGIN; INSERT INTO {{p}}_m (g, i) VALUES ('tx', 100); SELECT count(*) AS c FROM {{p}}_m WHERE g = 'tx'; ROLLBACK;
SELECT count(*) AS c FROM {{p}}_m WHERE g = 'tx';
BEGIN; INSERT INTO {{p}}_m (g, i) VALUES ('tx', 101); COMMIT;
SELECT g, i FROM {{p}}_m WHERE g = 'tx';
BEGIN; UPDATE {{p}}_m SET i = i + 1 WHERE g = 'tx'; SAVEPOINT s1; DELETE FROM {{p}}_m WHERE g = 'tx'; ROLLBACK TO SAVEPOINT s1; COMMIT;
SELECT g, i FROM {{p}}_m WHERE g = 'tx';
DELETE FROM {{p}}_m WHERE g = 'tx';
-- error 22003
SELECT max(i) * 2147483647 FROM {{p}}_m;
-- error 22003
SELECT (b * 922337203685477580) FROM {{p}}_m;
-- error 22012
SELECT i / (i - i) FROM {{p}}_m;
-- error 22012
SELECT n / 0 FROM {{p}}_m;
-- error 22P02
SELECT i FROM {{p}}_m WHERE i = 'abc';
-- error 42883
SELECT i FROM {{p}}_m WHERE d = 1;
-- error 42804
SELECT i FROM {{p}}_m WHERE g;
-- error 42703
UPDATE {{p}}_m SET nosuch = 1;
-- error 42P01
DELETE FROM {{p}}_nosuch;
-- error 42P01
INSERT INTO {{p}}_nosuch VALUES (1);
-- error 42601
UPDATE {{p}}_m SET;
-- error 42704
CREATE TABLE {{p}}_bad (id nosuchtype);
-- error 42P16
CREATE TABLE {{p}}_bad (id int PRIMARY KEY, v int PRIMARY KEY);
SELECT coalesce(max(i), 0) AS mx, count(*) FILTER (WHERE g IS NULL) AS nullg FROM {{p}}_m;
SELECT g, bool_and(i > 1) AS all_big, string_agg(i::text, ',' ORDER BY i) AS iss FROM {{p}}_m GROUP BY g ORDER BY g NULLS LAST;
SELECT i, sum(i) OVER (PARTITION BY g ORDER BY i ROWS UNBOUNDED PRECEDING) AS run, row_number() OVER (PARTITION BY g ORDER BY i DESC NULLS LAST) AS rn FROM {{p}}_m ORDER BY g NULLS FIRST, i NULLS FIRST;
DROP TABLE {{p}}_m;
