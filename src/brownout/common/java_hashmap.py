"""The order in which Java's HashMap iterates its keys, for printing what a Java tool prints.

Kafka's AdminClient keeps a resource's DescribeConfigs entries in a `HashMap<String,
ConfigEntry>` (clients/admin/Config.java), and kafka-topics.sh prints the non-default ones
in that map's iteration order. That order is fixed by the keys alone: their String
hashCode, the table size the number of keys grew it to, and, within a bucket, insertion
order (a resize splits a bucket without reordering it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

_INITIAL_CAPACITY = 16  # HashMap's DEFAULT_INITIAL_CAPACITY
_LOAD_FACTOR = 0.75
# A bucket about to hold more than 8 keys grows a table smaller than 64 instead of turning
# into a tree (TREEIFY_THRESHOLD, MIN_TREEIFY_CAPACITY).
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as an unsigned 32-bit int."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def topic_partition_hash(topic: str, partition: int) -> int:
    """TopicPartition.hashCode (31 * (31 + partition) + topic's hash, in int arithmetic),
    as an unsigned 32-bit int: the key of the HashMaps Kafka's tools print partitions
    from."""
    return (31 * (31 + partition) + string_hash(topic)) & 0xFFFFFFFF


def bucket(key: str, capacity: int) -> int:
    return _bucket_of(string_hash(key), capacity)


def _bucket_of(h: int, capacity: int) -> int:
    return (h ^ (h >> 16)) & (capacity - 1)


def _rehash(bins: list[list[K]], capacity: int, hash_of: Callable[[K], int]) -> list[list[K]]:
    grown: list[list[K]] = [[] for _ in range(capacity)]
    for old in bins:
        for key in old:
            grown[_bucket_of(hash_of(key), capacity)].append(key)
    return grown


def table_size_for(capacity: int) -> int:
    """The table a `new HashMap<>(capacity)` starts with: the next power of two."""
    size = 1
    while size < capacity:
        size *= 2
    return size


def hashmap_order(keys: Iterable[str], initial_capacity: int = _INITIAL_CAPACITY) -> list[str]:
    """The iteration order of a `new HashMap<>(initial_capacity)` after `put(key, ...)` of
    each String key in turn (a key put again keeps its place). Trees in buckets of 9+
    keys, which Java iterates in a different order, are not modelled: with Kafka's few
    dozen config or topic names they do not occur."""
    return hashmap_order_by(keys, string_hash, initial_capacity)


def hashmap_order_by(keys: Iterable[K], hash_of: Callable[[K], int],
                     initial_capacity: int = _INITIAL_CAPACITY) -> list[K]:
    """`hashmap_order` for keys of any Java type, given its hashCode (unsigned 32-bit)."""
    capacity = table_size_for(initial_capacity)
    bins: list[list[K]] = [[] for _ in range(capacity)]
    seen: set[K] = set()
    for key in keys:
        if key in seen:
            continue
        seen.add(key)
        target = bins[_bucket_of(hash_of(key), capacity)]
        target.append(key)
        if len(target) > _TREEIFY_THRESHOLD and capacity < _MIN_TREEIFY_CAPACITY:
            capacity *= 2
            bins = _rehash(bins, capacity, hash_of)
        if len(seen) > capacity * _LOAD_FACTOR:
            capacity *= 2
            bins = _rehash(bins, capacity, hash_of)
    return [key for b in bins for key in b]
