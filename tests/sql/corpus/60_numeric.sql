-- numeric(p,s) columns take a fixed-point (scaled int64) path in splitstream;
-- these pin its scales, NULLs, signs, overflow fallbacks and zero sums.
CREATE TABLE {{p}}_n (k int, a numeric(12,2), b numeric(8,3), c numeric(25,4), d numeric);
INSERT INTO {{p}}_n VALUES (1, 10.50, 0.125, 123456789012345678.1234, 1.5), (2, -3.25, 2.000, -1.0001, 2), (3, NULL, 1.5, 0, NULL), (1, -7.25, -0.125, 5, 0.001), (2, 0.00, NULL, NULL, -4);
SELECT a + b AS ab, a - b AS amb, a * b AS axb, a * 2 AS a2, a + 1 AS a1, 1 - a AS one_minus, -a AS neg FROM {{p}}_n ORDER BY k, a NULLS LAST;
SELECT a * (1 - b) * (1 + b) AS chain, a * a * a AS cube, c * 2 AS c2, c + a AS ca, d * a AS da FROM {{p}}_n ORDER BY k, a NULLS LAST;
SELECT k, sum(a) AS sa, sum(b) AS sb, sum(a * b) AS sab, avg(a) AS aa, sum(c) AS sc, sum(d) AS sd, count(a) AS ca FROM {{p}}_n GROUP BY k ORDER BY k;
SELECT sum(a) AS total, avg(b) AS avgb, min(a) AS mina, max(b) AS maxb, sum(a) FILTER (WHERE a < 0) AS negs FROM {{p}}_n;
SELECT k, sum(a) AS zero_sum FROM {{p}}_n WHERE k = 1 OR a = 0 GROUP BY k ORDER BY k;
SELECT k FROM {{p}}_n WHERE a > 0 ORDER BY k;
SELECT k FROM {{p}}_n WHERE a < 10.5 ORDER BY k, a;
SELECT k FROM {{p}}_n WHERE a <= 10.500 AND b >= 0.1 ORDER BY k;
SELECT k FROM {{p}}_n WHERE a = -3.25 OR b = 2 ORDER BY k;
SELECT k FROM {{p}}_n WHERE b BETWEEN 0.125 - 0.001 AND 0.125 + 0.001;
SELECT k FROM {{p}}_n WHERE a * 2 > b * 10 ORDER BY k;
SELECT a::float8 AS af, a::int AS ai, b::numeric(6,1) AS b61, (a * b)::numeric(10,2) AS rounded, a::text AS at FROM {{p}}_n ORDER BY k, a NULLS LAST;
SELECT a / 3 AS a3, a / b AS ab, a % 2 AS am FROM {{p}}_n WHERE b <> 0 ORDER BY k, a;
SELECT a, b FROM {{p}}_n ORDER BY a DESC NULLS LAST, b;
SELECT a, count(*) AS n FROM {{p}}_n GROUP BY a ORDER BY a NULLS FIRST;
SELECT x.k, x.a, y.b FROM {{p}}_n x JOIN {{p}}_n y ON x.a = y.a ORDER BY 1, 2, 3;
SELECT CASE WHEN a > 0 THEN a ELSE 0 END AS pos, COALESCE(a, b, 0) AS co FROM {{p}}_n ORDER BY k, a NULLS LAST;
SELECT 99999999999.99::numeric(13,2) * 99999999999.99::numeric(13,2) AS big_product;
SELECT sum(x) AS s FROM (SELECT (g * 1.01)::numeric(12,2) AS x FROM generate_series(1, 2000) AS g) t;
-- error 22003
INSERT INTO {{p}}_n (k, a) VALUES (9, 12345678901.00);
-- error 22003
UPDATE {{p}}_n SET a = a * 1e10 WHERE k = 1;
DROP TABLE {{p}}_n;
