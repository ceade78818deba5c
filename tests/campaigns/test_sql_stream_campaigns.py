"""The short runs of the fuzzing campaigns (the long ones run on demand, see
README, Testing), the statements their findings reduced to, and the
known-differences files they classify with.

Seeds are fixed, so a short run is deterministic in what it generates; a
difference no entry of the known-differences file explains fails it."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.campaigns import known, sqlfuzz, streamfuzz
from tests.support.diff import diff_file

SQL_SEED, SQL_STATEMENTS = 7, 1500
STREAM_SEED, STREAM_KILLS = 5, 8
CORPUS = Path(__file__).parent / "corpus" / "sqlfuzz_regressions.sql"


def _unexpected(tally: known.Tally) -> str:
    return f"{tally.summary()}\n" + "\n".join(tally.unexpected[:5])


def test_sqlfuzz_short(ss_server, pg15, unique_name):
    camp = sqlfuzz.Campaign(ss_server.dsn, pg15.dsn, SQL_SEED, prefix=unique_name("fz"),
                            strict=known.strict_ids())
    try:
        tally = camp.run(SQL_STATEMENTS)
    finally:
        camp.close()
    assert tally.compared == SQL_STATEMENTS
    assert not tally.unexpected, _unexpected(tally)
    assert tally.agreed > SQL_STATEMENTS * 0.8, tally.summary()     # the campaign mostly compares, not classifies


@pytest.mark.crash
def test_streamfuzz_short(ss_server_factory, pg15):
    try:
        tally, stats = streamfuzz.run_campaign(ss_server_factory, pg15.dsn, STREAM_SEED, STREAM_KILLS,
                                               strict=known.strict_ids())
    except streamfuzz.Failure as exc:
        pytest.fail(str(exc), pytrace=False)
    assert stats["kills"] == STREAM_KILLS and stats["views"] > 0
    assert stats["acked"] > 0 and stats["bad_rows"] > 0, stats
    assert not tally.unexpected, _unexpected(tally)


def test_sqlfuzz_findings_agree_with_postgresql(ss_conn, pg_conn, unique_name):
    pairs = diff_file(CORPUS, ss_conn, pg_conn, names={"p": unique_name("fr")})
    assert len(pairs) > 20


def test_temporal_overflow_is_a_range_error(ss_conn):
    """Past year 9999 splitstream cannot go (a known difference: PostgreSQL can); it must say so with
    PostgreSQL's range error, not an internal one."""
    for sql in ("SELECT '9999-12-31 20:00'::timestamp + interval '1 day'",
                "SELECT '0001-01-01 00:00'::timestamp - interval '1 month'",
                "SELECT '9999-12-31'::date + 3"):
        with pytest.raises(Exception) as info:
            ss_conn.execute(sql)
        assert getattr(info.value, "sqlstate", None) == "22008", (sql, info.value)


@pytest.mark.parametrize("name", [sqlfuzz.KNOWN_FILE, streamfuzz.KNOWN_FILE])
def test_known_differences_have_reasons(name):
    entries = known.load(name)
    assert entries and len({e.id for e in entries}) == len(entries)
    assert all(len(e.reason.split()) >= 12 for e in entries), "each entry says why, in a sentence or more"


def test_classification():
    """An entry explains only what it describes; expected-fix entries turn into failures under --strict."""
    entries = known.load(streamfuzz.KNOWN_FILE) + known.load(sqlfuzz.KNOWN_FILE)
    tally = known.Tally()
    hit = tally.classify(entries, set(), "pg-error", "SELECT 1", "", "0A000",
                         "FULL JOIN is only supported with merge-joinable or hash-joinable join conditions")
    assert hit is not None and hit.id == "full-join-any-condition" and not tally.unexpected
    assert tally.classify(entries, set(), "result", "SELECT 1", None, None, "rows only in splitstream") is None
    assert len(tally.unexpected) == 1
    # the multi-view atomicity bug is fixed: a recurrence is no known difference
    fixed = known.Tally()
    assert fixed.classify(entries, set(), "any", "multi-view-atomicity", None, None, "leak") is None
    assert fixed.unexpected
