"""The AIM workload of the thesis (section 4.3.1, Table 4.3) as SQL: the
events schema inferred from the queries and the six continuous-view queries
with the evaluation's parameters (alpha=2, beta=2, gamma=4, delta=25, t=2,
cat=1, v=2).  Shared by bench/aim.py and the continuous-view tests.
{e} is the events relation, {c} customers."""

EVENTS_COLS = ("(entity_id int, week int, duration int, cost float8, local_calls int, long_distance bool, "
               "long_distance_cost float8, local_cost float8)")
CUSTOMERS_DDL = "(id int PRIMARY KEY, city_zip text, region_id int, type int, category int, value_type int)"

AIM_QUERIES = {
    "q1": "SELECT avg(t_duration) AS avg_duration FROM (SELECT sum(duration) AS t_duration FROM {e} "
          "WHERE week = current_week() GROUP BY entity_id HAVING count(local_calls) > 2) x",
    "q2": "SELECT max(max_cost) AS max_cost FROM (SELECT max(cost) AS max_cost FROM {e} "
          "WHERE week = current_week() GROUP BY entity_id HAVING count(*) > 2) x",
    "q3": "SELECT sum(t_cost) / sum(t_duration) AS cost_ratio FROM (SELECT sum(cost) AS t_cost, "
          "sum(duration) AS t_duration, count(*) AS num_calls FROM {e} WHERE week = current_week() "
          "GROUP BY entity_id) x GROUP BY num_calls LIMIT 100",
    "q4": "SELECT city_zip, avg(num_calls) AS avg_calls, sum(duration_calls) AS duration FROM (SELECT entity_id, "
          "count(*) AS num_calls, sum(duration) AS duration_calls FROM {e} WHERE NOT long_distance AND "
          "week = current_week() GROUP BY entity_id HAVING count(*) > 4 AND sum(duration) > 25) e, {c} c "
          "WHERE e.entity_id = c.id GROUP BY city_zip",
    "q5": "SELECT c.region_id, sum(long_distance_cost) AS cost_long, sum(local_cost) AS cost_local "
          "FROM {e} e, {c} c WHERE e.entity_id = c.id AND week = current_week() AND c.type = 2 "
          "AND c.category = 1 GROUP BY c.region_id",
    "q7": "SELECT sum(cost) / sum(duration) AS ratio FROM {e} e, {c} c WHERE e.entity_id = c.id "
          "AND week = current_week() AND c.value_type = 2",
}
