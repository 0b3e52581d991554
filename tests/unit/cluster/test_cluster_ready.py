"""When a started cluster counts as ready: every broker's Metadata lists every broker
and names a controller. A ZooKeeper-mode broker the controller has not sent
UpdateMetadata to yet answers with neither."""

from brownout.cluster.supervisor import metadata_problem
from brownout.cluster.wire import BrokerInfo, ClusterMetadata


def answer(broker_ids: list[int], controller_id: int) -> ClusterMetadata:
    return ClusterMetadata("c", controller_id, tuple(
        BrokerInfo(i, "127.0.0.1", 9000 + i) for i in broker_ids))


def test_every_broker_and_a_controller_is_ready():
    assert metadata_problem(answer([3, 1, 2], 3), [1, 2, 3]) is None


def test_a_broker_before_its_first_update_metadata_is_not():
    assert metadata_problem(answer([], -1), [1, 2, 3]) == "brokers none, controller -1"


def test_a_missing_broker_or_controller_is_not():
    assert metadata_problem(answer([1, 2], 3), [1, 2, 3]) == "brokers [1, 2], controller 3"
    assert metadata_problem(answer([1, 2, 3], -1), [1, 2, 3]) == (
        "brokers [1, 2, 3], controller -1")
