"""brownout-kafka's offset planning without Spark or a cluster: options, rate limiting
(maxOffsetsPerTrigger), canonical offsets, data-loss decisions."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from brownout.spark.source import (
    DataLossError,
    KafkaStreamReader,
    SourceOptions,
    offsets_json,
    offsets_map,
    rate_limit,
    resolve,
)


def opts(**extra: str) -> SourceOptions:
    base = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "a,b"}
    base.update(extra)
    return SourceOptions.parse(base, streaming=True)


class FakePlanner:
    def __init__(self, marks: dict[tuple[str, int], tuple[int, int]]) -> None:
        self.marks = marks

    def partitions(self) -> list[tuple[str, int]]:
        return sorted(self.marks)

    def watermarks(self, tps):
        return {tp: self.marks[tp] for tp in tps}

    def close(self) -> None:
        pass


def reader(marks, **extra: str) -> KafkaStreamReader:
    r = KafkaStreamReader(opts(**extra))
    r._planner = FakePlanner(marks)  # type: ignore[assignment]
    return r


def test_options_parse_like_spark():
    o = opts(startingOffsets='{"a":{"0":5,"1":-2}}', maxOffsetsPerTrigger="10",
             failOnDataLoss="false", **{"kafka.fetch.max.bytes": "1000"})
    assert o.topics == ("a", "b")
    assert o.starting == {"a": {"0": 5, "1": -2}}
    assert o.max_offsets_per_trigger == 10
    assert o.fail_on_data_loss is False
    assert o.client_config == (("fetch.max.bytes", "1000"),)
    assert opts().starting == "latest" and opts().fail_on_data_loss is True
    batch = SourceOptions.parse({"kafka.bootstrap.servers": "x", "subscribe": "a"},
                                streaming=False)
    assert batch.starting == "earliest" and batch.ending == "latest"
    with pytest.raises(ValueError, match="subscribe"):
        SourceOptions.parse({"kafka.bootstrap.servers": "x"}, streaming=True)
    with pytest.raises(ValueError, match="startingOffsets"):
        opts(startingOffsets="yesterday")


def test_offsets_json_is_canonical():
    a = offsets_json({("b", 1): 3, ("a", 10): 1, ("a", 2): 7})
    assert list(a) == ["a", "b"] and list(a["a"]) == ["2", "10"]
    assert offsets_map(a) == {("a", 2): 7, ("a", 10): 1, ("b", 1): 3}


def test_rate_limit_splits_in_proportion_and_exactly():
    start = {("t", 0): 0, ("t", 1): 10, ("t", 2): 100}
    latest = {("t", 0): 60, ("t", 1): 40, ("t", 2): 110}  # backlog 60, 30, 10
    end = rate_limit(start, latest, 10)
    assert sum(end[tp] - start[tp] for tp in start) == 10
    assert end == {("t", 0): 6, ("t", 1): 13, ("t", 2): 101}
    assert rate_limit(start, latest, 1000) == latest
    assert rate_limit(start, latest, None) == latest
    # Several batches of 7 reach the end exactly, never overshooting a partition.
    cur, total = dict(start), 0
    while cur != latest:
        nxt = rate_limit(cur, latest, 7)
        step = sum(nxt[tp] - cur[tp] for tp in cur)
        assert 0 < step <= 7 and all(nxt[tp] <= latest[tp] for tp in cur)
        total += step
        cur = nxt
    assert total == 100


def test_resolve_starting_offsets():
    marks = {("a", 0): (5, 50), ("a", 1): (0, 9)}
    assert resolve("earliest", sorted(marks), marks, name="s") == {("a", 0): 5, ("a", 1): 0}
    assert resolve("latest", sorted(marks), marks, name="s") == {("a", 0): 50, ("a", 1): 9}
    assert resolve({"a": {"0": -2, "1": 3}}, sorted(marks), marks, name="s") == {
        ("a", 0): 5, ("a", 1): 3}


def test_latest_offset_uses_the_read_limit_and_picks_up_new_partitions():
    r = reader({("a", 0): (0, 100), ("a", 1): (0, 100)}, maxOffsetsPerTrigger="50")
    assert r.getDefaultReadLimit() == ReadMaxRows(50)
    start = r.initialOffset()  # streaming default: latest
    assert start == {"a": {"0": 100, "1": 100}}
    r._planner.marks = {("a", 0): (0, 140), ("a", 1): (0, 100), ("a", 2): (0, 20)}
    end = r.latestOffset({"a": {"0": 100, "1": 100}}, ReadMaxRows(30))
    assert end == {"a": {"0": 120, "1": 100, "2": 10}}
    parts = r.partitions({"a": {"0": 100, "1": 100}}, end)
    assert [(p.topic, p.partition, p.start, p.end) for p in parts] == [
        ("a", 0, 100, 120), ("a", 2, 0, 10)]
    # availableNow: never past the high watermarks seen when it was prepared.
    r.prepareForTriggerAvailableNow()
    r._planner.marks = {("a", 0): (0, 500), ("a", 1): (0, 100), ("a", 2): (0, 20)}
    assert r.latestOffset(end, ReadAllAvailable()) == {"a": {"0": 140, "1": 100, "2": 20}}


def test_truncated_log_is_data_loss_or_skipped():
    marks = {("a", 0): (0, 40)}
    with pytest.raises(DataLossError, match=r"a-0: offset 90 .* high watermark is now 40"):
        reader(marks).latestOffset({"a": {"0": 90}}, ReadAllAvailable())
    r = reader(marks, failOnDataLoss="false")
    end = r.latestOffset({"a": {"0": 90}}, ReadAllAvailable())
    assert end == {"a": {"0": 40}}  # go on from the new high watermark
    assert r.partitions({"a": {"0": 90}}, end) == []


def test_new_partition_starting_late_is_data_loss():
    marks = {("a", 0): (0, 10), ("a", 1): (5, 10)}
    with pytest.raises(DataLossError, match=r"a-1: new partition starts at offset 5"):
        reader(marks).latestOffset({"a": {"0": 10}}, ReadAllAvailable())
