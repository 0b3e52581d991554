"""Java's HashMap iteration order: String.hashCode's well-known values, buckets, growth."""

from __future__ import annotations

from brownout.common.java_hashmap import (
    bucket,
    hashmap_order,
    hashmap_order_by,
    string_hash,
    topic_partition_hash,
)


def test_string_hash_is_javas():
    # "hello".hashCode() == 99162322; "polygenelubricants".hashCode() == Integer.MIN_VALUE
    assert string_hash("hello") == 99162322
    assert string_hash("polygenelubricants") == 0x80000000
    assert string_hash("") == 0


def test_order_is_by_bucket_then_insertion():
    keys = ["min.insync.replicas", "cleanup.policy", "retention.ms"]
    order = hashmap_order(keys)
    assert sorted(order) == sorted(keys)
    assert order == sorted(keys, key=lambda k: (bucket(k, 16), keys.index(k)))
    # "Aa" and "BB" share a hash: one bucket, in insertion order, whichever comes first
    assert hashmap_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert hashmap_order(["a", "b", "a"]) == ["a", "b"]


def test_the_table_grows_past_twelve_keys():
    keys = [f"k{i}" for i in range(13)]
    assert hashmap_order(keys) == sorted(keys, key=lambda k: (bucket(k, 32), keys.index(k)))


def test_a_sized_map_starts_small_and_grows():
    # kafka-topics.sh 4.4 printed these four topics in this order (two HashMap<>(4) copies
    # of the sorted names: a table of 4 that grew to 8 on the fourth put)
    names = ["tools-5d6914", "tools-688d3d", "tools-c73ac4", "tools-e0aa79"]
    printed = ["tools-c73ac4", "tools-5d6914", "tools-688d3d", "tools-e0aa79"]
    assert hashmap_order(hashmap_order(names, 4), 4) == printed
    assert hashmap_order(names, 0) == hashmap_order(names, 1)


def test_topic_partitions_iterate_as_javas_hashmap_of_topic_partition():
    # Java: new TopicPartition("payments", 3).hashCode() == 1382683467, and a HashMap of
    # payments-0..3 and orders-0..2 iterates payments-3, -0, -2, -1, orders-0, -1, -2.
    assert topic_partition_hash("payments", 3) == 1382683467
    keys = [("payments", p) for p in range(4)] + [("orders", p) for p in range(3)]
    assert hashmap_order_by(keys, lambda tp: topic_partition_hash(*tp)) == [
        ("payments", 3), ("payments", 0), ("payments", 2), ("payments", 1),
        ("orders", 0), ("orders", 1), ("orders", 2)]
    # Twenty partitions of "t" grow the table to 32 and come out from the highest down.
    many = [("t", p) for p in range(20)]
    assert hashmap_order_by(many, lambda tp: topic_partition_hash(*tp)) == many[::-1]
