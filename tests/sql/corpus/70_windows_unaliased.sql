-- Window functions with and without an alias (issue 15: unaliased ones failed with 42803).
CREATE TABLE {{p}}_w (id int, g text, v numeric);
INSERT INTO {{p}}_w VALUES (1, 'a', 1.5), (2, 'a', 2), (3, 'b', NULL), (4, 'b', 4), (5, 'b', 5.25);
-- ordered
SELECT id, rank() OVER (ORDER BY v) FROM {{p}}_w ORDER BY id;
-- ordered
SELECT id, rank() OVER (ORDER BY v) AS r FROM {{p}}_w ORDER BY id;
-- ordered
SELECT id, sum(v) OVER (PARTITION BY g ORDER BY id) FROM {{p}}_w ORDER BY id;
-- ordered
SELECT id, sum(v) OVER (PARTITION BY g ORDER BY id) AS s FROM {{p}}_w ORDER BY id;
-- ordered
SELECT id, avg(v) OVER (), count(*) OVER (), max(v) OVER (ORDER BY id ROWS 1 PRECEDING) FROM {{p}}_w ORDER BY id;
-- ordered
SELECT id, row_number() OVER (ORDER BY id DESC), lag(v) OVER (ORDER BY id), lead(v, 1, 0) OVER (ORDER BY id) FROM {{p}}_w ORDER BY id;
-- ordered
SELECT g, sum(v), rank() OVER (ORDER BY sum(v)) FROM {{p}}_w GROUP BY g ORDER BY g;
-- ordered
SELECT g, sum(sum(v)) OVER () FROM {{p}}_w GROUP BY g ORDER BY g;
-- error 42803
SELECT sum(v), sum(v) OVER () FROM {{p}}_w;
-- error 42809
SELECT rank() FROM {{p}}_w;
DROP TABLE {{p}}_w;
