"""The message streams: deterministic, valid JSON, realistic keys, unique ids."""

from __future__ import annotations

import json
from collections import Counter
from itertools import islice

import pytest

from brownout.workload.generators import WORKLOADS, make_stream


def take(workload: str, n: int = 5000, **kw):
    opts = {"seed": 7, "run": "r1", "producer": "producer-0"} | kw
    return list(islice(make_stream(workload, **opts), n))


@pytest.mark.parametrize("workload", WORKLOADS)
def test_same_seed_same_messages_other_seed_other_messages(workload):
    a, b = take(workload, 2000), take(workload, 2000)
    assert a == b
    c = take(workload, 2000, seed=8)
    assert [m.value for m in a] != [m.value for m in c]
    # Each producer of a run has its own stream.
    d = take(workload, 2000, producer="producer-1")
    assert [m.key for m in a] != [m.key for m in d]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_values_are_json_with_the_msg_id_and_headers_match(workload):
    for m in take(workload):
        body = json.loads(m.value)
        assert body["msg_id"] == m.msg_id
        headers = dict(m.headers)
        assert headers["msg-id"] == m.msg_id.encode()
        assert headers["producer"] == b"producer-0"
        assert headers["seq"] == str(m.seq).encode()
        assert m.msg_id == f"r1-producer-0-{m.seq}"


@pytest.mark.parametrize("workload", WORKLOADS)
def test_msg_ids_unique_and_seq_dense(workload):
    msgs = take(workload) + take(workload, producer="producer-1")
    assert len({m.msg_id for m in msgs}) == len(msgs)
    assert [m.seq for m in msgs[:5000]] == list(range(5000))


@pytest.mark.parametrize("workload", WORKLOADS)
def test_event_time_moves_forward(workload):
    times = [m.event_time for m in take(workload, 1000, start_ms=1_000_000)]
    assert times == sorted(times) and times[0] >= 1_000_000


@pytest.mark.parametrize("workload", WORKLOADS)
def test_padding_keeps_json_valid(workload):
    for m in take(workload, 200, size=1024):
        assert len(m.value) == 1024
        json.loads(m.value)


def test_clicks_keyed_by_user_with_skewed_activity_and_real_sessions():
    msgs = take("clicks", 20000)
    keys = Counter(m.key for m in msgs)
    assert len(keys) > 500  # many users...
    assert keys.most_common(1)[0][1] / len(msgs) < 0.2  # ...no single one dominates
    bodies = [json.loads(m.value) for m in msgs]
    assert all(b["user_id"].encode() == m.key for b, m in zip(bodies, msgs, strict=True))
    events = Counter(b["event"] for b in bodies)
    assert events["session_start"] > 0 and events["session_end"] > 0
    assert events["page_view"] > events["session_start"]
    # a session belongs to one user, and continues with the previous page as referrer
    owner: dict[str, str] = {}
    last_page: dict[str, str] = {}
    for b in bodies:
        assert owner.setdefault(b["session_id"], b["user_id"]) == b["user_id"]
        if b["event"] in ("page_view", "session_end") and b["session_id"] in last_page:
            assert b["referrer"] == last_page[b["session_id"]]
        last_page[b["session_id"]] = b["page"]
    assert {b["device"] for b in bodies} <= {"mobile", "desktop", "tablet"}


def test_payments_follow_the_state_machine_per_account_key():
    msgs = take("payments", 20000)
    assert len({m.key for m in msgs}) > 500
    allowed = {None: {"created"}, "created": {"authorized", "failed"},
               "authorized": {"captured", "failed"}, "captured": {"refunded"}}
    state: dict[str, str | None] = {}
    key_of: dict[str, bytes] = {}
    for m in msgs:
        b = json.loads(m.value)
        pid = b["payment_id"]
        assert b["status"] in allowed[state.get(pid)]
        assert b["previous_status"] == state.get(pid)
        state[pid] = b["status"]
        assert key_of.setdefault(pid, m.key) == m.key == b["account"].encode()
        assert b["amount"] > 0 and len(b["currency"]) == 3
    seen = Counter(state.values())
    assert seen["captured"] and seen["failed"] and seen["refunded"]


def test_logs_keyed_by_service_with_bursts_and_a_latency_tail():
    msgs = take("logs", 30000)
    bodies = [json.loads(m.value) for m in msgs]
    assert {m.key for m in msgs} == {b["service"].encode() for b in bodies}
    assert len({m.key for m in msgs}) == 10
    levels = Counter(b["level"] for b in bodies)
    assert levels["INFO"] > levels["WARN"] > 0 and levels["ERROR"] > 0
    latencies = sorted(b["latency_ms"] for b in bodies)
    p50, p999 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.999)]
    assert p999 > 10 * p50  # a heavy tail
    assert all(b["host"].startswith(b["service"] + "-") for b in bodies)


def test_unknown_workload_is_refused():
    with pytest.raises(ValueError, match="unknown workload"):
        make_stream("trades", seed=1, run="r", producer="p")


def test_identity_headers_read_back_what_the_stream_wrote():
    from brownout.workload.generators import make_stream, read_identity

    msg = next(iter(make_stream("payments", seed=1, run="r", producer="producer-0",
                                start_ms=0, rate=10, size=0)))
    assert read_identity(msg.headers) == (msg.msg_id, "producer-0", msg.seq)
    assert read_identity(None) == (None, None, None)
    assert read_identity([("seq", b"x"), ("msg-id", None)]) == (None, None, None)
