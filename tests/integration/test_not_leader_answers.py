"""What Brownout's node answers at a follower of a partition, as Apache Kafka answers
(test_kafka_engine asks Kafka the same with the same helper): a consumer's Fetch v11+ is
served there (KIP-392); a follower's Fetch v16+ and a Produce v10+ are refused
NOT_LEADER_OR_FOLLOWER with the current leader, its epoch and its endpoint (KIP-951). A
broker that hosts no replica of a partition its metadata has refuses it
NOT_LEADER_OR_FOLLOWER too, where a partition it does not know is unknown.

Kafka's Java clients use the endpoint to move to the new leader at once; a consumer that
knew only a broker in controlled shutdown thereby learns the other one before the first
closes its connections, instead of falling back to its bootstrap servers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _cluster import LabCluster, assert_not_hosted_answers, assert_not_leader_answers

pytestmark = pytest.mark.integration


def test_a_follower_serves_consumers_and_names_the_leader_to_the_rest(tmp_path: Path):
    with LabCluster(tmp_path / "lab", brokers=2, controllers=1) as cluster:
        cluster.create_topic("hinted", 2, replication_factor=2)
        assert_not_leader_answers(cluster, "hinted", 0)
        assert_not_leader_answers(cluster, "hinted", 1)
        cluster.create_topic("lonely", 1, replication_factor=1)
        assert_not_hosted_answers(cluster, "lonely")
