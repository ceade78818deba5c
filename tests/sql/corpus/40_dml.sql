-- DML and constraints: RETURNING, ON CONFLICT, UPDATE ... FROM, DELETE ... USING,
-- and the SQLSTATEs of constraint violations.
CREATE TABLE {{p}}_acct (id int PRIMARY KEY, owner text NOT NULL, balance numeric(12,2) DEFAULT 0 CHECK (balance >= 0), kind text DEFAULT 'std', UNIQUE (owner, kind));
CREATE TABLE {{p}}_tx (id serial PRIMARY KEY, acct_id int REFERENCES {{p}}_acct (id), amount numeric(12,2) NOT NULL, note text);
INSERT INTO {{p}}_acct (id, owner, balance) VALUES (1, 'ann', 100), (2, 'bob', 50.5), (3, 'cid', 0);
INSERT INTO {{p}}_acct VALUES (4, 'dee', 10, 'gold') RETURNING *;
INSERT INTO {{p}}_acct (id, owner) VALUES (5, 'eve') RETURNING id, balance, kind;
INSERT INTO {{p}}_acct (id, owner, balance) SELECT 10 + id, owner || '2', balance * 2 FROM {{p}}_acct WHERE id <= 2 RETURNING id, owner, balance;
SELECT * FROM {{p}}_acct ORDER BY id;
-- error 23505
INSERT INTO {{p}}_acct (id, owner) VALUES (1, 'dup');
-- error 23505
INSERT INTO {{p}}_acct (id, owner, kind) VALUES (99, 'ann', 'std');
-- error 23502
INSERT INTO {{p}}_acct (id, owner) VALUES (98, NULL);
-- error 23502
INSERT INTO {{p}}_acct (owner) VALUES ('nokey');
-- error 23514
INSERT INTO {{p}}_acct (id, owner, balance) VALUES (97, 'neg', -1);
-- error 22P02
INSERT INTO {{p}}_acct (id, owner) VALUES ('x', 'bad');
-- error 22003
INSERT INTO {{p}}_acct (id, owner, balance) VALUES (96, 'big', 1e12);
-- error 42703
INSERT INTO {{p}}_acct (id, nosuch) VALUES (1, 2);
-- error 42601
INSERT INTO {{p}}_acct (id, owner) VALUES (1);
SELECT count(*) AS n FROM {{p}}_acct;
INSERT INTO {{p}}_acct (id, owner) VALUES (1, 'again') ON CONFLICT DO NOTHING;
INSERT INTO {{p}}_acct (id, owner) VALUES (1, 'again') ON CONFLICT (id) DO NOTHING RETURNING id;
INSERT INTO {{p}}_acct (id, owner, balance) VALUES (1, 'ann', 7), (6, 'fay', 8) ON CONFLICT (id) DO UPDATE SET balance = {{p}}_acct.balance + EXCLUDED.balance RETURNING id, owner, balance;
INSERT INTO {{p}}_acct (id, owner, balance) VALUES (2, 'zed', 1) ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner WHERE {{p}}_acct.balance > 1000 RETURNING id;
SELECT id, owner, balance FROM {{p}}_acct ORDER BY id;
INSERT INTO {{p}}_tx (acct_id, amount, note) VALUES (1, 10, 'a'), (1, 5.25, 'b'), (2, 3, NULL), (4, 1, 'd') RETURNING id, acct_id, amount;
-- error 23503
INSERT INTO {{p}}_tx (acct_id, amount) VALUES (999, 1);
INSERT INTO {{p}}_tx (acct_id, amount) VALUES (NULL, 2) RETURNING id, acct_id;
-- error 23503
DELETE FROM {{p}}_acct WHERE id = 1;
-- error 23503
UPDATE {{p}}_acct SET id = 100 WHERE id = 4;
UPDATE {{p}}_acct SET balance = balance + 1 WHERE id = 3 RETURNING id, balance;
UPDATE {{p}}_acct SET balance = balance * 2, kind = 'x' WHERE balance > 100 RETURNING *;
UPDATE {{p}}_acct SET kind = DEFAULT WHERE kind = 'x';
UPDATE {{p}}_acct a SET balance = a.balance + t.total FROM (SELECT acct_id, sum(amount) AS total FROM {{p}}_tx GROUP BY acct_id) t WHERE t.acct_id = a.id RETURNING a.id, a.balance, t.total;
UPDATE {{p}}_acct SET balance = 0 WHERE false;
UPDATE {{p}}_acct SET note = 1;
;;
-- error 23514
UPDATE {{p}}_acct SET balance = -5 WHERE id = 3;
-- error 23502
UPDATE {{p}}_acct SET owner = NULL WHERE id = 3;
-- error 23505
UPDATE {{p}}_acct SET id = 2 WHERE id = 3;
SELECT id, owner, balance, kind FROM {{p}}_acct ORDER BY id;
DELETE FROM {{p}}_tx t USING {{p}}_acct a WHERE t.acct_id = a.id AND a.owner = 'bob' RETURNING t.id, t.amount, a.owner;
DELETE FROM {{p}}_tx WHERE acct_id IS NULL RETURNING note;
DELETE FROM {{p}}_tx WHERE amount > 100;
SELECT acct_id, amount, note FROM {{p}}_tx ORDER BY id;
DELETE FROM {{p}}_tx;
DELETE FROM {{p}}_acct WHERE id > 10 RETURNING owner;
SELECT count(*) AS n, sum(balance) AS total FROM {{p}}_acct;
TRUNCATE {{p}}_tx;
INSERT INTO {{p}}_tx (acct_id, amount) VALUES (3, 1) RETURNING acct_id;
ALTER TABLE {{p}}_acct ADD COLUMN opened date DEFAULT '2024-01-01';
SELECT id, opened FROM {{p}}_acct ORDER BY id;
ALTER TABLE {{p}}_acct RENAME COLUMN kind TO tier;
SELECT tier FROM {{p}}_acct ORDER BY id LIMIT 1;
-- error 42703
SELECT kind FROM {{p}}_acct;
ALTER TABLE {{p}}_acct DROP COLUMN opened;
SELECT * FROM {{p}}_acct ORDER BY id;
-- error 42P07
CREATE TABLE {{p}}_acct (id int);
CREATE TABLE IF NOT EXISTS {{p}}_acct (id int);
-- error 42P01
DROP TABLE {{p}}_nosuch;
DROP TABLE IF EXISTS {{p}}_nosuch;
-- error 2BP01
DROP TABLE {{p}}_acct;
CREATE TABLE {{p}}_gen (id int GENERATED ALWAYS AS IDENTITY, v text);
INSERT INTO {{p}}_gen (v) VALUES ('a'), ('b') RETURNING id, v;
-- error 428C9
INSERT INTO {{p}}_gen (id, v) VALUES (10, 'c');
INSERT INTO {{p}}_gen (v) VALUES ('c') RETURNING id;
INSERT INTO {{p}}_gen DEFAULT VALUES RETURNING id, v;
DROP TABLE {{p}}_gen;
DROP TABLE {{p}}_tx;
DROP TABLE {{p}}_acct;
-- error 42601
CREATE TABLE trailing_comma_t (id int,);
-- error 42601
SELECT greatest(1, 2,);
SELECT ',)' AS s, length(', )') AS n;
-- assignment casts: any type into a string column (I/O conversion), row by row in a VALUES list
CREATE TABLE {{p}}_strs (a text, b varchar(5), c char(3));
INSERT INTO {{p}}_strs VALUES (1, 2, 3);
INSERT INTO {{p}}_strs VALUES (1.5, true, 7), (3, 4, 5);
INSERT INTO {{p}}_strs VALUES (date '2024-01-02', 12345, NULL);
SELECT * FROM {{p}}_strs ORDER BY a, b;
UPDATE {{p}}_strs SET a = 42 WHERE b = '2';
SELECT a, b FROM {{p}}_strs ORDER BY a, b;
-- error 22001
INSERT INTO {{p}}_strs (b) VALUES (123456);
CREATE TABLE {{p}}_ints (n int);
-- error 42804
INSERT INTO {{p}}_ints VALUES ('7'::text);
