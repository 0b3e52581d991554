"""The order in which Java's HashMap iterates its keys, for printing what a Java tool prints.

Kafka's AdminClient keeps a resource's DescribeConfigs entries in a `HashMap<String,
ConfigEntry>` (clients/admin/Config.java), and kafka-topics.sh prints the non-default ones
in that map's iteration order. That order is fixed by the keys alone: their String
hashCode, the table size the number of keys grew it to, and, within a bucket, insertion
order (a resize splits a bucket without reordering it).
"""

from __future__ import annotations

from collections.abc import Iterable

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


def bucket(key: str, capacity: int) -> int:
    h = string_hash(key)
    return (h ^ (h >> 16)) & (capacity - 1)


def _rehash(bins: list[list[str]], capacity: int) -> list[list[str]]:
    grown: list[list[str]] = [[] for _ in range(capacity)]
    for old in bins:
        for key in old:
            grown[bucket(key, capacity)].append(key)
    return grown


def table_size_for(capacity: int) -> int:
    """The table a `new HashMap<>(capacity)` starts with: the next power of two."""
    size = 1
    while size < capacity:
        size *= 2
    return size


def hashmap_order(keys: Iterable[str], initial_capacity: int = _INITIAL_CAPACITY) -> list[str]:
    """The iteration order of a `new HashMap<>(initial_capacity)` after `put(key, ...)` of
    each key in turn (a key put again keeps its place). Trees in buckets of 9+ keys, which
    Java iterates in a different order, are not modelled: with Kafka's few dozen config or
    topic names they do not occur."""
    capacity = table_size_for(initial_capacity)
    bins: list[list[str]] = [[] for _ in range(capacity)]
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            continue
        seen.add(key)
        target = bins[bucket(key, capacity)]
        target.append(key)
        if len(target) > _TREEIFY_THRESHOLD and capacity < _MIN_TREEIFY_CAPACITY:
            capacity *= 2
            bins = _rehash(bins, capacity)
        if len(seen) > capacity * _LOAD_FACTOR:
            capacity *= 2
            bins = _rehash(bins, capacity)
    return [key for b in bins for key in b]
