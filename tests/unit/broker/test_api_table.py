"""What a broker advertises (api_table), built by its server from the API groups it
has: KafkaApis' own, the group coordinator's, a ZooKeeper-mode broker's for its
controller; and KafkaApis refusing a table that names an API nobody handles."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from brownout.broker.apis import NOT_ON_ZK_BROKERS, ApiGroup, Handler, api_table
from brownout.broker.group_apis import GROUP_APIS
from brownout.protocol.apis import BROKER_APIS, ApiKey
from brownout.zkmode.zk_apis import BROKER_TO_CONTROLLER, CONTROLLER_TO_BROKER


class Group:
    def __init__(self, supported: Mapping[ApiKey, tuple[int, int]]) -> None:
        self.supported = supported

    def handlers(self) -> dict[int, Handler]:
        async def handle(request: Any, ctx: Any) -> Any:
            return None

        return {key: handle for key in self.supported}


GROUPS: ApiGroup = Group(GROUP_APIS)
CONTROLLER_REQUESTS: ApiGroup = Group({**CONTROLLER_TO_BROKER, **BROKER_TO_CONTROLLER})


def test_a_kraft_broker_advertises_kafkas_table_with_its_groups() -> None:
    assert api_table([GROUPS], zookeeper_mode=False, api_versions="3.9") == BROKER_APIS
    without_groups = api_table([], zookeeper_mode=False, api_versions="3.9")
    assert set(without_groups) == set(BROKER_APIS) - set(GROUP_APIS)


def test_a_zookeeper_mode_broker_lacks_the_kraft_apis_and_answers_its_controller() -> None:
    table = api_table([GROUPS, CONTROLLER_REQUESTS], zookeeper_mode=True, api_versions="3.9")
    assert not set(table) & set(NOT_ON_ZK_BROKERS)
    assert ApiKey.DESCRIBE_QUORUM in BROKER_APIS and ApiKey.DESCRIBE_QUORUM not in table
    for key in (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.CONTROLLED_SHUTDOWN):
        assert key in table
    assert table[ApiKey.FETCH] == BROKER_APIS[ApiKey.FETCH]


def test_the_version_set_applies_to_every_group() -> None:
    table = api_table([GROUPS], zookeeper_mode=False, api_versions="4.0")
    assert table[ApiKey.JOIN_GROUP][0] == 2  # KIP-896 removed JoinGroup v0-v1


def test_kafka_apis_refuses_an_api_it_cannot_answer() -> None:
    from brownout.broker.acl_apis import AuthHelper
    from brownout.broker.apis import KafkaApis
    from brownout.common.kafka_config import KafkaConfig

    config = KafkaConfig({
        "node.id": "1", "process.roles": "broker", "controller.quorum.voters": "9@127.0.0.1:1",
        "controller.listener.names": "C", "listeners": "PLAINTEXT://127.0.0.1:0"})
    with pytest.raises(ValueError, match=r"without a handler.*FIND_COORDINATOR"):
        KafkaApis(config=config, cluster_id="c", metadata=None,  # type: ignore[arg-type]
                  replica_manager=None, controller=None,  # type: ignore[arg-type]
                  producer_ids=None, topic_creator=None,  # type: ignore[arg-type]
                  auth=AuthHelper(None), supported=BROKER_APIS)  # groups' APIs, no groups
