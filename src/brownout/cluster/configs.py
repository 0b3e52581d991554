"""Dynamic configs of topics and brokers over the Kafka protocol, for any Kafka cluster:
what `brownout configs` prints and sends, as kafka-configs.sh does.

The pure half parses `--add-config` the way kafka-configs.sh does (commas inside
square brackets belong to the value) and prints its `--describe` and `--alter` lines.
The other half reads with the lab's WireClient and alters with confluent-kafka's
AdminClient. DescribeConfigs goes through the WireClient because confluent-kafka keeps a
config's synonyms in a dict keyed by name, so a topic's `min.insync.replicas` override
and the broker default of the same name would collapse into one, and kafka-configs.sh
prints every synonym; the default broker resource ("") goes through it too, since none
of the Python clients can name it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from .admin import Admin, AdminError

TOPICS = "topics"
BROKERS = "brokers"
USERS = "users"  # client quotas and SCRAM credentials: cluster/quotas.py
CLIENTS = "clients"
ENTITY_TYPES = (TOPICS, CLIENTS, USERS, BROKERS)
DEFAULT_BROKER = ""  # Kafka's name for the cluster-wide broker default resource

TOPIC_RESOURCE = 2  # Kafka's ConfigResource.Type codes
BROKER_RESOURCE = 4
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations

# DescribeConfigs' config_source codes -> the names Java's ConfigEntry.ConfigSource prints.
SOURCE_NAMES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}

# Commas and equals signs count only outside square brackets (kafka-configs.sh's rule).
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
_KEY = re.compile(r"[a-zA-Z0-9._-]*")


# -- pure ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Synonym:
    source: str
    name: str
    value: str | None


@dataclasses.dataclass(frozen=True)
class Entry:
    """One described config: the value in effect, where it comes from, and the values
    behind it (its synonyms, most specific first, as the broker orders them)."""

    name: str
    value: str | None  # None: sensitive (Kafka prints "null")
    source: str
    sensitive: bool = False
    synonyms: tuple[Synonym, ...] = ()


def parse_add_config(text: str) -> dict[str, str]:
    """`--add-config 'k1=v1,k2=[a,b],k3='`: commas inside brackets belong to the value,
    the brackets themselves are dropped, an empty value is allowed."""
    # Java's String.split drops trailing empty strings; re.split keeps them.
    items = re.split("," + _OUTSIDE_BRACKETS, text)
    while items and items[-1] == "":
        items.pop()
    result: dict[str, str] = {}
    for item in items:
        parts = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, item)
        if len(parts) != 2:
            raise ValueError('Invalid entity config: all configs to be added must be in the '
                             'format "key=val".')
        key = parts[0].strip()
        if not _KEY.fullmatch(key):
            raise ValueError(f"Invalid character found for config key: {key}")
        result[key] = re.sub(r"[\[\]]", "", parts[1]).strip()
    return result


def parse_delete_config(values: Sequence[str]) -> list[str]:
    """`--delete-config k1,k2` (repeatable): the keys, trimmed."""
    return [k.strip() for v in values for k in v.split(",") if k.strip()]


def dynamic_source(entity_type: str, name: str) -> str:
    """The source of the configs set on this entity itself (what --describe lists)."""
    if entity_type == TOPICS:
        return "DYNAMIC_TOPIC_CONFIG"
    return "DYNAMIC_DEFAULT_BROKER_CONFIG" if name == DEFAULT_BROKER else "DYNAMIC_BROKER_CONFIG"


def dynamic_entries(entity_type: str, name: str, entries: Sequence[Entry]) -> list[Entry]:
    """The entity's own dynamic configs, sorted by name, as kafka-configs.sh lists them."""
    source = dynamic_source(entity_type, name)
    return sorted((e for e in entries if e.source == source), key=lambda e: e.name)


