from brownout.check import check_writes

from .hist import H, final


def explain(h, log, **kw):
    result, lost = check_writes(h.table(), log, **kw)
    return result, {row["msg_id"]: row for row in lost.to_pylist()}


def test_truncated_after_leader_change():
    h = (H().observe(0.0, leader=1, epoch=1, isr=[1, 2, 3])
         .send("m1", 2.9, 3.0, offset=0, acks="1")
         .observe(5.0, leader=2, epoch=2, isr=[2, 3])
         .send("m2", 6.0, 6.1, offset=0, acks="1"))
    result, lost = explain(h, final((0, 0, "m2")))
    row = lost["m1"]
    assert row["reason"] == "truncated-after-leader-change"
    assert row["leader"] == 1 and row["leader_epoch"] == 1 and row["isr"] == [1, 2, 3]
    assert row["epoch_ended_at"] == 5.0 and row["new_leader"] == 2 and row["new_epoch"] == 2
    assert row["record_at_offset"] == "m2"
    assert result.numbers["lost_write_reasons"] == {"truncated-after-leader-change": 1}
    example = result.anomalies["lost-write"].examples[0]
    assert example["reason"] == "truncated-after-leader-change"
    assert example["epoch_ended_at"] == 5.0


def test_same_epoch_is_not_a_leader_change():
    h = (H().observe(0.0, leader=1, epoch=1, isr=[1, 2])
         .send("m1", 2.9, 3.0, offset=0, acks="all")
         .observe(5.0, leader=1, epoch=1, isr=[1, 2]))
    _, lost = explain(h, final((0, 0, "m9")))
    assert lost["m1"]["reason"] == "unexplained"
    assert lost["m1"]["epoch_ended_at"] is None


def test_never_replicated_while_isr_was_the_leader_alone():
    h = (H().observe(0.0, leader=1, epoch=1, isr=[1])
         .send("m1", 2.9, 3.0, offset=0, acks="1"))
    _, lost = explain(h, final())
    assert lost["m1"]["reason"] == "never-replicated"
    assert lost["m1"]["isr"] == [1]


def test_never_replicated_when_the_leader_died_right_after():
    h = (H().observe(0.0, leader=1, epoch=1, isr=[1, 2, 3])
         .send("m1", 2.9, 3.0, offset=0, acks="1")
         .fault(3.4, "kill", [1], done=3.5)
         .observe(6.0, leader=2, epoch=2, isr=[2, 3])
         .send("m2", 7.0, 7.1, offset=0, acks="1"))
    _, lost = explain(h, final((0, 0, "m2")))
    row = lost["m1"]
    assert row["reason"] == "never-replicated"
    assert row["matched"] == ["never-replicated", "truncated-after-leader-change"]
    assert row["fault_action"] == "kill" and row["fault_time"] == 3.5


def test_a_kill_long_after_the_ack_is_no_evidence():
    h = (H().observe(0.0, leader=1, epoch=1, isr=[1, 2, 3])
         .send("m1", 2.9, 3.0, offset=0, acks="1")
         .fault(30.0, "kill", [1]))
    _, lost = explain(h, final())
    assert lost["m1"]["reason"] == "unexplained"
    assert lost["m1"]["fault_time"] is None


def test_written_to_an_isolated_leader():
    h = (H().observe(0.0, leader=1, epoch=1, isr=[1, 2, 3])
         .fault(0.9, "isolate", [1], done=1.0)
         .send("m1", 2.9, 3.0, offset=0, acks="1")
         .observe(4.0, leader=2, epoch=2, isr=[2, 3])
         .send("m2", 5.0, 5.1, offset=0, acks="1")
         .fault(10.0, "heal", done=10.2)
         .send("m3", 11.0, 11.1, offset=1, acks="1"))
    _, lost = explain(h, final((0, 0, "m2")))
    row = lost["m1"]
    assert row["reason"] == "isolated-leader"
    assert row["isolated_since"] == 1.0 and row["isolation_action"] == "isolate"
    assert "truncated-after-leader-change" in row["matched"]
    # m3 was acked after the heal: its loss has no isolation to blame.
    assert lost["m3"]["reason"] == "unexplained"


def test_no_observations_means_unexplained_and_acks_0_is_its_own_reason():
    h = H().send("m1", 0.0, 0.1, offset=0, acks="1").send("m2", 0.0, 0.1, acks="0")
    result, lost = explain(h, final())
    assert lost["m1"]["reason"] == "unexplained"
    assert lost["m2"]["reason"] == "acks-0"
    assert result.numbers["lost_write_reasons"] == {"unexplained": 1, "acks-0": 1}
    assert result.valid is True  # acks 0 and 1 tolerate lost writes by default


def test_power_loss_of_every_isr_member_is_the_reason():
    h = (H().observe(0.0, leader=1, epoch=1, isr=[1, 2, 3])
         .send("m1", 2.9, 3.0, offset=0, acks="all")
         .fault(4.0, "power-loss", [1, 2, 3], done=9.0)
         .observe(10.0, leader=1, epoch=2, isr=[1, 2, 3])
         .send("m2", 11.0, 11.1, offset=0, acks="all"))
    result, lost = explain(h, final((0, 0, "m2")))
    row = lost["m1"]
    assert row["reason"] == "power-loss"
    assert row["matched"] == ["power-loss", "truncated-after-leader-change"]
    assert row["fault_action"] == "power-loss" and row["fault_time"] == 9.0
    assert result.numbers["lost_write_reasons"] == {"power-loss": 1}


def test_power_loss_sparing_an_isr_member_is_no_evidence():
    h = (H().observe(0.0, leader=1, epoch=1, isr=[1, 2, 3])
         .send("m1", 2.9, 3.0, offset=0, acks="all")
         .fault(4.0, "power-loss", [1, 2], done=9.0))
    _, lost = explain(h, final())
    assert lost["m1"]["reason"] == "unexplained"


def test_the_explained_lost_writes_round_trip_through_parquet(tmp_path):
    """The scenario runner stores them as lost-writes.parquet for the report."""
    import pyarrow.parquet as pq

    from brownout.check import check_all
    from brownout.report.data import loss_table

    h = (H().observe(0.0, leader=1, epoch=1, isr=[1])
         .send("m1", 0.0, 0.1, acks="1", offset=0).send("m2", 0.2, 0.3, acks="1", offset=1))
    report = check_all(h.table(), final((0, 0, "m1")), {0: 1})
    assert len(report.lost_writes) == 1
    pq.write_table(report.lost_writes, tmp_path / "lost-writes.parquet")
    table = loss_table(pq.read_table(tmp_path / "lost-writes.parquet"), source="file",
                       limit=10)
    assert table.total == 1 and table.rows[0]["msg_id"] == "m2"
    assert table.by_reason == {"never-replicated": 1}
