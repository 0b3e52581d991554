from brownout.check import check_consumers

from .hist import H, final

LOG = final(*[(0, o, f"m{o}") for o in range(6)])


def test_consumed_then_missing():
    h = H().poll(1.0, "c1", 0, "m0").poll(1.1, "c1", 1, "gone")
    result = check_consumers(h.table(), final((0, 0, "m0")))
    missing = result.anomalies["consumed-then-missing"]
    assert missing.count == 1 and missing.examples[0]["msg_id"] == "gone"
    assert result.valid is False


def test_a_partition_the_final_read_could_not_read_hides_nothing_as_missing():
    # An interrupted run's log may not have been read back: a delivered record missing
    # there is unknown, while one missing from a partition that was read still counts.
    h = H().poll(1.0, "c1", 0, "m0").poll(1.1, "c1", 0, "p1", partition=1) \
        .poll(1.2, "c1", 1, "gone")
    result = check_consumers(h.table(), final((0, 0, "m0")), unread=[("t", 1)])
    missing = result.anomalies["consumed-then-missing"]
    assert missing.count == 1 and missing.examples[0]["msg_id"] == "gone"


def test_poll_skip():
    h = (H().group(0.0, "assign", "c1", partitions=[0])
         .poll(1.0, "c1", 0, "m0").poll(1.1, "c1", 1, "m1").poll(1.2, "c1", 4, "m4"))
    result = check_consumers(h.table(), LOG)
    skip = result.anomalies["poll-skip"]
    assert skip.count == 2
    example = skip.examples[0]
    assert (example["from_offset"], example["to_offset"]) == (1, 4)
    assert example["skipped_offsets"] == [2, 3]
    assert example["skipped_msg_ids"] == ["m2", "m3"]
    assert result.valid is False


def test_records_read_by_another_member_after_a_rebalance_are_not_skipped():
    h = (H().group(0.0, "assign", "c1", partitions=[0])
         .poll(1.0, "c1", 0, "m0").poll(1.1, "c1", 1, "m1")
         .group(2.0, "revoke", "c1").group(2.1, "assign", "c2", partitions=[0])
         .poll(2.2, "c2", 2, "m2").poll(2.3, "c2", 3, "m3")
         .group(3.0, "revoke", "c2").group(3.1, "assign", "c1", partitions=[0])
         .poll(3.2, "c1", 4, "m4"))
    result = check_consumers(h.table(), LOG)
    assert result.anomalies["poll-skip"].count == 0
    assert result.anomalies["poll-skip"].detail["jumps"] == 1
    assert result.valid is True


def test_another_group_does_not_cover_a_skip():
    h = (H().group(0.0, "assign", "c1", group="g1").group(0.0, "assign", "c2", group="g2")
         .poll(1.0, "c1", 0, "m0").poll(1.2, "c1", 2, "m2").poll(1.1, "c2", 1, "m1"))
    result = check_consumers(h.table(), LOG)
    assert result.anomalies["poll-skip"].count == 1
    assert result.anomalies["poll-skip"].examples[0]["group"] == "g1"


def test_overlapping_skips_count_each_record_once():
    h = (H().group(0.0, "assign", "c1").group(0.0, "assign", "c2")
         .poll(1.0, "c1", 0, "m0").poll(1.1, "c1", 4, "m4")
         .poll(1.0, "c2", 1, "m1").poll(1.1, "c2", 5, "m5"))
    result = check_consumers(h.table(), LOG)
    assert result.anomalies["poll-skip"].count == 2  # offsets 2 and 3


def test_duplicate_deliveries_are_counted_and_allowed():
    h = (H().group(0.0, "assign", "c1").group(0.0, "assign", "c2")
         .poll(1.0, "c1", 0, "m0").poll(1.1, "c1", 1, "m1")
         .poll(2.0, "c2", 1, "m1").poll(2.1, "c2", 2, "m2").poll(2.2, "c2", 2, "m2"))
    result = check_consumers(h.table(), LOG)
    dup = result.anomalies["duplicate-delivery"]
    assert dup.count == 2 and dup.detail["extra_deliveries"] == 2 and dup.allowed
    assert result.valid is True
    assert result.numbers["groups"] == {"g1": {"deliveries": 5, "distinct_records": 3}}
