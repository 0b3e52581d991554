"""Observation E as a scenario step: consumer-group correctness on a live cluster.

    E1  two consumers with the same client.id in one group get their own member ids and
        their own partitions (librdkafka consumers + DescribeGroups)
    E2  a follower that rejoins a stable group with unchanged metadata keeps the
        assignment the leader published (SyncGroup at the same generation returns it)
    E3  a follower that syncs before the leader waits (or gets REBALANCE_IN_PROGRESS),
        never an empty assignment with no error
    E4  a heartbeat during a rebalance gets REBALANCE_IN_PROGRESS, not ILLEGAL_GENERATION
    E5  LeaveGroup v5 (flexible) removes every listed member in one request, answered
        in flexible encoding (decoding the v5 response proves it); the group is Empty

E2-E5 speak the raw protocol to the group coordinator (FindCoordinator) so every error
code is seen as the broker sent it. Each check returns {"passed", "detail"}; a crash is
a failed check with the error.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from ..cluster.wire import WireClient, WireError
from ..protocol.apis import ApiKey

CheckResult = dict[str, Any]

# How long a check waits for the cluster (a coordinator, a rebalance) before it fails.
# The checks are about what the coordinator answers, not how fast: right after the
# coordinator's broker is killed a new one takes a broker session timeout and an
# election, and on a loaded machine librdkafka's rebalance takes several session
# timeouts, so the bound is generous.
WAIT_FOR_CLUSTER = 60.0


def _ok(detail: str) -> CheckResult:
    return {"passed": True, "detail": detail}


def _bad(detail: str) -> CheckResult:
    return {"passed": False, "detail": detail}


def find_coordinator(bootstrap: str, group: str, timeout: float = WAIT_FOR_CLUSTER) -> str:
    deadline = time.monotonic() + timeout
    last = "no broker answered"
    while time.monotonic() < deadline:
        for address in bootstrap.split(","):
            try:
                with WireClient(address, timeout=5) as c:
                    r = c.request(ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
            except (WireError, OSError) as e:
                last = f"{address}: {e}"
                continue
            if r.error_code.name == "none":
                return f"{r.host}:{r.port}"
            last = f"FindCoordinator: {r.error_code.name}"
        time.sleep(0.3)
    raise TimeoutError(f"no coordinator for group {group}: {last}")


def _join(c: WireClient, group: str, member_id: str) -> Any:
    return c.request(ApiKey.JOIN_GROUP, 5, {
        "group_id": group, "session_timeout": 10000, "rebalance_timeout": 10000,
        "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"m"}],
    })


def _join_with_id(c: WireClient, group: str) -> str:
    first = _join(c, group, "")
    if first.error_code.name != "member_id_required" or not first.member_id:
        raise AssertionError(f"first JoinGroup: {first.error_code.name}, expected "
                             "MEMBER_ID_REQUIRED with a member id")
    return str(first.member_id)


def _sync(c: WireClient, group: str, generation: int, member_id: str,
          assignments: dict[str, bytes]) -> Any:
    return c.request(ApiKey.SYNC_GROUP, 5, {
        "group_id": group, "generation_id": generation, "member_id": member_id,
        "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": m, "assignment": a} for m, a in assignments.items()],
    })


def _await_group_state(c: WireClient, group: str, state: str, timeout: float) -> str:
    """The group's state once it is `state`, or the last one seen after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        described = c.request(ApiKey.DESCRIBE_GROUPS, 5, {
            "groups": [group], "include_authorized_operations": False})
        seen = str(described.groups[0].group_state)
        if seen == state or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def raw_checks(bootstrap: str, wanted: Iterable[str]) -> dict[str, CheckResult]:
    """E2-E5 in one scripted conversation of two members with the coordinator."""
    wanted = set(wanted)
    group = f"brownout-e-{uuid.uuid4().hex[:6]}"
    coordinator = find_coordinator(bootstrap, group)
    out: dict[str, CheckResult] = {}
    with WireClient(coordinator, 15, "same-client") as c1, \
            WireClient(coordinator, 15, "same-client") as c2:
        m1 = _join_with_id(c1, group)
        j1 = _join(c1, group, m1)
        if j1.error_code.name != "none" or j1.leader != m1:
            raise AssertionError(f"leader join: {j1.error_code.name}, leader {j1.leader}")
        gen1 = j1.generation_id
        s1 = _sync(c1, group, gen1, m1, {m1: b"A"})
        if bytes(s1.assignment) != b"A":
            raise AssertionError(f"leader sync: {s1.error_code.name} {s1.assignment!r}")

        m2 = _join_with_id(c2, group)
        parked: dict[str, Any] = {}
        joiner = threading.Thread(target=lambda: parked.update(r=_join(c2, group, m2)),
                                  daemon=True)
        joiner.start()
        # E4 asks about a heartbeat while m2's JoinGroup is parked: wait until the
        # coordinator says the group is preparing a rebalance (on a loaded machine m2's
        # request may take seconds to get there).
        state = _await_group_state(c1, group, "PreparingRebalance", timeout=15.0)
        if state != "PreparingRebalance":
            raise AssertionError(f"the group stayed {state} after m2's JoinGroup")
        beat = c1.request(ApiKey.HEARTBEAT, 4, {"group_id": group, "generation_id": gen1,
                                         "member_id": m1, "group_instance_id": None})
        code = beat.error_code.name
        out["E4"] = (_ok if code == "rebalance_in_progress" else _bad)(
            f"heartbeat during the rebalance: {code.upper()}")
        j1b = _join(c1, group, m1)
        joiner.join(15)
        j2 = parked.get("r")
        if j2 is None or j2.error_code.name != "none" or j1b.error_code.name != "none":
            raise AssertionError("second generation did not form")
        gen2 = j1b.generation_id

        # E3: the follower syncs first; it must wait for the leader's assignment.
        early: dict[str, Any] = {}
        follower = threading.Thread(
            target=lambda: early.update(r=_sync(c2, group, gen2, m2, {})), daemon=True)
        follower.start()
        # A head start for the follower, so that the check usually takes the path it is
        # about; where the leader's sync gets there first, both outcomes are right and
        # the detail says which path was taken.
        time.sleep(0.5)
        waited = follower.is_alive()
        s1b = _sync(c1, group, gen2, m1, {m1: b"A", m2: b"B"})
        follower.join(15)
        r = early.get("r")
        if r is None:
            out["E3"] = _bad("the follower's early SyncGroup never returned")
        else:
            got, err = bytes(r.assignment or b""), r.error_code.name
            if err == "none" and got == b"B":
                out["E3"] = _ok(f"follower {'waited for' if waited else 'raced'} the "
                                "leader and got its assignment")
            elif err == "rebalance_in_progress":
                out["E3"] = _ok("follower told REBALANCE_IN_PROGRESS")
            else:
                out["E3"] = _bad(f"follower got {err.upper()} with assignment {got!r}")
        if bytes(s1b.assignment) != b"A":
            raise AssertionError(f"leader sync gen {gen2}: {s1b.error_code.name}")

        # E2: the follower rejoins a stable group with unchanged metadata.
        j2b = _join(c2, group, m2)
        s2b = _sync(c2, group, j2b.generation_id, m2, {})
        got = bytes(s2b.assignment or b"")
        if j2b.error_code.name == "none" and s2b.error_code.name == "none" and got == b"B":
            out["E2"] = _ok(f"rejoin kept generation {j2b.generation_id} and assignment")
        else:
            out["E2"] = _bad(f"rejoin: {j2b.error_code.name.upper()} generation "
                             f"{j2b.generation_id}; sync: {s2b.error_code.name.upper()} "
                             f"assignment {got!r} (expected b'B')")

        # E5: one LeaveGroup v5 for both members.
        left = c1.request(ApiKey.LEAVE_GROUP, 5, {"group_id": group, "members": [
            {"member_id": m1, "group_instance_id": None, "reason": "brownout E5"},
            {"member_id": m2, "group_instance_id": None, "reason": "brownout E5"}]})
        members = sorted((m.member_id, m.error_code.name) for m in left.members)
        described = c1.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group],
                                             "include_authorized_operations": False})
        state = described.groups[0].group_state
        left_ok = left.error_code.name == "none" and members == sorted(
            [(m1, "none"), (m2, "none")])
        if left_ok and state == "Empty" and not described.groups[0].members:
            out["E5"] = _ok("both members left in one v5 request; group Empty")
        else:
            out["E5"] = _bad(f"LeaveGroup v5: {left.error_code.name.upper()} {members}; "
                             f"group {state}")
    return {k: v for k, v in out.items() if k in wanted}


