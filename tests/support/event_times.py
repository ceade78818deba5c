"""Generated event-time CSV for the COPY readers' differential tests: nearly
sorted timestamps, as streams send them, so that the compiled reader's
fixed-width path (the previous row's date, hour and minute reused) is taken
most of the time, with the cases where it must step aside mixed in."""
from __future__ import annotations

import datetime
import random
from typing import Callable, Sequence

Miss = Callable[[str], str]

#: spellings PostgreSQL reads with its own meaning (a leap second rolls over,
#: a seventh digit rounds, a zone on a timestamp is ignored, no seconds):
#: the fixed-width path must leave them to the exact path
PG_READS: Sequence[Miss] = (lambda ts: ts[:17] + "60.000000", lambda ts: ts[:19] + ".1234567",
                            lambda ts: ts + "Z", lambda ts: ts[:16], lambda ts: ts[:19] + ".1239")
#: spellings PostgreSQL refuses (a letter, a zero byte)
REFUSED: Sequence[Miss] = (lambda ts: ts[:18] + "x" + ts[19:], lambda ts: ts[:19] + "." + ts[20:] + "\0",
                           lambda ts: ts.replace("-", "\0", 1))
LAST = datetime.datetime(9999, 12, 31, 23, 59, 59)


def start(rng: random.Random) -> datetime.datetime:
    """A moment to start a run of events at: any day, often a leap day or a
    year's last minutes (where the day number moves)."""
    kind = rng.random()
    if kind < 0.2:
        y = rng.choice([4, 400, 1600, 1972, 2000, 2024, 9996])
        return datetime.datetime(y, 2, 29, 23, rng.randint(55, 59), rng.randint(0, 59))
    if kind < 0.35:
        return datetime.datetime(rng.randint(1, 9998), 12, 31, 23, 59, rng.randint(0, 59))
    return datetime.datetime(rng.randint(1, 9999), rng.randint(1, 12), rng.randint(1, 28),
                             rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), rng.randint(0, 999999))


def spell(t: datetime.datetime, sep: str, digits: int) -> str:
    text = f"{t.year:04d}-{t.month:02d}-{t.day:02d}{sep}{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    return text + (f".{t.microsecond:06d}"[: digits + 1] if digits else "")


def event_rows(seed: int, n: int, misses: Sequence[Miss] = ()) -> bytes:
    """``n`` CSV rows ``id,timestamptz,timestamp,date``: runs of rows a few
    milliseconds apart across minute, day, month and year ends and leap
    days; mostly six fractional digits, often three, sometimes 0-5; a zone
    on a fifth of the timestamptz; 3% NULLs per column; and, 2% of the
    time, one of ``misses`` applied to the timestamp."""
    rng = random.Random(seed)
    out, t, sep = [], start(rng), "T"
    for i in range(n):
        if rng.random() < 0.01:
            t, sep = start(rng), rng.choice(" T")
        t = min(t + datetime.timedelta(microseconds=rng.choice([0, 1, 999, rng.randint(0, 3_000_000)])), LAST)
        digits = rng.choices([6, 3, rng.randint(0, 5)], [70, 15, 15])[0]
        ts = spell(t, sep if rng.random() < 0.97 else " T"[sep == " "], digits)
        tz = ts + ("" if rng.random() < 0.8 else rng.choice(["Z", "+00", "-03", "+05:30", "+0100"]))
        if misses and rng.random() < 0.02:
            ts = rng.choice(misses)(ts)
        fields = [str(i), "" if rng.random() < 0.03 else tz, "" if rng.random() < 0.03 else ts,
                  "" if rng.random() < 0.03 else ts[:10]]
        out.append(",".join(fields))
    return ("\n".join(out) + "\n").encode()
