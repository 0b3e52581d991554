import json

from brownout.check import Expectations, check_all, check_writes

from .hist import H, final


def writes(h, log, **kw):
    result, _ = check_writes(h.table(), log, **kw)
    return result


def test_everything_acknowledged_is_present():
    h = H().send("m1", 0.0, 0.1, offset=0).send("m2", 0.2, 0.3, offset=1)
    result = writes(h, final((0, 0, "m1"), (0, 1, "m2")), high_watermarks={0: 2})
    assert result.valid is True
    assert result.numbers["acknowledged"] == 2
    assert result.numbers["lost"] == 0
    assert result.numbers["partitions"] == [{
        "topic": "t", "partition": 0, "acks": ["all"], "sent": 2, "acknowledged": 2,
        "lost": 0,
        "high_watermark": 2, "log_start": 0, "records_in_log": 2}]
    json.dumps(result.to_dict())


def test_lost_acknowledged_write_with_acks_all_is_invalid():
    h = H().send("m1", 0.0, 0.1, offset=0).send("m2", 0.2, 0.3, offset=1)
    result = writes(h, final((0, 0, "m1")))
    assert result.valid is False
    lost = result.anomalies["lost-write"]
    assert lost.count == 1 and not lost.allowed
    assert [e["msg_id"] for e in lost.examples] == ["m2"]
    assert lost.detail["by_acks"] == {"all": 1}
    assert lost.detail["by_partition"] == {"t-0": 1}
    assert result.numbers["by_acks"]["all"]["lost"] == 1


def test_acks_1_lost_writes_are_tolerated_when_expected():
    h = H().send("m1", 0.0, 0.1, offset=0, acks="1").send("m2", 0.2, 0.3, offset=1, acks="1")
    log = final((0, 0, "m1"))
    tolerant = writes(h, log)
    assert tolerant.valid is True
    assert tolerant.anomalies["lost-write"].count == 1
    assert tolerant.anomalies["lost-write"].allowed
    assert writes(h, log, expectations=Expectations.strict()).valid is False


def test_unacknowledged_writes_present_are_fine():
    h = (H().send("m1", 0.0, 0.1, offset=0)
         .send("m2", 0.2, 5.0, "info")  # timed out, yet written
         .send("m3", 0.3, None, None))  # never completed, yet written
    result = writes(h, final((0, 0, "m1"), (0, 1, "m2"), (0, 2, "m3")))
    assert result.valid is True
    unexpected = result.anomalies["unexpected-write"]
    assert unexpected.count == 2 and unexpected.allowed
    assert {e["msg_id"] for e in unexpected.examples} == {"m2", "m3"}
    assert result.numbers["by_acks"]["all"] == {
        "sent": 3, "ok": 1, "fail": 0, "info": 1, "never": 1, "present": 3, "lost": 0}


def test_failed_yet_present_is_g1a():
    h = H().send("m1", 0.0, 0.1, "fail").send("m2", 0.2, 0.3, offset=1)
    result = writes(h, final((0, 0, "m1"), (0, 1, "m2")))
    assert result.valid is False
    g1a = result.anomalies["G1a"]
    assert g1a.count == 1 and g1a.examples[0]["msg_id"] == "m1"
    assert g1a.examples[0]["error"] == "NOT_ENOUGH_REPLICAS"


def test_strongest_completion_wins():
    h = H().send("m1", 0.0, 0.1, "fail").add(time=0.5, process="producer-p1", type="ok",
                                                f="send", msg_id="m1", partition=0, offset=0)
    result = writes(h, final((0, 0, "m1")))
    assert result.valid is True
    assert result.numbers["acknowledged"] == 1


def test_duplicates():
    h = H().send("m1", 0.0, 0.1, offset=0).send("m2", 0.2, 0.3, offset=1)
    result = writes(h, final((0, 0, "m1"), (0, 1, "m2"), (0, 2, "m1")))
    assert result.valid is False
    dup = result.anomalies["duplicate"]
    assert dup.count == 1 and dup.detail["extra_copies"] == 1
    assert dup.examples == [{"msg_id": "m1", "copies": 2, "partition": 0, "offsets": [0, 2]}]
    allowed = writes(h, final((0, 0, "m1"), (0, 1, "m2"), (0, 2, "m1")),
                     expectations=Expectations(allowed=frozenset({"duplicate"})))
    assert allowed.valid is True


def test_acknowledged_offset_taken_by_another_record():
    # m1 acked at offset 0 by an old leader, truncated, m2 written at offset 0 afterwards.
    h = H().send("m1", 0.0, 0.1, offset=0, acks="1").send("m2", 1.0, 1.1, offset=0,
                                                         acks="1")
    result = writes(h, final((0, 0, "m2")))
    bad = result.anomalies["inconsistent-offsets"]
    assert bad.count == 1
    assert bad.examples[0]["msg_id"] == "m1" and bad.examples[0]["msg_at_offset"] == "m2"
    assert bad.detail["other_record_at_offset"] == 1 and bad.detail["found_elsewhere"] == 0
    # with acks=1 a truncated-and-rewritten offset is tolerated like the lost write
    assert bad.allowed and result.valid is True
    strict = writes(h, final((0, 0, "m2")), expectations=Expectations.strict())
    assert strict.valid is False


def test_acknowledged_record_found_at_another_offset():
    h = H().send("m1", 0.0, 0.1, offset=0)
    result = writes(h, final((0, 3, "m1")))
    bad = result.anomalies["inconsistent-offsets"]
    assert bad.count == 1 and bad.detail["found_elsewhere"] == 1
    assert not bad.allowed and result.valid is False


