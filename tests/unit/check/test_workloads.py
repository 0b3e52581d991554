"""Each workload judged alone: its producers' events plus the shared nemesis and
observer, its producers' records of the final read."""

from brownout.check.run_dir import producer_expectations
from brownout.check.workloads import check_workloads, error_counts, workload_slice

from .hist import H, final

PRODUCERS = {"strict": ["producer-p1"], "loose": ["producer-p2"]}


def two_workloads():
    h = (H().observe(0.0, leader=1, epoch=1, isr=[1, 2, 3])
         .send("a1", 0.0, 0.1, offset=0, producer="p1", seq=0)
         .send("b1", 0.0, 0.1, acks="1", offset=1, producer="p2", seq=0)
         .fault(1.0, "kill", [1], done=1.1)
         .send("a2", 2.0, 2.1, "fail", producer="p1", seq=1)
         # acknowledged with acks=1, then gone from the log: the loose workload's loss
         .send("b2", 2.0, 2.1, acks="1", offset=2, producer="p2", seq=1)
         .poll(3.0, "c1", 0, "a1"))
    # A run's records name their producer by its process (Stream's "producer" header).
    log = final((0, 0, "a1", None, "producer-p1", 0), (0, 1, "b1", None, "producer-p2", 0))
    return h.table(), log


def test_a_slice_keeps_its_producers_and_the_shared_processes():
    history, log = two_workloads()
    sub, mine = workload_slice(history, log, PRODUCERS["strict"])
    assert set(sub["process"].to_pylist()) == {"producer-p1", "nemesis", "observer"}
    assert mine["msg_id"].to_pylist() == ["a1"]
    empty, none = workload_slice(history, log, [])
    assert set(empty["process"].to_pylist()) == {"nemesis", "observer"}
    assert len(none) == 0


def test_each_workload_is_judged_on_its_own_writes():
    history, log = two_workloads()
    per = check_workloads(history, log, {("t", 0): 2}, PRODUCERS)
    assert set(per) == {"strict", "loose"}
    strict = per["strict"]["results"]["writes"]["numbers"]
    loose = per["loose"]["results"]["writes"]["numbers"]
    assert (strict["sent"], strict["lost"]) == (2, 0)
    assert (loose["sent"], loose["lost"]) == (2, 1)


def test_error_counts_per_workload_and_for_the_whole_run():
    history, _ = two_workloads()
    counts = error_counts(history, PRODUCERS)
    assert counts[""] == {"NOT_ENOUGH_REPLICAS": 1}
    assert counts["strict"] == {"NOT_ENOUGH_REPLICAS": 1}
    assert "loose" not in counts


def test_a_history_file_is_sliced_as_it_is_read(tmp_path):
    import pyarrow.parquet as pq

    history, log = two_workloads()
    path = tmp_path / "history.parquet"
    pq.write_table(history, path)
    for procs in PRODUCERS.values():
        from_file, mine = workload_slice(path, log, procs)
        in_memory, same = workload_slice(history, log, procs)
        assert from_file["index"].to_pylist() == in_memory["index"].to_pylist()
        assert mine.equals(same)
    assert check_workloads(path, log, {("t", 0): 2}, PRODUCERS) == check_workloads(
        history, log, {("t", 0): 2}, PRODUCERS)


def test_each_workload_is_judged_with_what_its_own_producers_allow():
    # b1 landed twice: at-least-once for the loose workload's plain producer, an
    # anomaly wherever the producer was idempotent.
    history, _ = two_workloads()
    log = final((0, 0, "a1", None, "producer-p1", 0), (0, 1, "b1", None, "producer-p2", 0),
                (0, 2, "b1", None, "producer-p2", 0))
    per = check_workloads(history, log, {("t", 0): 3}, {"loose": ["producer-p2"]},
                          {"loose": producer_expectations([{"idempotent": False}])})
    assert per["loose"]["results"]["writes"]["anomalies"]["duplicate"]["allowed"]
    per = check_workloads(history, log, {("t", 0): 3}, {"loose": ["producer-p2"]},
                          {"loose": producer_expectations([{"idempotent": True}])})
    assert not per["loose"]["results"]["writes"]["anomalies"]["duplicate"]["allowed"]
