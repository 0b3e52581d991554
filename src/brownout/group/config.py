"""Coordinator configuration (Kafka's broker keys and defaults) and group placement."""

from __future__ import annotations

from dataclasses import dataclass

# Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: a new member parked in JoinGroup
# cannot heartbeat, so it is dropped if the join phase outlives this.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass(frozen=True)
class GroupConfig:
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2147483647
    offsets_topic_num_partitions: int = 50
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096

    def __post_init__(self) -> None:
        if self.offsets_topic_num_partitions <= 0:
            raise ValueError("offsets_topic_num_partitions must be positive")
        if self.offsets_retention_check_interval_ms <= 0:
            raise ValueError("offsets_retention_check_interval_ms must be positive")
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ValueError("group.min.session.timeout.ms > group.max.session.timeout.ms")

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60 * 1000


def java_string_hash(value: str) -> int:
    """Java's String.hashCode: 31-polynomial over UTF-16 code units, as a signed int32."""
    units = value.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The __consumer_offsets partition of a group, exactly as Kafka computes it.

    Kafka's Utils.abs maps Integer.MIN_VALUE to 0 (Math.abs would leave it negative).
    """
    h = java_string_hash(group_id)
    h = 0 if h == -(1 << 31) else abs(h)
    return h % num_partitions
