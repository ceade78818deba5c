"""The short runs of the protocol fuzzing and load campaigns (the long runs:
``python -m tests.campaigns.fuzz`` and ``python -m tests.campaigns.load``, see
the README's testing part).  Each starts its own server, since a campaign
judges the server process's descriptors, threads and memory."""
from __future__ import annotations

import asyncio
import random
import shutil
from pathlib import Path

import pytest

from . import fuzz, load, wire
from .fuzz_gen import Generator


def test_fuzz_plans_depend_only_on_seed_and_index() -> None:
    assert fuzz.plan_for(3, 17) == fuzz.plan_for(3, 17)
    assert fuzz.plan_for(3, 17) != fuzz.plan_for(4, 17)


def test_fuzz_generator_covers_the_message_kinds() -> None:
    """The generator really sends every frontend message kind the brief names."""
    kinds: set[bytes] = set()
    packets: set[int] = set()
    for i in range(400):
        plan = Generator(random.Random(i)).plan()
        kinds.update(frame[:1] for frame in plan.body)
        for _, pkt in plan.prelude:
            packets.add(int.from_bytes(pkt[4:8], "big"))
    assert set(b"QPBDESCHXdcfpF") <= {k[0] for k in kinds if k}
    assert {wire.SSL_REQUEST, wire.GSSENC_REQUEST, wire.CANCEL_REQUEST} <= packets


def test_backend_log_flags_a_malformed_frame() -> None:
    log = wire.BackendLog()
    log.feed(wire.typed(b"Z", b"I") + b"\x00\x00\x00\x00\x05")
    assert log.ready == 1 and log.malformed is not None


@pytest.mark.parametrize("password,tls,messages", [(None, False, 4000), ("fuzz pw", True, 2000)],
                         ids=["trust", "scram-tls"])
def test_fuzz_campaign_short(tmp_path: Path, password: str | None, tls: bool, messages: int) -> None:
    """A few thousand fuzzed messages: no death, hang, internal error or leak
    (with a password, every connection logs in by SCRAM and some spoil it;
    with TLS, every other connection asks for it, and some send garbage instead)."""
    if tls and shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    server = fuzz.start_server(tmp_path, password, tls)
    try:
        rep = asyncio.run(fuzz.Campaign(server, seed=20261126, messages=messages, concurrency=6,
                                        control_every=messages // 16).run())
    finally:
        server.stop()
    assert rep.messages >= messages and rep.control_round_trips >= 10, rep.summary()
    assert rep.endings["closed"] + rep.endings["fatal"] > rep.connections // 4, rep.summary()
    assert not rep.failures(), rep.summary()


@pytest.mark.parametrize("connections,seconds", [(100, 8.0)])
def test_load_campaign_short(tmp_path: Path, connections: int, seconds: float) -> None:
    """100 clients inserting and reading for a few seconds: every acknowledged
    insert counted, reads see their own writes, one client more gets 53300."""
    server = load.start_server(tmp_path, connections)
    try:
        rep = load.run(server, 20261126, connections, seconds)
    finally:
        server.stop()
    assert rep.connected == connections and sum(rep.ops.values()) > connections, rep.summary()
    assert not rep.failures(), rep.summary()
    assert "Traceback" not in server.log_text()
