"""The order in which Kafka 3.9's JSON writer emits an object's keys.

Kafka builds each znode's JSON from a Scala or Java map and hands it to a plain Jackson
ObjectMapper, which writes entries in the map's iteration order. That order is not
insertion order but a function of the keys' hash codes and the map's implementation,
so what `get /brokers/ids/1` shows in a ZooKeeper shell is, for example,
``{"features":{},"listener_security_protocol_map":...,"version":5,"timestamp":...}``.
These functions reproduce the three iteration orders Kafka's encoders meet (Scala
2.13, the distribution's default):

- small immutable maps (``Map(a -> 1, b -> 2)`` with at most four entries) keep
  insertion order (Scala's Map1..Map4);
- larger immutable maps are CHAMP tries keyed by an "improved" hash: a node's own
  entries come in the order of their 5-bit hash fragment, then its sub-tries, depth
  first;
- ``mutable.HashMap`` is an array of buckets indexed by the low bits of
  ``h ^ (h >>> 16)``, each bucket sorted by that hash; iteration walks the buckets;
- ``java.util.Properties`` (topic configs) is backed by a ConcurrentHashMap: buckets
  indexed the same way, entries in a bucket in insertion order.

Keys are strings; their hash is Java's String.hashCode.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

_MASK32 = 0xFFFFFFFF
K = TypeVar("K", bound=Hashable)


def _i32(x: int) -> int:
    x &= _MASK32
    return x - (1 << 32) if x & 0x80000000 else x


def java_string_hash(s: str) -> int:
    h = 0
    # Java hashes UTF-16 code units, so characters outside the BMP count twice.
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = _i32(31 * h + ((data[i] << 8) | data[i + 1]))
    return h


def _improve(h: int) -> int:
    h = _i32(h + ~_i32(h << 9))
    h = _i32(h ^ ((h & _MASK32) >> 14))
    h = _i32(h + _i32(h << 4))
    return _i32(h ^ ((h & _MASK32) >> 10))


def _spread(h: int) -> int:
    return _i32(h ^ ((h & _MASK32) >> 16))


def immutable_map_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a Scala 2.13 immutable Map built from `keys`."""
    return immutable_map_order_by(keys, java_string_hash)


def immutable_map_order_by(keys: Sequence[K], hash_of: Callable[[K], int]) -> list[K]:
    """`immutable_map_order` for keys of any type, given its Java hashCode. A key given
    twice keeps its first place (an updated entry does not move)."""
    keys = list(dict.fromkeys(keys))
    if len(keys) <= 4:
        return keys
    hashes = {k: _improve(_i32(hash_of(k))) & _MASK32 for k in keys}

    def walk(group: list[K], shift: int) -> list[K]:
        buckets: dict[int, list[K]] = {}
        for k in group:
            buckets.setdefault((hashes[k] >> shift) & 31, []).append(k)
        ordered = sorted(buckets.items())
        out = [g[0] for _, g in ordered if len(g) == 1]
        for _, g in ordered:
            if len(g) > 1:
                out += walk(g, shift + 5)
        return out

    return walk(list(keys), 0)


def _scala_table_size(capacity: int) -> int:
    return min(1 << max(capacity - 1, 4).bit_length(), 1 << 30)


def mutable_map_order(keys: Iterable[str], *, built_with: int = 0) -> list[str]:
    """Iteration order of a Scala 2.13 mutable.HashMap.

    `built_with` is how many of the keys the map was created with (``mutable.Map(a ->
    1, ...)`` sizes its table for them); the rest were added one by one."""
    keys = list(keys)
    length = _scala_table_size(int((built_with + 1) / 0.75)) if built_with else 16
    for size in range(len(keys)):
        if size + 1 >= length * 0.75:
            length *= 2
    return sorted(
        keys,
        key=lambda k: (_spread(java_string_hash(k)) & (length - 1), _spread(java_string_hash(k))),
    )


def properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a java.util.Properties filled with `keys` in this order.

    Exact up to eleven entries; beyond that the table's resize may reorder entries
    that share a bucket, which this does not model."""
    keys = list(keys)
    length = 16
    while len(keys) >= length * 0.75:
        length *= 2
    position = {k: i for i, k in enumerate(keys)}
    return sorted(
        keys,
        key=lambda k: ((_spread(java_string_hash(k)) & 0x7FFFFFFF) & (length - 1), position[k]),
    )
