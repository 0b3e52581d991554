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
    """Kafka's topic name rules; returns the problem, in Kafka's words (3.4 on), or
    None."""
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    elif not _LEGAL.match(name):
        reason = (f"'{name}' contains one or more characters other than ASCII "
                  "alphanumerics, '.', '_' and '-'")
    else:
        return None
    return f"Topic name is invalid: {reason}"
