-- Queries over small tables: joins, subqueries, CTEs, grouping, set operations,
-- ordering, windows and aggregates.  Names carry the test's prefix {{p}}.
CREATE TABLE {{p}}_dept (id int PRIMARY KEY, name text NOT NULL, budget numeric(10,2));
CREATE TABLE {{p}}_emp (id int PRIMARY KEY, name text, dept_id int, salary numeric(10,2), hired date, manager_id int, active boolean);
INSERT INTO {{p}}_dept VALUES (1, 'eng', 1000.00), (2, 'sales', 500.50), (3, 'ops', NULL), (4, 'empty', 10);
INSERT INTO {{p}}_emp VALUES
  (1, 'ann', 1, 120.00, '2020-01-15', NULL, true),
  (2, 'bob', 1, 100.50, '2021-03-01', 1, true),
  (3, 'cid', 2, 90.00, '2019-07-30', 1, false),
  (4, 'dee', 2, 95.25, '2022-11-11', 3, true),
  (5, 'eve', NULL, 70.00, '2023-05-05', 1, NULL),
  (6, 'fay', 3, NULL, '2018-02-28', 4, true),
  (7, 'gus', 1, 100.50, '2021-03-01', 2, false);
SELECT * FROM {{p}}_emp ORDER BY id;
SELECT name, salary FROM {{p}}_emp WHERE salary > 95 ORDER BY salary DESC, name;
SELECT e.name, d.name AS dept FROM {{p}}_emp e JOIN {{p}}_dept d ON e.dept_id = d.id ORDER BY e.id;
SELECT e.name, d.name AS dept FROM {{p}}_emp e LEFT JOIN {{p}}_dept d ON e.dept_id = d.id ORDER BY e.id;
SELECT e.name, d.name AS dept FROM {{p}}_emp e RIGHT JOIN {{p}}_dept d ON e.dept_id = d.id ORDER BY d.id, e.id;
SELECT e.name, d.name AS dept FROM {{p}}_emp e FULL JOIN {{p}}_dept d ON e.dept_id = d.id;
SELECT count(*) AS n FROM {{p}}_emp CROSS JOIN {{p}}_dept;
SELECT e.name, d.name AS dept FROM {{p}}_emp e, {{p}}_dept d WHERE e.dept_id = d.id AND d.budget > 600;
SELECT e.name, m.name AS manager FROM {{p}}_emp e LEFT JOIN {{p}}_emp m ON e.manager_id = m.id ORDER BY e.id;
SELECT e.name, d.name AS dept FROM {{p}}_emp e JOIN {{p}}_dept d ON e.dept_id = d.id AND e.salary > 95 ORDER BY 1;
SELECT e.name, d.name AS dept FROM {{p}}_emp e LEFT JOIN {{p}}_dept d ON e.dept_id = d.id AND d.budget > 600 ORDER BY 1;
SELECT a.name, b.name AS other FROM {{p}}_emp a JOIN {{p}}_emp b ON a.salary < b.salary AND a.dept_id = b.dept_id ORDER BY 1, 2;
CREATE TABLE {{p}}_a (k int, va text);
CREATE TABLE {{p}}_b (k int, vb text);
INSERT INTO {{p}}_a VALUES (1, 'a1'), (2, 'a2'), (NULL, 'anull');
INSERT INTO {{p}}_b VALUES (2, 'b2'), (3, 'b3'), (NULL, 'bnull');
SELECT * FROM {{p}}_a JOIN {{p}}_b USING (k);
SELECT * FROM {{p}}_a FULL JOIN {{p}}_b USING (k);
SELECT k, va, vb FROM {{p}}_a LEFT JOIN {{p}}_b USING (k);
SELECT * FROM {{p}}_a NATURAL JOIN {{p}}_b;
SELECT * FROM {{p}}_a a JOIN {{p}}_b b ON a.k = b.k;
SELECT d.name, t.top FROM {{p}}_dept d, LATERAL (SELECT max(e.salary) AS top FROM {{p}}_emp e WHERE e.dept_id = d.id) t ORDER BY d.id;
SELECT d.name, t.name AS emp FROM {{p}}_dept d LEFT JOIN LATERAL (SELECT e.name FROM {{p}}_emp e WHERE e.dept_id = d.id ORDER BY e.salary DESC LIMIT 1) t ON true ORDER BY d.id;
SELECT name FROM {{p}}_emp WHERE salary = (SELECT max(salary) FROM {{p}}_emp);
SELECT name, (SELECT d.name FROM {{p}}_dept d WHERE d.id = e.dept_id) AS dept FROM {{p}}_emp e ORDER BY id;
SELECT name FROM {{p}}_emp WHERE dept_id IN (SELECT id FROM {{p}}_dept WHERE budget > 100) ORDER BY name;
SELECT name FROM {{p}}_emp WHERE dept_id NOT IN (SELECT id FROM {{p}}_dept WHERE budget > 600) ORDER BY name;
SELECT name FROM {{p}}_emp WHERE dept_id NOT IN (SELECT budget::int FROM {{p}}_dept) ORDER BY name;
SELECT name FROM {{p}}_dept d WHERE EXISTS (SELECT 1 FROM {{p}}_emp e WHERE e.dept_id = d.id) ORDER BY name;
SELECT name FROM {{p}}_dept d WHERE NOT EXISTS (SELECT 1 FROM {{p}}_emp e WHERE e.dept_id = d.id) ORDER BY name;
SELECT e.name FROM {{p}}_emp e WHERE e.salary > (SELECT avg(x.salary) FROM {{p}}_emp x WHERE x.dept_id = e.dept_id) ORDER BY 1;
SELECT e.name FROM {{p}}_emp e WHERE EXISTS (SELECT 1 FROM {{p}}_emp x WHERE x.dept_id = e.dept_id AND x.id <> e.id AND x.hired > e.hired) ORDER BY 1;
SELECT e.name FROM {{p}}_emp e WHERE NOT EXISTS (SELECT 1 FROM {{p}}_emp x WHERE x.manager_id = e.id) ORDER BY 1;
SELECT e.name, (SELECT count(*) FROM {{p}}_emp x WHERE x.manager_id = e.id) AS reports FROM {{p}}_emp e ORDER BY e.id;
SELECT name FROM {{p}}_emp WHERE salary > ALL (SELECT salary FROM {{p}}_emp WHERE dept_id = 2) ORDER BY 1;
SELECT name FROM {{p}}_emp WHERE salary = ANY (SELECT salary FROM {{p}}_emp WHERE dept_id = 1 AND id <> 1) ORDER BY 1;
-- error 21000
SELECT (SELECT id FROM {{p}}_emp);
SELECT (SELECT id FROM {{p}}_emp WHERE false) AS nothing;
WITH rich AS (SELECT * FROM {{p}}_emp WHERE salary >= 100) SELECT name FROM rich ORDER BY name;
WITH d AS (SELECT dept_id, sum(salary) AS total FROM {{p}}_emp GROUP BY dept_id), m AS (SELECT max(total) AS mx FROM d) SELECT dept_id, total FROM d, m WHERE total = mx;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) SELECT sum(i) AS s, count(*) AS c FROM n;
WITH RECURSIVE chain AS (SELECT id, name, manager_id, 0 AS depth FROM {{p}}_emp WHERE manager_id IS NULL UNION ALL SELECT e.id, e.name, e.manager_id, c.depth + 1 FROM {{p}}_emp e JOIN chain c ON e.manager_id = c.id) SELECT name, depth FROM chain ORDER BY depth, name;
WITH RECURSIVE fib(a, b) AS (SELECT 0::bigint, 1::bigint UNION ALL SELECT b, a + b FROM fib WHERE b < 100) SELECT a FROM fib ORDER BY a;
WITH RECURSIVE t(x) AS (SELECT 1 UNION SELECT x FROM t) SELECT * FROM t;
SELECT dept_id, count(*) AS n, sum(salary) AS total, avg(salary) AS mean, min(hired) AS first, max(name) AS last FROM {{p}}_emp GROUP BY dept_id ORDER BY dept_id NULLS FIRST;
SELECT dept_id, count(salary) AS n FROM {{p}}_emp GROUP BY dept_id HAVING count(*) > 1 ORDER BY 1;
SELECT dept_id, sum(salary) AS s FROM {{p}}_emp GROUP BY 1 HAVING sum(salary) > 100 ORDER BY 2 DESC;
SELECT count(*) AS n, count(DISTINCT dept_id) AS depts, count(dept_id) AS with_dept, sum(DISTINCT salary) AS ds FROM {{p}}_emp;
SELECT active, count(*) AS n FROM {{p}}_emp GROUP BY active ORDER BY active NULLS LAST;
SELECT extract(year FROM hired) AS y, count(*) AS n FROM {{p}}_emp GROUP BY extract(year FROM hired) ORDER BY y;
SELECT dept_id, active, count(*) AS n FROM {{p}}_emp GROUP BY ROLLUP (dept_id, active) ORDER BY dept_id NULLS LAST, active NULLS LAST, n;
SELECT dept_id, active, count(*) AS n FROM {{p}}_emp GROUP BY CUBE (dept_id, active) ORDER BY dept_id NULLS LAST, active NULLS LAST, n;
SELECT dept_id, active, count(*) AS n, grouping(dept_id, active) AS g FROM {{p}}_emp GROUP BY GROUPING SETS ((dept_id), (active), ()) ORDER BY g, dept_id NULLS LAST, active NULLS LAST;
SELECT count(*) AS n, sum(salary) AS s FROM {{p}}_emp WHERE false;
SELECT dept_id, count(*) AS n FROM {{p}}_emp WHERE false GROUP BY dept_id;
-- error 42803
SELECT name, count(*) FROM {{p}}_emp;
-- error 42803
SELECT dept_id, name FROM {{p}}_emp GROUP BY dept_id;
-- error 42803
SELECT * FROM {{p}}_emp WHERE count(*) > 1;
SELECT DISTINCT dept_id FROM {{p}}_emp ORDER BY dept_id;
SELECT DISTINCT salary, dept_id FROM {{p}}_emp;
SELECT DISTINCT ON (dept_id) dept_id, name, salary FROM {{p}}_emp ORDER BY dept_id, salary DESC, name;
SELECT name, salary FROM {{p}}_emp ORDER BY salary NULLS FIRST, name;
SELECT name, salary FROM {{p}}_emp ORDER BY salary DESC NULLS LAST, name;
SELECT name, dept_id FROM {{p}}_emp ORDER BY dept_id DESC, name;
SELECT name FROM {{p}}_emp ORDER BY id LIMIT 3;
SELECT name FROM {{p}}_emp ORDER BY id LIMIT 3 OFFSET 2;
SELECT name FROM {{p}}_emp ORDER BY id OFFSET 5;
SELECT name FROM {{p}}_emp ORDER BY id FETCH FIRST 2 ROWS ONLY;
SELECT name FROM {{p}}_emp ORDER BY id LIMIT 0;
SELECT name FROM {{p}}_emp ORDER BY id LIMIT ALL;
-- error 2201W
SELECT name FROM {{p}}_emp LIMIT -1;
SELECT k FROM {{p}}_a UNION SELECT k FROM {{p}}_b;
SELECT k FROM {{p}}_a UNION ALL SELECT k FROM {{p}}_b;
SELECT k FROM {{p}}_a INTERSECT SELECT k FROM {{p}}_b;
SELECT k FROM {{p}}_a EXCEPT SELECT k FROM {{p}}_b;
SELECT dept_id FROM {{p}}_emp INTERSECT ALL SELECT dept_id FROM {{p}}_emp WHERE salary > 95;
SELECT dept_id FROM {{p}}_emp EXCEPT ALL SELECT id FROM {{p}}_dept;
SELECT 1 AS x UNION SELECT 2 ORDER BY x DESC;
SELECT name FROM {{p}}_emp WHERE id < 3 UNION ALL SELECT name FROM {{p}}_dept ORDER BY 1 LIMIT 4;
SELECT 1 AS a, 'x' AS b UNION SELECT 2, 'y' UNION SELECT 1, 'x';
SELECT 1 UNION SELECT 2.5;
-- error 42601
SELECT 1, 2 UNION SELECT 1;
-- error 42804
SELECT 1 UNION SELECT 'a'::text;
SELECT name, salary, row_number() OVER (ORDER BY salary DESC NULLS LAST, name) AS rn FROM {{p}}_emp ORDER BY rn;
SELECT name, dept_id, rank() OVER (PARTITION BY dept_id ORDER BY salary DESC) AS rk, dense_rank() OVER (PARTITION BY dept_id ORDER BY salary DESC) AS drk FROM {{p}}_emp ORDER BY dept_id NULLS FIRST, rk, name;
SELECT name, salary, sum(salary) OVER (ORDER BY id) AS running, sum(salary) OVER () AS total FROM {{p}}_emp ORDER BY id;
SELECT name, salary, avg(salary) OVER (PARTITION BY dept_id) AS dept_avg, count(*) OVER (PARTITION BY dept_id) AS dept_n FROM {{p}}_emp ORDER BY id;
SELECT id, lag(name) OVER (ORDER BY id) AS prev, lead(name, 2) OVER (ORDER BY id) AS next2, lag(id, 1, 0) OVER (ORDER BY id) AS lagd FROM {{p}}_emp ORDER BY id;
SELECT id, first_value(name) OVER w AS fv, last_value(name) OVER w AS lv, nth_value(name, 2) OVER w AS nv FROM {{p}}_emp WINDOW w AS (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) ORDER BY id;
SELECT id, sum(id) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s3, sum(id) OVER (ORDER BY id ROWS 2 PRECEDING) AS s2 FROM {{p}}_emp ORDER BY id;
SELECT id, hired, count(*) OVER (ORDER BY hired RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS c FROM {{p}}_emp ORDER BY id;
SELECT id, ntile(3) OVER (ORDER BY id) AS t, percent_rank() OVER (ORDER BY id) AS pr, cume_dist() OVER (ORDER BY id) AS cd FROM {{p}}_emp ORDER BY id;
SELECT dept_id, sum(salary) AS s, rank() OVER (ORDER BY sum(salary) DESC NULLS LAST) AS r FROM {{p}}_emp GROUP BY dept_id ORDER BY r, dept_id;
SELECT id, max(salary) OVER (PARTITION BY dept_id ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS runmax FROM {{p}}_emp ORDER BY id;
-- error 42P20
SELECT name FROM {{p}}_emp WHERE row_number() OVER () > 1;
SELECT stddev(salary) AS sd, stddev_pop(salary) AS sdp, variance(salary) AS v, var_pop(salary) AS vp FROM {{p}}_emp;
SELECT stddev(id::float8) AS sdf, variance(id) AS vi, stddev_samp(id::float8) AS sds FROM {{p}}_emp;
SELECT bool_and(active) AS ba, bool_or(active) AS bo, every(salary > 50) AS ev FROM {{p}}_emp;
SELECT string_agg(name, ',' ORDER BY name) AS names, string_agg(DISTINCT dept_id::text, '|' ORDER BY dept_id::text) AS ds FROM {{p}}_emp;
SELECT dept_id, string_agg(name, ', ' ORDER BY name DESC) AS names FROM {{p}}_emp GROUP BY dept_id ORDER BY dept_id NULLS LAST;
SELECT array_agg(id ORDER BY id) AS ids, array_agg(DISTINCT dept_id ORDER BY dept_id) AS depts FROM {{p}}_emp;
SELECT dept_id, array_agg(name ORDER BY salary DESC NULLS LAST, name) AS by_pay FROM {{p}}_emp GROUP BY dept_id ORDER BY 1 NULLS FIRST;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY salary) AS med, percentile_disc(0.5) WITHIN GROUP (ORDER BY salary) AS dmed, percentile_cont(0.25) WITHIN GROUP (ORDER BY id) AS q1 FROM {{p}}_emp;
SELECT dept_id, percentile_disc(0.9) WITHIN GROUP (ORDER BY id) AS p90 FROM {{p}}_emp GROUP BY dept_id ORDER BY 1 NULLS LAST;
SELECT count(*) FILTER (WHERE active) AS act, sum(salary) FILTER (WHERE dept_id = 1) AS eng FROM {{p}}_emp;
SELECT sum(id) AS si, avg(id) AS ai, sum(id::bigint) AS sb, avg(id::float8) AS af, sum(salary * 2) AS s2 FROM {{p}}_emp;
SELECT max(salary) - min(salary) AS spread, count(*) * 2 AS dbl, sum(salary) / count(*) AS mean2 FROM {{p}}_emp;
SELECT name, CASE WHEN salary >= 100 THEN 'high' WHEN salary >= 90 THEN 'mid' ELSE 'low' END AS band FROM {{p}}_emp ORDER BY id;
SELECT name, COALESCE(salary, 0) AS pay, NULLIF(dept_id, 1) AS not_eng FROM {{p}}_emp ORDER BY id;
SELECT upper(name) AS u, length(name) AS l, name || '@' || COALESCE(dept_id::text, 'none') AS tag FROM {{p}}_emp WHERE name LIKE '_e%' OR name ILIKE 'A%' ORDER BY 1;
SELECT sub.dept, sub.n FROM (SELECT dept_id AS dept, count(*) AS n FROM {{p}}_emp GROUP BY dept_id) sub WHERE sub.n > 1 ORDER BY 1;
SELECT * FROM (VALUES (1, 'one'), (2, 'two')) AS v(num, word) ORDER BY num;
SELECT t.* FROM (SELECT id, name FROM {{p}}_emp WHERE id <= 2) t ORDER BY t.id;
-- error 42703
SELECT nosuch FROM {{p}}_emp;
-- error 42703
SELECT e.nosuch FROM {{p}}_emp e;
-- error 42P01
SELECT x.id FROM {{p}}_emp e;
-- error 42702
SELECT id FROM {{p}}_emp, {{p}}_dept;
-- error 42P01
SELECT * FROM {{p}}_nosuch;
-- error 42601
SELECT name FROM {{p}}_emp WHERE;
-- error 42601
SELECT name FROM {{p}}_emp ORDER name;
-- error 42804
SELECT name FROM {{p}}_emp WHERE salary;
CREATE VIEW {{p}}_v AS SELECT dept_id, count(*) AS n FROM {{p}}_emp GROUP BY dept_id;
SELECT * FROM {{p}}_v ORDER BY dept_id NULLS FIRST;
SELECT v.n, d.name FROM {{p}}_v v JOIN {{p}}_dept d ON d.id = v.dept_id ORDER BY 2;
DROP VIEW {{p}}_v;
DROP TABLE {{p}}_a;
DROP TABLE {{p}}_b;
DROP TABLE {{p}}_emp;
DROP TABLE {{p}}_dept;
-- decorrelation corner cases (these must not become plain semi joins)
CREATE TABLE {{p}}_c1 (id int, v int);
CREATE TABLE {{p}}_c2 (id int, w int);
INSERT INTO {{p}}_c1 VALUES (1, 10), (2, 20), (3, NULL), (NULL, 5);
INSERT INTO {{p}}_c2 VALUES (1, 1), (1, 2), (2, NULL), (4, 4);
SELECT id FROM {{p}}_c1 c WHERE EXISTS (SELECT count(*) FROM {{p}}_c2 d WHERE d.id = c.id) ORDER BY id NULLS LAST;
SELECT id FROM {{p}}_c1 c WHERE NOT EXISTS (SELECT 1 FROM {{p}}_c2 d WHERE d.id = c.id) ORDER BY id NULLS LAST;
SELECT id FROM {{p}}_c1 c WHERE EXISTS (SELECT 1 FROM {{p}}_c2 d WHERE d.id = c.id AND d.w > 1) ORDER BY id;
SELECT id FROM {{p}}_c1 c WHERE v > (SELECT sum(w) FROM {{p}}_c2 d WHERE d.id = c.id) ORDER BY id;
SELECT id FROM {{p}}_c1 c WHERE 1 < (SELECT count(*) FROM {{p}}_c2 d WHERE d.id = c.id) ORDER BY id;
SELECT id FROM {{p}}_c1 c WHERE 0 = (SELECT count(*) FROM {{p}}_c2 d WHERE d.id = c.id) ORDER BY id NULLS LAST;
SELECT id FROM {{p}}_c1 c WHERE v >= (SELECT max(w) * 5 FROM {{p}}_c2 d WHERE d.id = c.id AND d.w IS NOT NULL) ORDER BY id;
SELECT id FROM {{p}}_c1 c WHERE EXISTS (SELECT 1 FROM {{p}}_c2 d WHERE d.id = c.id OR d.w = c.v) ORDER BY id;
SELECT id FROM {{p}}_c1 c WHERE EXISTS (SELECT 1 FROM {{p}}_c2 d WHERE d.w < c.id) ORDER BY id;
SELECT id, (SELECT count(*) FROM {{p}}_c2 a JOIN {{p}}_c2 b ON a.id = b.id AND b.id = c.id) AS pairs FROM {{p}}_c1 c ORDER BY id NULLS LAST;
SELECT id FROM {{p}}_c1 c WHERE EXISTS (SELECT 1 FROM {{p}}_c2 a JOIN {{p}}_c2 b ON a.id = b.id AND b.w = c.v / 10) ORDER BY id;
SELECT id, (SELECT sum(w) FROM (SELECT * FROM {{p}}_c2 d WHERE d.id = c.id) s) AS sw FROM {{p}}_c1 c ORDER BY id NULLS LAST;
SELECT id, (SELECT count(*) FROM {{p}}_c2 d WHERE d.id = c.id) FROM {{p}}_c1 c ORDER BY id NULLS LAST;
SELECT id, (SELECT sum(w) FROM {{p}}_c2 d WHERE d.id = c.id) AS s, (SELECT max(w) FROM {{p}}_c2 d WHERE d.id = c.id) + 1 AS m1 FROM {{p}}_c1 c ORDER BY id NULLS LAST;
SELECT id, CASE WHEN (SELECT count(w) FROM {{p}}_c2 d WHERE d.id = c.id) > 1 THEN 'many' ELSE 'few' END AS k FROM {{p}}_c1 c ORDER BY id NULLS LAST;
SELECT DISTINCT (SELECT count(*) FROM {{p}}_c2 d WHERE d.id = c.id) AS n FROM {{p}}_c1 c ORDER BY n;
DROP TABLE {{p}}_c1;
DROP TABLE {{p}}_c2;