def format_describe(entity_type: str, name: str, entries: Sequence[Entry]) -> list[str]:
    """The header line, then one line per entry: ``  k=v sensitive=false
    synonyms={SOURCE:k=v, ...}``."""
    if name == DEFAULT_BROKER:
        header = f"Default configs for {entity_type} in the cluster are:"
    else:
        header = f"Dynamic configs for {entity_type[:-1]} {name} are:"
    lines = [header]
    for e in entries:
        synonyms = ", ".join(f"{s.source}:{s.name}={_java(s.value)}" for s in e.synonyms)
        lines.append(f"  {e.name}={_java(e.value)} sensitive={str(e.sensitive).lower()} "
                     f"synonyms={{{synonyms}}}")
    return lines


def completed_message(entity_type: str, name: str) -> str:
    if name == DEFAULT_BROKER:
        return f"Completed updating default config for {entity_type} in the cluster."
    return f"Completed updating config for {entity_type[:-1]} {name}."


def missing_deletes(entity_type: str, name: str, entries: Sequence[Entry],
                    deletes: Sequence[str]) -> list[str]:
    """Keys to delete that the entity does not set itself (kafka-configs.sh refuses
    them before sending anything)."""
    present = {e.name for e in dynamic_entries(entity_type, name, entries)}
    return [k for k in deletes if k not in present]


def _java(value: str | None) -> str:
    return "null" if value is None else value


def entry_from_wire(c: object) -> Entry:
    """A DescribeConfigs response entry (kio) -> Entry."""
    return Entry(
        str(c.name),  # type: ignore[attr-defined]
        None if c.value is None else str(c.value),  # type: ignore[attr-defined]
        SOURCE_NAMES.get(int(c.config_source), "UNKNOWN"),  # type: ignore[attr-defined]
        bool(c.is_sensitive),  # type: ignore[attr-defined]
        tuple(Synonym(SOURCE_NAMES.get(int(s.source), "UNKNOWN"), str(s.name),
                      None if s.value is None else str(s.value))
              for s in c.synonyms),  # type: ignore[attr-defined]
    )


# -- I/O ------------------------------------------------------------------------------


def _resource_type(entity_type: str) -> int:
    return TOPIC_RESOURCE if entity_type == TOPICS else BROKER_RESOURCE


class ConfigAdmin(Admin):
    """DescribeConfigs and IncrementalAlterConfigs for one topic or broker (blocking)."""

    def entries(self, entity_type: str, name: str) -> list[Entry]:
        what = f"cannot describe the configs of {entity_type[:-1]} {name or '<default>'}"
        return self._on_any_broker(what, lambda client: [
            entry_from_wire(c) for c in client.describe_configs(_resource_type(entity_type),
                                                                name)])

    def entity_names(self, entity_type: str) -> list[str]:
        """Every topic; or every broker id then the default, as --describe without
        --entity-name lists them."""
        if entity_type == TOPICS:
            return self.topic_names()
        try:
            md = self.client.list_topics(timeout=self.timeout)
        except Exception as e:
            raise AdminError(f"cannot reach the cluster at {self.bootstrap}: {e}") from None
        return [str(b) for b in sorted(md.brokers)] + [DEFAULT_BROKER]

    def alter(self, entity_type: str, name: str, add: Mapping[str, str],
              delete: Sequence[str]) -> None:
        what = f"cannot alter the configs of {entity_type[:-1]} {name or '<default>'}"
        if name == DEFAULT_BROKER:
            ops = [(k, SET, v) for k, v in add.items()] + [(k, DELETE, None) for k in delete]
            self._on_any_broker(what, lambda client: client.incremental_alter_configs(
                BROKER_RESOURCE, DEFAULT_BROKER, ops))
            return
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                   for k, v in add.items()]
        entries += [ConfigEntry(k, "", incremental_operation=AlterConfigOpType.DELETE)
                    for k in delete]
        resource = ConfigResource("topic" if entity_type == TOPICS else "broker", name,
                                  incremental_configs=entries)
        futures = self.client.incremental_alter_configs([resource],
                                                        request_timeout=self.timeout)
        for future in futures.values():
            self._result(future, what)
