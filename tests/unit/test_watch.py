"""`brownout watch`'s pure parts: what changed between two frames, write rates, and a
frame drawn (including one that could not be read)."""

from rich.console import Console

from brownout.cli.watch import Frame, PartitionView, partition_changes, render, write_rates


def view(leader, isr, replicas=(1, 2, 3)):
    return PartitionView(leader, tuple(replicas), tuple(isr))


def test_changes_between_frames():
    before = {("t", 0): view(1, (1, 2, 3)), ("t", 1): view(2, (2, 3)),
              ("t", 2): view(3, (3, 1)), ("t", 3): view(1, (1, 2, 3))}
    after = {("t", 0): view(2, (2, 3)), ("t", 1): view(2, (2, 3, 1)),
             ("t", 2): view(3, (3,)), ("t", 3): view(None, (1,)), ("u", 0): view(1, (1,))}
    assert partition_changes(before, after) == {
        ("t", 0): "leader", ("t", 1): "isr+", ("t", 2): "isr-", ("t", 3): "leaderless",
        ("u", 0): "new"}
    assert partition_changes(before, before) == {}
    # The first frame only marks what has no leader.
    assert partition_changes(None, after) == {("t", 3): "leaderless"}


def test_write_rates():
    a = Frame(10.0, {}, {}, {"t": 100, "u": 5})
    b = Frame(12.0, {}, {}, {"t": 300, "u": 5, "new": 7})
    assert write_rates(a, b) == {"t": 100.0, "u": 0.0}
    assert write_rates(None, b) == {}


def test_render_a_frame_and_an_unreadable_one():
    status = {"cluster_id": "abc", "mode": "zookeeper", "controller": {"id": 2},
              "nodes": [{"id": 1, "roles": ["broker"], "state": "running", "fenced": False},
                        {"id": 2, "roles": ["broker"], "state": "stopped", "fenced": None}]}
    before = Frame(1.0, status, {("t", 0): view(2, (2, 1))}, {"t": 0})
    after = Frame(2.0, status, {("t", 0): view(1, (1,))}, {"t": 50})
    console = Console(record=True, width=120)
    console.print(render(after, before))
    text = console.export_text()
    assert "cluster abc" in text and "controller: 2 (zookeeper)" in text
    assert "leader" in text and "writes/s: t 50" in text
    console = Console(record=True, width=120)
    console.print(render(Frame(3.0, None, {}, {}, error="cannot reach any of x:1"), after))
    assert "cannot read the cluster: cannot reach any of x:1" in console.export_text()
