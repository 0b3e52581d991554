"""The APIs this node implements and the versions it advertises.

Only versions that are really implemented are advertised: a client picks the highest
version both sides list, so advertising one the handlers cannot serve breaks it. The
ranges cover what librdkafka 2.16, kafka-python 3.0 and aiokafka 0.14 send, and stay
inside what kio 0.6.5 can encode.

`request_class` and `response_class` are the one way to get the entity of an (api key,
version): kio's, or for what kio lacks (the ZooKeeper-era APIs, keys 4-7, and
OffsetCommit v0-v1) the ones in `zkapis`, which have the same shape.
"""

from __future__ import annotations

import enum
import functools

from kio.index import load_request_schema, load_response_schema

from . import zkapis


class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    ALLOCATE_PRODUCER_IDS = 67
    DESCRIBE_TOPIC_PARTITIONS = 75


# (min, max) advertised to clients by a broker.
BROKER_APIS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 10),
    ApiKey.FETCH: (4, 16),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.OFFSET_COMMIT: (0, 9),
    ApiKey.OFFSET_FETCH: (1, 7),
    ApiKey.FIND_COORDINATOR: (0, 4),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    # Kafka 3.9 also takes v0, the same message as v1 (Kafka 4.0 dropped it); the schema
    # library has no v0, so clients get v1 and up.
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    # Forwarded to the controller; Kafka 3.9's ranges (v1 of Alter came with Kafka 4.1).
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    # Forwarded to the controller, so the same range as its listener (raft_manager).
    ApiKey.DESCRIBE_QUORUM: (0, 1),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),  # KRaft brokers only, as in Kafka
    # Kafka 3.9 also takes v0 (no pattern type: LITERAL); the schema library has no v0.
    # Served whether or not an authorizer is configured: without one, SECURITY_DISABLED.
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    # Described from the broker's metadata image; the alterations are forwarded to the
    # controller (KRaft brokers only here, see NOT_ON_ZK_BROKERS).
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
}

# The `brownout.api.versions` setting: whose version ranges a broker advertises.
API_VERSIONS_3_9 = "3.9"
API_VERSIONS_4_0 = "4.0"

# Kafka 4.0.0's lowest version of each API this node serves where KIP-896 raised it
# above what BROKER_APIS starts at: OffsetCommit v0-v1 and JoinGroup v0-v1 are gone
# (Kafka 4.0.1 took JoinGroup v0-v1 back for old librdkafka releases). The other
# removals (Produce v0-v2, Fetch v0-v3, ListOffsets v0, OffsetFetch v0, CreateTopics
# v0-v1, DeleteTopics v0, OffsetForLeaderEpoch v0-v1, DescribeConfigs v0,
# DescribeLogDirs v0) are versions this node never served.
KAFKA_4_0_MIN_VERSIONS: dict[ApiKey, int] = {
    ApiKey.PRODUCE: 3,
    ApiKey.FETCH: 4,
    ApiKey.LIST_OFFSETS: 1,
    ApiKey.OFFSET_COMMIT: 2,
    ApiKey.OFFSET_FETCH: 1,
    ApiKey.JOIN_GROUP: 2,
    ApiKey.CREATE_TOPICS: 2,
    ApiKey.DELETE_TOPICS: 1,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: 2,
    ApiKey.DESCRIBE_CONFIGS: 1,
    ApiKey.DESCRIBE_LOG_DIRS: 1,
}


def advertised_versions(
    apis: dict[ApiKey, tuple[int, int]], release: str
) -> dict[ApiKey, tuple[int, int]]:
    """The ranges a broker advertises for `release` ("3.9" or "4.0"): Kafka 4.0 raises
    the low end of some APIs (KIP-896); the high end stays what this node implements."""
    if release == API_VERSIONS_3_9:
        return dict(apis)
    if release != API_VERSIONS_4_0:
        raise ValueError(f"unknown API version set {release!r} (expected 3.9 or 4.0)")
    out = {}
    for key, (low, high) in apis.items():
        low = max(low, KAFKA_4_0_MIN_VERSIONS.get(key, low))
        if low <= high:
            out[key] = (low, high)
    return out


def _in_zkapis(api_key: int, api_version: int) -> bool:
    # A whole API (keys 4-7), or only the old versions kio lacks (OffsetCommit v0-v1).
    versions = zkapis.VERSIONS.get(api_key)
    return versions is not None and (
        api_key != ApiKey.OFFSET_COMMIT or versions[0] <= api_version <= versions[1]
    )


@functools.cache
def header_class(entity: type) -> type:
    """The header class a request or response class is sent with."""
    header: type = entity.__header_schema__  # type: ignore[attr-defined]
    return header


def request_class(api_key: int, api_version: int) -> type:
    if _in_zkapis(api_key, api_version):
        return zkapis.load_request_schema(api_key, api_version)
    return load_request_schema(api_key, api_version)  # type: ignore[return-value]


@functools.cache
def response_class(api_key: int, api_version: int) -> type:
    if _in_zkapis(api_key, api_version):
        return zkapis.load_response_schema(api_key, api_version)
    return load_response_schema(api_key, api_version)  # type: ignore[return-value]
