import datetime

from brownout.protocol.apis import response_class
from brownout.protocol.build import build, millis

PARTITION = {
    "error_code": 0,
    "partition_index": 3,
    "leader_id": 1,
    "leader_epoch": 4,
    "replica_nodes": [1, 2],
    "isr_nodes": [1],
    "offline_replicas": [2],
}
TOPIC = {"error_code": 0, "name": "t", "topic_id": None, "is_internal": False,
         "partitions": [PARTITION]}


def test_fields_missing_from_an_old_version_are_dropped():
    v0 = build(response_class(3, 0), {"brokers": [], "topics": [TOPIC], "cluster_id": "x"})
    p = v0.topics[0].partitions[0]
    assert (p.partition_index, p.leader_id, p.replica_nodes) == (3, 1, (1, 2))
    assert not hasattr(p, "leader_epoch")


def test_new_version_keeps_every_field_and_converts_milliseconds():
    v12 = build(response_class(3, 12), {"throttle_time": 250, "brokers": [], "topics": [TOPIC],
                                        "cluster_id": "x", "controller_id": 1})
    assert v12.throttle_time == datetime.timedelta(milliseconds=250)
    assert v12.topics[0].partitions[0].leader_epoch == 4
    assert v12.topics[0].partitions[0].offline_replicas == (2,)


def test_millis_accepts_timedelta_and_int():
    assert millis(datetime.timedelta(seconds=1.5)) == 1500
    assert millis(30) == 30
