"""Kafka's topic name rules and a CreateTopics entry, as both metadata modes decide on
them: the KRaft controller (controller/topics.py) and ZooKeeper mode's topic
administration (zk/admin.py). Kafka keeps the rules in org.apache.kafka.common.internals.
Topic, beside its clients, for the same reason."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


@dataclasses.dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    num_partitions: int = -1  # -1: num.partitions
    replication_factor: int = -1  # -1: default.replication.factor
    assignments: Mapping[int, Sequence[int]] = dataclasses.field(default_factory=dict)
    configs: Mapping[str, str | None] = dataclasses.field(default_factory=dict)


def validate_topic_name(name: str) -> str | None:
    """Kafka's topic name rules; returns the problem or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_NAME_LENGTH:
        return (
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {name}"
        )
    if not _LEGAL.match(name):
        return (
            f"Topic name \"{name}\" is illegal, it contains a character other than ASCII "
            "alphanumerics, '.', '_' and '-'"
        )
    return None