def test_producer_reorder():
    h = (H().send("m1", 0.0, 0.1, offset=1, seq=0, key="a")
         .send("m2", 0.0, 0.1, offset=0, seq=1, key="b"))
    log = final((0, 0, "m2", "b", "p1", 1), (0, 1, "m1", "a", "p1", 0))
    result = writes(h, log)
    reorder = result.anomalies["producer-reorder"]
    assert reorder.count == 1
    assert reorder.examples[0]["msg_id"] == "m2"
    assert reorder.examples[0]["prev_msg_id"] == "m1"
    assert result.valid is False


def test_duplicate_retry_is_not_a_producer_reorder():
    h = (H().send("m1", 0.0, 0.1, offset=0, seq=0).send("m2", 0.0, 0.1, offset=1, seq=1))
    log = final((0, 0, "m1", None, "p1", 0), (0, 1, "m2", None, "p1", 1),
                (0, 2, "m1", None, "p1", 0))
    result = writes(h, log)
    assert result.anomalies["producer-reorder"].count == 0
    assert result.anomalies["duplicate"].count == 1


def test_key_reorder_across_producers():
    # m1 (key k) was acknowledged at t=1 before m2 (key k) was sent at t=2; the log
    # holds m2 first.
    h = (H().send("m1", 0.0, 1.0, offset=1, producer="p1", seq=0, key="k")
         .send("m2", 2.0, 2.1, offset=0, producer="p2", seq=0, key="k")
         .send("m3", 0.0, 3.0, offset=2, producer="p3", seq=0, key="k"))
    log = final((0, 0, "m2", "k", "p2", 0), (0, 1, "m1", "k", "p1", 0),
                (0, 2, "m3", "k", "p3", 0))
    result = writes(h, log)
    assert result.anomalies["producer-reorder"].count == 0
    reorder = result.anomalies["key-reorder"]
    assert reorder.count == 1
    example = reorder.examples[0]
    assert example["msg_id"] == "m2" and example["acknowledged_earlier"] == "m1"
    assert example["its_ack_time"] == 1.0
    assert result.valid is False


def test_concurrent_sends_of_one_key_may_land_in_any_order():
    h = (H().send("m1", 0.0, 1.0, offset=1, producer="p1", seq=0, key="k")
         .send("m2", 0.5, 2.1, offset=0, producer="p2", seq=0, key="k"))
    log = final((0, 0, "m2", "k", "p2", 0), (0, 1, "m1", "k", "p1", 0))
    assert writes(h, log).anomalies["key-reorder"].count == 0


def test_phantom_write():
    h = H().send("m1", 0.0, 0.1, offset=0)
    result = writes(h, final((0, 0, "m1"), (0, 1, "zz")))
    assert result.anomalies["phantom-write"].count == 1
    assert result.valid is False


def test_writes_below_log_start_are_expired_not_lost():
    h = H().send("m1", 0.0, 0.1, offset=0).send("m2", 0.2, 0.3, offset=1)
    result = writes(h, final((0, 1, "m2")))
    assert result.anomalies["lost-write"].count == 0
    assert result.anomalies["lost-write"].detail["expired_below_log_start"] == 1
    assert result.valid is True


def test_writes_missing_from_an_unread_partition_are_unknown_not_lost():
    h = (H().send("m1", 0.0, 0.1, offset=0).send("m2", 0.2, 0.3, offset=1)
         .send("m3", 0.2, 0.3, partition=1, offset=0))
    log = final((0, 0, "m1"))  # partition 1 could not be read at all
    result = writes(h, log, unread=[("t", 1)])
    assert result.anomalies["lost-write"].count == 1  # m2: partition 0 was read
    assert result.numbers["acknowledged_unread"] == 1
    assert result.numbers["unread_partitions"] == ["t-1"]
    assert result.valid is False
    only_unread = writes(H().send("m3", 0.2, 0.3, partition=1, offset=0), final(),
                         unread=[("t", 1)])
    assert only_unread.anomalies["lost-write"].count == 0
    assert only_unread.valid == "unknown"
    report = check_all(H().send("m3", 0.2, 0.3, partition=1, offset=0).table(), final(),
                       unread=[("t", 1)])
    assert report.valid == "unknown"


def test_check_all_lists_anomalies_by_name():
    h = H().send("m1", 0.0, 0.1, offset=0).send("m2", 0.2, 0.3, offset=1)
    report = check_all(h.table(), final((0, 0, "m1")), {0: 2})
    assert report.valid is False
    d = report.to_dict()
    assert d["results"]["writes"]["anomalies"]["lost-write"]["count"] == 1
    assert "m2" in json.dumps(d)
    assert report.lost_writes.column("msg_id").to_pylist() == ["m2"]


def test_print_hw_names_the_acks_levels_and_counts_acknowledged_past_the_hw():
    # acks=1: m2 acknowledged at offset 1, then truncated away (the log ends at 1)
    h = (H().send("m1", 0.0, 0.1, acks="1", offset=0)
         .send("m2", 0.2, 0.3, acks="1", offset=1))
    result = writes(h, final((0, 0, "m1")), high_watermarks={0: 1})
    [row] = result.numbers["partitions"]
    assert (row["acks"], row["acknowledged"], row["high_watermark"], row["lost"]) == (
        ["1"], 2, 1, 1)
