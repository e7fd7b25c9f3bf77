"""A rolling restart of every process (as a deployment's update would do), and a standby gate
taking over from a SIGKILLed one, while claws write: nothing lost, nothing doubled on the log,
every read model equal to a clean replay."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections import Counter

import pytest

from contracts.header_bytes import read_header
from hivemem.stack import ServiceProcess, Stack
from streams.kafka import read_topics
from tests.conftest import wait_until
from tests.integration.support import client
from tests.integration.test_faults import _assert_equal_to_clean_replay, _audited, _publish_many

pytestmark = pytest.mark.integration


def test_rolling_restart_of_every_service_while_claws_write(stack: Stack) -> None:
    trace = f"roll-{uuid.uuid4().hex}"
    claws = [client(stack, f"claw-r{i}-{trace[-6:]}") for i in range(4)]
    done, sent = threading.Event(), [0]
    failures: list[str] = []

    def write() -> None:  # a steady trickle, for as long as the restarts take
        i = 0
        while not done.is_set():
            c = claws[i % len(claws)]
            c.publish_envelope_async(c.build("presence" if i % 2 else "capabilities",
                                             {"status": "ACTIVE"} if i % 2 else {"capabilities": [f"cap.{i}"]},
                                             trace_id=trace),
                                     lambda tok, err: failures.append(err) if err else None)  # fmt: skip
            i += 1
            time.sleep(0.01)
        for c in claws:
            assert c.flush(120) == 0
        sent[0] = i

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(1)
    for name, svc in stack.services.items():  # one at a time, as a rolling update does
        svc.stop()
        assert not svc.alive(), name
        svc.start()
        if name == "api":
            stack.wait_api()
        time.sleep(1.5)  # let it take its partitions up again before the next one goes
    done.set()
    writer.join()
    n = sent[0]
    assert n > 300 and failures == []

    wait_until(lambda: _audited(stack, trace) == n, timeout=180, what=f"{n} audited")
    time.sleep(1)
    assert _audited(stack, trace) == n  # one verdict each, none doubled in the read model
    # None doubled on the log either: each envelope reached its accepted topic once.
    names = stack.settings.topics
    accepted = read_topics(stack.settings.require_kafka(), [names.accepted("presence"), names.accepted("capabilities")])
    ids = Counter(h.event_id for r in accepted if r.value and (h := read_header(r.value)) and h.trace_id == trace)
    assert len(ids) == n and max(ids.values()) == 1
    stack.wait_ready()
    _assert_equal_to_clean_replay(stack)


def test_standby_gate_takes_over_when_the_active_one_is_sigkilled(stack: Stack) -> None:
    """Two gate instances: one holds the gate's lock, the other waits. SIGKILL the active one in
    mid-stream: the standby takes every partition over from the stored offsets."""
    standby = ServiceProcess("gate-standby", ["gate"], stack.child_env(), stack.settings.home / "logs")
    standby.start()
    active = stack.services["gate"]
    try:
        time.sleep(2)  # the standby is up and waiting on the lock
        trace, n = f"standby-{uuid.uuid4().hex}", 1500

        def kill_active() -> None:
            time.sleep(0.3)
            assert active.proc is not None
            active.proc.send_signal(signal.SIGKILL)
            active.proc.wait()

        t = threading.Thread(target=kill_active)
        _publish_many(stack, trace, n, during=t.start)
        t.join()
        wait_until(lambda: _audited(stack, trace) == n, timeout=120, what=f"{n} audited by the standby")
        assert standby.alive() and not active.alive()
        time.sleep(1)
        assert _audited(stack, trace) == n
        names = stack.settings.topics
        accepted = read_topics(stack.settings.require_kafka(),
                               [names.accepted("presence"), names.accepted("capabilities")])  # fmt: skip
        ids = Counter(h.event_id for r in accepted if r.value and (h := read_header(r.value)) and h.trace_id == trace)
        assert len(ids) == n and max(ids.values()) == 1
    finally:
        active.start()  # the suite's gate again; the standby steps down
        standby.stop()
    _assert_equal_to_clean_replay(stack)
