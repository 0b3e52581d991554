"""ZooKeeper-mode brokers (KafkaServer) as real processes against a real ensemble of
three ZooKeeper servers, judged by real clients and by the znodes a ZooKeeper shell shows.

One cluster serves the whole story, because each step starts where the last one left
it: a topic created through the controller, written in Kafka's layout, produced to and
consumed; a SIGTERM'd broker gives its leaderships away at once (controlled shutdown);
a kill -9'd one keeps them until its ZooKeeper session expires; both come back,
register again and rejoin every ISR. Sessions are 6 s here (the lab's fast profile).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from _cluster import LabCluster, assert_not_hosted_answers, wait_until
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from brownout.cluster.admin import DescribedTopic
from brownout.cluster.supervisor import SupervisorError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

SESSION_S = 6.0
TOPIC = "orders"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabCluster]:
    with LabCluster(tmp_path_factory.mktemp("zk-server") / "lab", zookeeper=True) as c:
        yield c


@pytest.fixture(scope="module")
def zk(cluster: LabCluster) -> Iterator[KazooClient]:
    client = KazooClient(hosts=cluster.topology.zookeeper_connect, timeout=10.0)
    client.start(timeout=10.0)
    yield client
    client.stop()
    client.close()


def _znode(zk: KazooClient, path: str) -> dict:
    data, _stat = zk.get(path)
    return json.loads(data)


def _leaders(view: DescribedTopic) -> dict[int, int | None]:
    return {p.partition: p.leader for p in view.partitions}


def test_clients_create_produce_and_consume_through_the_controller(
    cluster: LabCluster, zk: KazooClient
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "2"})],
                                  request_timeout=30)
    futures[TOPIC].result(30)

    # What a ZooKeeper shell shows: Kafka 3.9's layout and JSON.
    assignment = _znode(zk, f"/brokers/topics/{TOPIC}")
    assert sorted(assignment["partitions"]) == ["0", "1", "2"]
    assert all(sorted(r) == [1, 2, 3] for r in assignment["partitions"].values())
    assert len(assignment["topic_id"]) == 22
    assert _znode(zk, f"/config/topics/{TOPIC}")["config"] == {"min.insync.replicas": "2"}
    state = _znode(zk, f"/brokers/topics/{TOPIC}/partitions/0/state")
    assert state["leader"] in (1, 2, 3) and sorted(state["isr"]) == [1, 2, 3]
    assert state["controller_epoch"] == int(zk.get("/controller_epoch")[0]) == 1
    assert _znode(zk, "/controller")["brokerid"] in (1, 2, 3)
    assert sorted(zk.get_children("/brokers/ids")) == ["1", "2", "3"]

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True})
    acked: list[bool] = []
    for i in range(300):
        producer.produce(TOPIC, str(i).encode(), on_delivery=lambda e, m: acked.append(e is None))
    assert producer.flush(30) == 0
    assert acked.count(True) == 300

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "readers",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 60
    while len(seen) < 300 and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            seen.add(message.value())
    consumer.close()
    assert len(seen) == 300


def test_a_broker_without_a_replica_refuses_not_leader_or_follower(cluster: LabCluster) -> None:
    # Kafka 3.9's ReplicaManager answers so in both modes (test_kafka_engine asks Kafka).
    cluster.create_topic("lonely", 1, replication_factor=1)
    assert_not_hosted_answers(cluster, "lonely")


def test_sigterm_moves_leaderships_at_once_kill_only_after_the_session(
    cluster: LabCluster, zk: KazooClient
) -> None:
    view = cluster.wait_everywhere(
        TOPIC, lambda v: all(len(p.isr) == 3 for p in v.partitions), 30, "full ISRs")
    controller = _znode(zk, "/controller")["brokerid"]
    leaders = _leaders(view)
    # SIGTERM a broker that leads something and is not the controller.
    stopped = next(b for b in set(leaders.values()) if b != controller)
    moved_away = [p for p, b in leaders.items() if b == stopped]
    cluster.sigterm(stopped)
    wait_until(lambda: not cluster.running(stopped), 30, f"broker {stopped} to exit")
    # At once, by the controlled shutdown, not once a session expired: the controller
    # wrote the new leaders to ZooKeeper before it let the broker go.
    states = {p: _znode(zk, f"/brokers/topics/{TOPIC}/partitions/{p}/state") for p in moved_away}
    assert all(state["leader"] not in (stopped, -1) for state in states.values()), states
    cluster.wait_everywhere(
        TOPIC, lambda v: all(_leaders(v)[p] not in (stopped, None) for p in moved_away),
        SESSION_S / 2, "every broker sees the leaders moved by the controlled shutdown")
    log = cluster.log_path(stopped).read_text()
    assert "Controlled shutdown request returned successfully" in log
    assert cluster.supervisor.state.nodes[stopped].pid is not None

    # kill -9 the controller: its registration and /controller stay until the
    # session expires, and so do its leaderships.
    victim = controller
    led = [p for p, b in _leaders(cluster.describe(TOPIC)).items() if b == victim]
    start = time.monotonic()
    cluster.kill(victim)
    # Still there once the process is gone (a kill closes no session); how long they
    # stay is judged below, by when /controller moves.
    assert _znode(zk, "/controller")["brokerid"] == victim
    assert str(victim) in zk.get_children("/brokers/ids")

    def new_controller() -> int | None:
        try:
            holder = _znode(zk, "/controller")["brokerid"]
        except Exception:
            return None
        return holder if holder != victim else None

    successor = wait_until(new_controller, SESSION_S + 15, "a new controller")
    elapsed = time.monotonic() - start
    assert successor not in (victim, stopped)
    # ZooKeeper expires a session no sooner than two thirds of its timeout after the
    # client's last heartbeat.
    assert elapsed > SESSION_S * 2 / 3 - 1, f"/controller moved after {elapsed:.1f}s"
    if led:
        cluster.wait_everywhere(
            TOPIC, lambda v: all(_leaders(v)[p] == successor for p in led), 20,
            f"the partitions of broker {victim} led by the last broker")


def test_stopped_brokers_register_again_and_rejoin_every_isr(
    cluster: LabCluster, zk: KazooClient
) -> None:
    down = [b for b in cluster.broker_ids if not cluster.running(b)]
    assert len(down) == 2
    for broker in down:
        cluster.start(broker)
    assert sorted(zk.get_children("/brokers/ids")) == ["1", "2", "3"]
    cluster.wait_everywhere(
        TOPIC, lambda v: all(sorted(p.isr) == [1, 2, 3] for p in v.partitions), 60,
        "every ISR back to three brokers")

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True})
    errors: list[object] = []
    for i in range(50):
        producer.produce(TOPIC, f"after-{i}".encode(),
                         on_delivery=lambda e, m: errors.append(e) if e else None)
    assert producer.flush(30) == 0 and errors == []


def test_a_broker_cannot_register_an_id_another_live_session_holds(
    cluster: LabCluster, zk: KazooClient
) -> None:
    """Kafka 3.9 too: a killed broker's /brokers/ids/<id> stays until ZooKeeper expires
    its session, and a new process for that id fails its start-up with NodeExists while
    another session holds the znode. Restarting within the dead session's 6 s is a race
    on a loaded machine (the start alone can take longer), so the test holds the id from
    a session of its own instead: the broker's refusal is the same."""
    broker = cluster.broker_ids[0]
    path = f"/brokers/ids/{broker}"
    registration, _ = zk.get(path)  # what the controller expects to read there
    cluster.kill(broker)
    wait_until(lambda: not zk.exists(path), SESSION_S + 15,
               f"the session of the killed broker {broker} to expire")
    zk.create(path, registration, ephemeral=True)
    try:
        with pytest.raises(SupervisorError):
            cluster.start(broker, timeout=30)
        assert "is registered in ZooKeeper by another live broker" in cluster.log_tail(broker, 5)
    finally:
        zk.delete(path)
    cluster.start(broker)
    assert str(broker) in zk.get_children("/brokers/ids")
    assert zk.get(path)[1].ephemeralOwner != zk.client_id[0]


def test_a_broker_refuses_to_start_on_another_clusters_log_dir(
    cluster: LabCluster, zk: KazooClient
) -> None:
    broker = cluster.broker_ids[1]
    meta = cluster.data_dir(broker) / "meta.properties"
    original = meta.read_text()
    try:
        cluster.sigterm(broker)  # a clean stop closes the session: no wait for expiry
        wait_until(lambda: not cluster.running(broker), 30, f"broker {broker} to exit")
        meta.write_text(original.replace("cluster.id=", "cluster.id=another-"))
        with pytest.raises(SupervisorError):
            cluster.start(broker, timeout=30)
        assert "The broker is trying to join the wrong cluster" in cluster.log_tail(broker, 5)
    finally:
        meta.write_text(original)
    cluster.start(broker)
    assert str(broker) in zk.get_children("/brokers/ids")