def same_client_id(bootstrap: str, timeout: float = WAIT_FOR_CLUSTER) -> CheckResult:
    """E1 with two librdkafka consumers sharing client.id."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"brownout-e1-{uuid.uuid4().hex[:6]}"
    group = f"brownout-e1-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(15)
    assignments: list[set[int]] = [set(), set()]
    consumers = []

    def tracker(i: int) -> tuple[Callable[..., None], Callable[..., None]]:
        def on_assign(_c: Any, ps: list[Any]) -> None:
            assignments[i].update(p.partition for p in ps)

        def on_revoke(_c: Any, ps: list[Any]) -> None:
            assignments[i].difference_update(p.partition for p in ps)

        return on_assign, on_revoke

    try:
        for i in range(2):
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "client.id": "same-client", "session.timeout.ms": 6000,
                          "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest",
                          "enable.auto.commit": False})
            on_assign, on_revoke = tracker(i)
            c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
            consumers.append(c)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.05)
            a, b = assignments
            if a and b and not a & b and a | b == {0, 1, 2, 3}:
                break
        a, b = assignments
        description = admin.describe_consumer_groups([group])[group].result(15)
        ids = [m.member_id for m in description.members]
        clients = {m.client_id for m in description.members}
        split = bool(a and b and not a & b and a | b == {0, 1, 2, 3})
        detail = (f"member ids {len(set(ids))} distinct of {len(ids)}, client ids "
                  f"{sorted(clients)}, partitions {sorted(a)} / {sorted(b)}"
                  + ("" if split else f" after {timeout:g}s"))
        if split and len(ids) == 2 and len(set(ids)) == 2:
            return _ok(detail)
        return _bad(detail)
    finally:
        for c in consumers:
            c.close()


def run_group_checks(bootstrap: str, checks: Iterable[str]) -> dict[str, CheckResult]:
    checks = list(checks)
    results: dict[str, CheckResult] = {}
    if "E1" in checks:
        try:
            results["E1"] = same_client_id(bootstrap)
        except Exception as e:
            results["E1"] = _bad(f"crashed: {type(e).__name__}: {e}")
    raw = [c for c in checks if c != "E1"]
    if raw:
        try:
            results.update(raw_checks(bootstrap, raw))
        except Exception as e:
            for c in raw:
                results.setdefault(c, _bad(f"crashed: {type(e).__name__}: {e}"))
    return {c: results[c] for c in checks if c in results}
