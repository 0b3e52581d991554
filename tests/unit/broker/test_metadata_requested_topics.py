"""Metadata naming topics: Kafka's handler reads the requested names (or ids) as a set.

A fuzzer's frame of socket.request.max.bytes names one topic 120 000 times; the handler
answers each distinct name or id once, in the order first named, and asks the metadata
cache about each distinct one only, however often it is repeated.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from brownout.broker.acl_apis import AuthHelper
from brownout.broker.apis import ClientContext, KafkaApis
from brownout.common.kafka_config import KafkaConfig
from brownout.protocol.apis import BROKER_APIS, ApiKey, request_class
from brownout.protocol.build import build
from brownout.protocol.connection import Request, RequestHeader

PRESENT = "present"
PRESENT_ID = uuid.UUID(int=7)
CTX = ClientContext(listener="PLAINTEXT", client_host="127.0.0.1")


class Cache:
    """One topic of two partitions; counts the questions asked about each topic."""

    def __init__(self) -> None:
        self.asked: Counter[Any] = Counter()

    def alive_broker_nodes(self, listener: str) -> list[Any]:
        return []

    def controller_id(self) -> None:
        return None

    def contains(self, topic: str) -> bool:
        self.asked[topic] += 1
        return topic == PRESENT

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return PRESENT_ID if topic == PRESENT else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        self.asked[topic_id] += 1
        return PRESENT if topic_id == PRESENT_ID else None

    def partition_metadata(self, topic: str, listener: str, **flags: bool) -> Any:
        if topic != PRESENT:
            return None
        return [{"error_code": ErrorCode.none, "partition_index": p, "leader_id": 1,
                 "leader_epoch": 0, "replica_nodes": [1], "isr_nodes": [1],
                 "offline_replicas": []} for p in range(2)]


class _NoGroups:
    supported: dict[ApiKey, tuple[int, int]] = {}

    def handlers(self) -> dict[int, Any]:
        from brownout.broker.group_apis import GROUP_APIS

        async def handle(request: Any, ctx: Any) -> Any:
            return None

        return {key: handle for key in GROUP_APIS}


def apis(cache: Cache) -> KafkaApis:
    config = KafkaConfig({
        "node.id": "1", "process.roles": "broker", "controller.quorum.voters": "9@127.0.0.1:1",
        "controller.listener.names": "C", "listeners": "PLAINTEXT://127.0.0.1:0"})
    return KafkaApis(config=config, cluster_id="c", metadata=cache,  # type: ignore[arg-type]
                     replica_manager=None, controller=None,  # type: ignore[arg-type]
                     producer_ids=None, topic_creator=None,  # type: ignore[arg-type]
                     auth=AuthHelper(None), supported=BROKER_APIS,
                     api_groups=[_NoGroups()])


def metadata(cache: Cache, version: int, topics: list[dict[str, Any]]) -> Any:
    body = build(request_class(ApiKey.METADATA, version), {
        "topics": topics, "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})
    request = Request(RequestHeader(ApiKey.METADATA, version, 1, "c"), body, 0)
    return asyncio.run(apis(cache).handle_metadata(request, CTX))


def test_a_name_repeated_is_answered_once_and_looked_up_once() -> None:
    cache = Cache()
    names = [PRESENT] * 60_000 + ["absent-b", "absent-a"] * 30_000 + [PRESENT]
    response = metadata(cache, 4, [{"name": n} for n in names])

    assert [(t.name, t.error_code, len(t.partitions)) for t in response.topics] == [
        (PRESENT, ErrorCode.none, 2),
        ("absent-b", ErrorCode.unknown_topic_or_partition, 0),
        ("absent-a", ErrorCode.unknown_topic_or_partition, 0)]
    assert max(cache.asked.values()) <= 2  # whether it exists, before auto-creating


def test_with_ids_the_names_are_ignored_and_each_id_answered_once() -> None:
    cache = Cache()
    unknown = uuid.UUID(int=9)
    topics = ([{"name": "ignored", "topic_id": None}]
              + [{"name": None, "topic_id": unknown}, {"name": None, "topic_id": PRESENT_ID}]
              * 20_000)
    response = metadata(cache, 12, topics)

    assert [(t.name, t.topic_id, t.error_code) for t in response.topics] == [
        (None, unknown, ErrorCode.unknown_topic_id),
        (PRESENT, PRESENT_ID, ErrorCode.none)]
    assert cache.asked[unknown] == 1 and "ignored" not in cache.asked


def test_a_null_name_without_ids_is_an_unknown_topic_id_from_v12() -> None:
    response = metadata(Cache(), 12, [{"name": None, "topic_id": None}] * 3)
    assert [(t.name, t.topic_id, t.error_code) for t in response.topics] == [
        (None, None, ErrorCode.unknown_topic_id)]


def test_ids_below_v12_refuse_every_entry_as_sent() -> None:
    # Kafka's error response for the request names each entry, repeats too.
    topics = [{"name": PRESENT, "topic_id": None}] * 2 + [
        {"name": PRESENT, "topic_id": PRESENT_ID}]
    response = metadata(Cache(), 10, topics)
    assert [(t.name, t.error_code) for t in response.topics] == [
        (PRESENT, ErrorCode.invalid_request)] * 3
