"""Observation group A (docs/scenarios.md) on real multi-node KRaft clusters: real node
processes started by the lab (`brownout.cluster.lab.up`), faults through the Supervisor
(kill -9, SIGTERM, restart), real clients (confluent-kafka) and the real `brownout` CLI.

Every cluster runs under the test's tmp_path with the `fast` profile and is SIGKILLed at
the end of its test, whatever happened.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _cluster import (
    BackgroundProducer,
    LabCluster,
    assert_exactly_acked,
    consume_all,
    full_isr,
    isr_summary,
    producer,
    replica_batches,
    send,
    wait_until,
)
from _time_scale import scaled
from conftest import run_brownout

from brownout.cluster.admin import DescribedTopic
from brownout.cluster.topology import PROFILES

pytestmark = [pytest.mark.integration, pytest.mark.long(100)]


TOPIC = "user-events"
PARTITIONS = 8
TOPIC_CONFIGS = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}

APPROVED = "The controller has asked us to exit controlled shutdown"

# librdkafka / Kafka error codes
NOT_ENOUGH_REPLICAS = 19
REQUEST_TIMED_OUT = 7
TIMEOUT_CODES = {REQUEST_TIMED_OUT, -185}  # and librdkafka's local _TIMED_OUT

# The lab's fast profile, which every cluster here runs: the bounds below are derived from
# it (and scaled, as every bound is, by the suite's time scale).
def _fast_s(key: str) -> float:
    return float(str(PROFILES["fast"][key])) / 1000


SESSION_S = _fast_s("broker.session.timeout.ms")
QUORUM_FETCH_S = _fast_s("controller.quorum.fetch.timeout.ms")
ELECTION_S = _fast_s("controller.quorum.election.timeout.ms")
# A killed broker's session expires, the controller fences it and drops it from every
# ISR, and the brokers replay that: the session timeout and a few seconds.
FENCED_BOUND_S = SESSION_S + 7
# Observers notice the leader is gone after a fetch timeout; a voter is elected within
# one or two (randomised) election timeouts: a few seconds in all.
ELECTED_BOUND_S = QUORUM_FETCH_S + 2 * ELECTION_S + 3

# Producers that must never lose or duplicate anything.
SAFE = {"enable_idempotence": True, "message_timeout_ms": 60000}
# Producers whose first error must be reported as it is. Their message timeout is
# patience, not behaviour: a broker answers one request per connection at a time (as
# Kafka does), so the produce requests A6 queues on one connection each wait out the 3 s
# request timeout in turn, and a local timeout would then stand in for the broker's.
NO_RETRY = {"enable_idempotence": False, "retries": 0,
            "message_timeout_ms": int(scaled(10) * 1000)}


def cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return run_brownout(*args, timeout=timeout)


def leaders(d: DescribedTopic) -> dict[int, int | None]:
    return {p.partition: p.leader for p in d.partitions}


def preferred(d: DescribedTopic) -> dict[int, int]:
    return {p.partition: p.replicas[0] for p in d.partitions}


def lacks(gone: set[int]) -> Callable[[DescribedTopic], bool]:
    """Check: no partition has a node of `gone` in its ISR or as leader, and every
    partition has a leader."""

    def check(d: DescribedTopic) -> bool:
        return all(
            p.leader is not None and p.leader not in gone and not gone & set(p.isr)
            for p in d.partitions
        )

    return check


def whole(d: DescribedTopic) -> bool:
    return full_isr(d, 3)


def preferred_lead(d: DescribedTopic) -> bool:
    return leaders(d) == preferred(d)


class Sampler:
    """Describes a topic every ~200 ms from a thread, keeping every sample."""

    def __init__(self, c: LabCluster, topic: str, interval: float = 0.2) -> None:
        self.c = c
        self.topic = topic
        self.interval = interval
        self.samples: list[tuple[float, DescribedTopic]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic(), self.c.describe(self.topic)))
            except Exception as e:
                self.errors.append(repr(e))
            self._stop.wait(self.interval)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)


def assert_same_replica_logs(
    c: LabCluster, topic: str, end_offsets: dict[int, int], scratch: Path, timeout: float = 15
) -> None:
    """Every replica of every partition holds the same batches (offsets and CRCs) up to
    the high watermark (= the end offset a consumer sees)."""
    d = c.describe(topic)
    for p in d.partitions:
        hw = end_offsets[p.partition]

        def replicas_agree(p=p, hw=hw):  # type: ignore[no-untyped-def]
            logs = {
                r: replica_batches(c.data_dir(r), topic, p.partition, scratch) for r in p.replicas
            }
            if any(leo < hw for _, leo in logs.values()):
                return None  # a follower has not fetched everything yet
            return {r: [b for b in batches if b[1] < hw] for r, (batches, _) in logs.items()}

        logs = wait_until(replicas_agree, timeout, f"p{p.partition}: every replica up to {hw}")
        reference = logs[p.replicas[0]]
        assert reference, f"p{p.partition}: no batches below {hw}"
        assert reference[-1][1] == hw - 1, f"p{p.partition}: last batch {reference[-1]}, hw {hw}"
        for replica, batches in logs.items():
            assert batches == reference, (
                f"p{p.partition}: replica {replica} differs from replica {p.replicas[0]}:\n"
                f"{batches[:3]}...\n{reference[:3]}..."
            )


# -- A1-A4: 3 brokers + 1 dedicated controller ------------------------------------------------


@pytest.mark.timeout(180)
def test_a1_to_a4_broker_failures_and_recovery(tmp_path: Path):
    lab_dir = tmp_path / "lab"
    with LabCluster(
        lab_dir,
        brokers=3,
        controllers=1,
        controller_set={"leader.imbalance.check.interval.seconds": 2},
    ) as c:
        c.create_topic(TOPIC, PARTITIONS, 3, TOPIC_CONFIGS)

        # A1: all up. Describe (the CLI, as an operator would) shows the overrides and
        # a full ISR; every leader is the preferred replica; acks=all writes succeed.
        out = cli("topics", "describe", TOPIC, "--dir", str(lab_dir)).stdout.splitlines()
        header, *lines = out
        assert header.split("\t")[2:] == [
            f"PartitionCount: {PARTITIONS}",
            "ReplicationFactor: 3",
            "Configs: min.insync.replicas=2,unclean.leader.election.enable=false",
        ]
        assert len(lines) == PARTITIONS
        d = c.describe_with_configs(TOPIC)
        assert d.configs == TOPIC_CONFIGS
        for p in d.partitions:
            assert set(p.isr) == {1, 2, 3}, isr_summary(d)
            assert sorted(p.replicas) == [1, 2, 3]
            assert p.leader == p.replicas[0], isr_summary(d)
            assert f"Isr: {','.join(map(str, p.isr))}\t" in lines[p.partition]
        first = send(c.bootstrap, TOPIC, range(PARTITIONS), 5, **SAFE)
        assert not first.errors, first.errors[:3]
        assert len(first.acked) == 5 * PARTITIONS
        acked = list(first.acked)

        # A2: kill -9 broker 1 under a steady acks=all idempotent producer.
        with BackgroundProducer(c.bootstrap, TOPIC, PARTITIONS, prefix="a2", **SAFE) as bg:
            wait_until(lambda: bg.acked_count() >= 4 * PARTITIONS, 15, "producer under way")
            c.kill(1)
            d = c.wait_everywhere(
                TOPIC, lacks({1}), FENCED_BOUND_S, "broker 1 gone from every ISR and leader"
            )
            assert all(set(p.isr) == set(p.replicas) - {1} for p in d.partitions), isr_summary(d)
            at_shrink = bg.acked_count()
            wait_until(
                lambda: bg.acked_count() >= at_shrink + 10 * PARTITIONS,
                20,
                "acks=all writes carry on after the failover",
            )
            sent = bg.stop()
        assert not sent.errors, f"delivery errors: {sent.errors[:5]}"
        acked += sent.acked
        end = c.end_offsets(TOPIC)
        assert_exactly_acked(consume_all(c.bootstrap, TOPIC, end), acked)

        # A3: kill -9 broker 2 as well. Once the ISR is down to broker 3 alone, acks=all
        # fails with NOT_ENOUGH_REPLICAS; acks=1 keeps writing to the survivor.
        c.kill(2)
        d = c.wait_everywhere(
            TOPIC, lacks({1, 2}), FENCED_BOUND_S, "only broker 3 left in every ISR"
        )
        assert all(p.isr == (3,) and p.leader == 3 for p in d.partitions), isr_summary(d)
        refused = send(c.bootstrap, TOPIC, range(PARTITIONS), 1, acks="all", **NO_RETRY)
        assert not refused.acked, refused.acked
        assert refused.error_codes() == {p: {NOT_ENOUGH_REPLICAS} for p in range(PARTITIONS)}, [
            (p, e.name()) for p, e, _ in refused.errors
        ]
        single = send(c.bootstrap, TOPIC, range(PARTITIONS), 3, acks="1", enable_idempotence=False)
        assert not single.errors, single.errors[:3]
        assert len(single.acked) == 3 * PARTITIONS
        acked += single.acked

        # A4: both brokers return. They catch up and rejoin every ISR (within seconds: the
        # waits' bounds) and never lead a partition whose ISR they are not in; with
        # auto.leader.rebalance (default true, check every 2 s) the preferred replicas
        # lead again.
        with Sampler(c, TOPIC) as sampler:
            restarted_at = time.monotonic()
            c.start(1, wait=False)
            c.start(2, wait=False)
            c.wait_ready([1, 2], timeout=30)
            wait_until(lambda: whole(c.describe(TOPIC)), 20, "every ISR back to 3 members")
            c.wait_everywhere(TOPIC, whole, 10, "every broker sees every ISR whole")
            c.wait_everywhere(
                TOPIC, preferred_lead, 15, "leadership back on the preferred replicas"
            )
        assert len(sampler.samples) >= 3, (len(sampler.samples), sampler.errors[:3])
        for at, sample in sampler.samples:
            for p in sample.partitions:
                assert p.leader is not None and p.leader in p.isr, (
                    f"{at - restarted_at:.1f}s after restart: p{p.partition} led by "
                    f"{p.leader} with ISR {p.isr}\n{isr_summary(sample)}"
                )

        # Log-end offsets (`brownout offsets`) agree with what a consumer reads, which is
        # exactly what was acknowledged; the three replicas' logs are identical.
        listed = cli("offsets", TOPIC, "--dir", str(lab_dir)).stdout.splitlines()
        end = {int(line.split(":")[1]): int(line.split(":")[2]) for line in listed}
        assert len(end) == PARTITIONS
        consumed = consume_all(c.bootstrap, TOPIC, end)
        assert_exactly_acked(consumed, acked)
        for p, messages in consumed.items():
            assert [o for o, _ in messages] == list(range(end[p])), f"p{p}: offsets not 0..{end[p]}"
        assert_same_replica_logs(c, TOPIC, end, tmp_path / "scratch")


@pytest.mark.timeout(90)
def test_a4_no_leader_rebalance_when_disabled(tmp_path: Path):
    """auto.leader.rebalance.enable=false: a returning preferred replica rejoins the ISR
    but does not get its leaderships back, however many check intervals pass."""
    interval = 2
    with LabCluster(
        tmp_path / "lab",
        brokers=3,
        controllers=1,
        controller_set={
            "auto.leader.rebalance.enable": "false",
            "leader.imbalance.check.interval.seconds": interval,
        },
    ) as c:
        topic = "no-rebalance"
        c.create_topic(topic, 3, 3, {"min.insync.replicas": "2"})
        d = c.describe(topic)
        assert leaders(d) == preferred(d)
        owned = [p for p, r in preferred(d).items() if r == 1]
        assert owned
        c.kill(1)
        c.wait_everywhere(topic, lacks({1}), 12, "broker 1 gone from every ISR")
        c.start(1)
        c.wait_everywhere(topic, whole, 20, "broker 1 back in every ISR")
        watch_until = time.monotonic() + 3 * interval
        while time.monotonic() < watch_until:
            d = c.describe(topic)
            assert all(d_leader != 1 for p, d_leader in leaders(d).items() if p in owned), (
                isr_summary(d)
            )
            time.sleep(0.25)
        assert full_isr(d, 3)


# -- A5-A7: the only controller is gone ----------------------------------------------------


@pytest.mark.timeout(150)
def test_a5_to_a7_controller_down(tmp_path: Path):
    controller = 3001
    with LabCluster(tmp_path / "lab", brokers=3, controllers=1) as c:
        c.create_topic(TOPIC, PARTITIONS, 3, TOPIC_CONFIGS)
        before = c.describe(TOPIC)

        # A5: controller killed. Existing leaders keep taking acks=all writes, from a
        # producer that got its producer id before and from a new plain one, and a
        # consumer keeps reading; creating a topic fails with a timeout.
        idempotent = producer(c.bootstrap, **SAFE)
        early = send(c.bootstrap, TOPIC, range(PARTITIONS), 2, client=idempotent)
        assert not early.errors, early.errors[:3]
        # a consumer already reading (it also makes the brokers create __consumer_offsets:
        # see test_find_coordinator_without_controller for a consumer's first start)
        consume_all(c.bootstrap, TOPIC, {p: 2 for p in range(PARTITIONS)})
        c.kill(controller)
        killed_at = time.monotonic()
        # Writes go on, one round after another, for longer than a broker session: the
        # brokers' heartbeats fail all along and nothing fences them, as in Kafka.
        rounds = []
        while not rounds or time.monotonic() - killed_at < SESSION_S + 1:
            rounds.append(send(c.bootstrap, TOPIC, range(PARTITIONS), 1, client=idempotent))
            time.sleep(0.2)  # pace: a round every ~0.2 s is plenty
        plain = send(c.bootstrap, TOPIC, range(PARTITIONS), 2, enable_idempotence=False)
        ok = [m for r in rounds for m in r.acked]
        errors = [e for r in [*rounds, plain] for e in r.errors]
        assert not errors, errors[:3]
        acked = early.acked + ok + plain.acked
        end = {p: 2 + len(rounds) + 2 for p in range(PARTITIONS)}
        assert_exactly_acked(consume_all(c.bootstrap, TOPIC, end), acked)
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic

        admin = c.admin()
        futures = admin.client.create_topics(
            [NewTopic("needs-controller", 1, 3)], operation_timeout=3, request_timeout=3
        )
        with pytest.raises(KafkaException) as failed:  # not a hang: the request's 3 s
            futures["needs-controller"].result(timeout=scaled(20))
        error = failed.value.args[0]
        assert error.code() in TIMEOUT_CODES, error

        # A6: kill -9 broker 3 with no controller: nobody can shrink the ISRs, so acks=all
        # writes to partitions whose surviving leader waits for broker 3 time out on the
        # broker (REQUEST_TIMED_OUT after the request's 3 s). (Writes to the partitions
        # broker 3 led go nowhere: they could only time out in the client.)
        c.kill(3)
        live_led = [p for p, leader in leaders(before).items() if leader != 3]
        assert live_led
        stuck = send(
            c.bootstrap,
            TOPIC,
            live_led,
            1,
            acks="all",
            request_timeout_ms=3000,
            flush_timeout=40,
            **NO_RETRY,
        )
        assert not stuck.acked, f"acks=all write succeeded without broker 3: {stuck.acked}"
        codes = stuck.error_codes()
        for p in live_led:
            assert codes.get(p) == {REQUEST_TIMED_OUT}, (
                p,
                [(q, e.name()) for q, e, _ in stuck.errors],
            )
        d = c.describe(TOPIC)
        assert all(set(p.isr) == {1, 2, 3} for p in d.partitions), isr_summary(d)

        # A6: SIGTERM broker 2: it waits for the controller to approve controlled
        # shutdown, and so does not exit.
        # A negative check, so time must pass: twice the broker's session timeout and
        # more, far beyond every timeout of its own (heartbeat request 1.5 s, session 3 s)
        # that could wrongly end the wait; Kafka's broker waits up to 5 minutes.
        mark = c.log_size(2)
        c.sigterm(2)
        wait_until(lambda: "Beginning controlled shutdown" in c.log_since(2, mark), 10,
                   "broker 2 asks for a controlled shutdown")
        time.sleep(2 * SESSION_S + 2)
        assert c.running(2), f"broker 2 exited without a controller:\n{c.log_tail(2)}"

        # A7: the controller returns: broker 2 finishes shutting down; with every broker
        # back, writes and reads resume.
        c.start(controller)
        wait_until(lambda: not c.running(2), 15, "broker 2 exits once the controller is back")
        # ... because the controller approved, not because its wait ran out
        assert APPROVED in c.log_since(2, mark), c.log_tail(2)
        c.start(2, wait=False)
        c.start(3, wait=False)
        c.wait_ready([2, 3], timeout=30)
        c.wait_everywhere(TOPIC, whole, 20, "every ISR back to 3 members")
        resumed = send(c.bootstrap, TOPIC, range(PARTITIONS), 5, **SAFE)
        assert not resumed.errors, resumed.errors[:3]
        acked += resumed.acked
        end = c.end_offsets(TOPIC)
        # The timed-out writes were appended by their leaders and may be committed now
        # that the ISR is whole again (Kafka's REQUEST_TIMED_OUT promises nothing).
        assert_exactly_acked(consume_all(c.bootstrap, TOPIC, end), acked, stuck.errors)


# -- a quorum of three controllers -----------------------------------------------------------


@pytest.mark.timeout(120)
def test_controller_quorum_leader_failover(tmp_path: Path):
    with LabCluster(tmp_path / "lab", brokers=3, controllers=3) as c:
        assert len(c.controller_ids) == 3
        topic = "quorum-events"
        c.create_topic(topic, 4, 3, TOPIC_CONFIGS)
        quorum = wait_until(
            lambda: (q := c.quorum()) and isinstance(q["leader"], int) and q["leader"] >= 0 and q,
            10,
            "a quorum leader",
        )
        old_leader, old_epoch = quorum["leader"], quorum["epoch"]
        assert old_leader in c.controller_ids
        assert sorted(quorum["voters"]) == sorted(c.controller_ids)

        with BackgroundProducer(c.bootstrap, topic, 4, prefix="q", **SAFE) as bg:
            wait_until(lambda: bg.acked_count() >= 20, 15, "producer under way")
            c.kill(old_leader)
            quorum = wait_until(
                lambda: (
                    (q := c.quorum())
                    and isinstance(q["leader"], int)
                    and q["leader"] not in (-1, old_leader)
                    and q
                ),
                ELECTED_BOUND_S,
                "a new quorum leader",
            )
            assert quorum["epoch"] > old_epoch, quorum
            assert quorum["leader"] in c.controller_ids

            # Every broker (an observer of the quorum) must find the new leader: one that
            # does not cannot heartbeat, gets fenced and keeps stale metadata.
            try:
                wait_until(lambda: brokers_follow_quorum_leader(c), 10, "every broker follows it")
            except AssertionError as e:
                views = {b: c.quorum_leader_seen_by(b) for b in c.broker_ids}
                raise AssertionError(
                    f"{e}: brokers' last quorum views {views}; quorum now {c.quorum()}"
                ) from None
            wait_until(
                lambda: lab_status(c)["registered_brokers"] == [1, 2, 3],
                10,
                "every broker registered and unfenced",
            )
            c.create_topic("after-failover", 2, 3, timeout=10)
            at = bg.acked_count()
            wait_until(lambda: bg.acked_count() >= at + 40, 20, "writes go on")
            sent = bg.stop()
        assert not sent.errors, sent.errors[:5]
        end = c.end_offsets(topic)
        assert_exactly_acked(consume_all(c.bootstrap, topic, end), sent.acked)
        more = send(c.bootstrap, "after-failover", range(2), 5, **SAFE)
        assert not more.errors and len(more.acked) == 10


def brokers_follow_quorum_leader(c: LabCluster) -> bool:
    leader = c.quorum()["leader"]
    return isinstance(leader, int) and all(
        (c.quorum_leader_seen_by(b) or (None, -1))[0] == leader for b in c.broker_ids
    )


def lab_status(c: LabCluster) -> dict:
    from brownout.cluster import lab

    return lab.status(c.directory, timeout=2.0)


# -- combined mode ---------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_combined_mode_node_failure(tmp_path: Path):
    """Three nodes, each broker and controller: A1 and A2 when a whole node (the quorum
    leader, so the metadata quorum fails over too) is killed and comes back."""
    with LabCluster(tmp_path / "lab", brokers=3, combined=True) as c:
        assert c.broker_ids == c.controller_ids == [1, 2, 3]
        c.create_topic(TOPIC, PARTITIONS, 3, TOPIC_CONFIGS)
        d = c.describe_with_configs(TOPIC)
        assert d.configs == TOPIC_CONFIGS
        assert all(set(p.isr) == {1, 2, 3} for p in d.partitions), isr_summary(d)
        quorum = wait_until(
            lambda: (q := c.quorum()) and isinstance(q["leader"], int) and q["leader"] > 0 and q,
            10,
            "a quorum leader",
        )
        victim = quorum["leader"]

        with BackgroundProducer(c.bootstrap, TOPIC, PARTITIONS, prefix="c", **SAFE) as bg:
            wait_until(lambda: bg.acked_count() >= 4 * PARTITIONS, 15, "producer under way")
            c.kill(victim)
            d = c.wait_everywhere(TOPIC, lacks({victim}), 15, f"node {victim} gone from every ISR")
            at = bg.acked_count()
            wait_until(lambda: bg.acked_count() >= at + 10 * PARTITIONS, 20, "writes go on")
            c.start(victim)
            c.wait_everywhere(TOPIC, whole, 20, f"node {victim} back in every ISR")
            at = bg.acked_count()
            wait_until(lambda: bg.acked_count() >= at + 5 * PARTITIONS, 20, "writes go on")
            sent = bg.stop()
        assert not sent.errors, sent.errors[:5]
        end = c.end_offsets(TOPIC)
        assert_exactly_acked(consume_all(c.bootstrap, TOPIC, end), sent.acked)
        assert_same_replica_logs(c, TOPIC, end, tmp_path / "scratch")


# -- follower truncation at the log end (regression) ----------------------------------------


@pytest.mark.timeout(30)
def test_truncate_to_log_end_forgets_newer_epochs(tmp_path: Path):
    """A follower whose log ends with an epoch it led without appending (it was elected,
    then the preferred-leader rebalance moved leadership back before any write) must
    forget that epoch when told to truncate at its log end; otherwise it fetches with the
    same last_fetched_epoch forever, is never counted as caught up and drops out of the
    ISR (seen in A7 before 5f99a48; Kafka's UnifiedLog.truncateTo does the same). The
    cluster run depends on timing, so the deterministic storage step is checked here."""
    from brownout.protocol.records import build_batch
    from brownout.storage import Log, LogConfig

    log = Log.create(tmp_path / "user-events-3", LogConfig())
    try:
        batch = build_batch([(None, b"v%d" % i) for i in range(8)], timestamp_ms=1_700_000_000_000)
        log.append_as_leader(batch, 0, now_ms=1_700_000_000_000)
        assert log.log_end_offset == 8
        # This broker led epoch 2 from offset 8 without appending, then became a follower
        # of a leader whose log has epochs 0 and 3: the leader answers "diverging at
        # (epoch 0, end offset 8)" and the fetcher truncates to 8.
        log.assign_epoch_start_offset(2, 8)
        assert log.end_offset_for_epoch(0) == (0, 8)
        log.truncate_to(8)
        assert log.log_end_offset == 8
        assert log.latest_epoch == 0, log.leader_epoch_entries
    finally:
        log.close()


# -- a broker whose controller is gone answers at once, with retriable errors -----------


@pytest.fixture(scope="module")
def headless(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """1 broker + 1 controller, the controller killed before anything created
    __consumer_offsets or handed out producer ids."""
    with LabCluster(tmp_path_factory.mktemp("headless") / "lab", brokers=1, controllers=1) as c:
        c.kill(3001)
        yield c


def _raw_request(bootstrap: str, api_key: int, version: int, data: dict, wait: float) -> object:
    from brownout.cluster.wire import WireClient

    with WireClient(bootstrap, wait) as raw:
        return raw.request(api_key, version, data)


@pytest.mark.timeout(60)
def test_init_producer_id_without_controller(headless: LabCluster):
    from kio.schema.errors import ErrorCode

    from brownout.protocol.apis import ApiKey

    data = {
        "transactional_id": None,
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    response = _raw_request(headless.bootstrap, ApiKey.INIT_PRODUCER_ID, 4, data, wait=5)
    assert response.error_code == ErrorCode.coordinator_load_in_progress  # type: ignore[attr-defined]


@pytest.mark.timeout(60)
def test_find_coordinator_without_controller(headless: LabCluster):
    from kio.schema.errors import ErrorCode

    from brownout.protocol.apis import ApiKey

    data = {"key": "some-group", "key_type": 0, "coordinator_keys": ["some-group"]}
    response = _raw_request(headless.bootstrap, ApiKey.FIND_COORDINATOR, 4, data, wait=5)
    [entry] = response.coordinators  # type: ignore[attr-defined]
    assert entry.error_code == ErrorCode.coordinator_not_available
