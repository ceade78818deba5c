"""Temporary span tracer (not committed): SPANS=path enables."""
import os, threading, time, atexit
_on = bool(os.environ.get("SPANS"))
_buf = []
def wrap(label, fn):
    if not _on:
        return fn
    def w(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            _buf.append((threading.get_ident(), label, t0, time.perf_counter()))
    return w
def span(label, t0):
    if _on:
        _buf.append((threading.get_ident(), label, t0, time.perf_counter()))
def dump():
    if _on:
        with open(os.environ["SPANS"], "w") as f:
            for s in _buf:
                f.write("%d %s %.7f %.7f\n" % s)
if _on:
    import signal
    atexit.register(dump)
