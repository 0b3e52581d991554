"""The built-in scenario list and the `brownout scenarios` / `brownout run` CLI edges."""

from __future__ import annotations

from typer.testing import CliRunner

from brownout.cli import app
from brownout.scenarios import builtin, builtin_names, resolve
from brownout.scenarios.runner import ScenarioRefused, preflight

REQUIRED = {"minority-outage", "majority-outage", "controller-loss", "acks-matrix",
            "leader-isolation", "leader-isolated-from-controller", "rolling-restart",
            "rolling-restart-three-brokers", "rolling-restart-session-30s",
            "group-correctness", "zk-node-network-cut", "zk-leader-isolated-from-zookeeper",
            "zk-broker-failover", "zk-two-brokers-down", "zk-quorum-loss",
            "unclean-election", "reassignment-under-load", "storage-faults",
            "power-loss", "power-loss-flushed"}
# read-only-logdir (chattr +i) and disk-full (a tmpfs mount) need root, not netns.
ROOT_STORAGE = {"storage-faults"}
NETNS = {"leader-isolation", "leader-isolated-from-controller", "zk-node-network-cut",
         "zk-leader-isolated-from-zookeeper"}


def test_every_required_builtin_ships():
    assert set(builtin_names()) >= REQUIRED


def test_network_scenarios_need_root_and_others_do_not():
    for name in builtin_names():
        s = builtin(name)
        assert s.needs_root == (name in NETNS | ROOT_STORAGE), name
        assert (s.cluster.network == "netns") == (name in NETNS), name


def test_preflight_refuses_netns_without_root(monkeypatch):
    import brownout.scenarios.runner as runner

    monkeypatch.setattr(runner, "is_root", lambda: False)
    try:
        preflight(builtin("leader-isolation"))
    except ScenarioRefused as e:
        assert "needs root" in str(e) and "--network netns" in str(e)
    else:
        raise AssertionError("not refused")
    preflight(builtin("minority-outage"))


def test_short_builtins_use_the_fast_profile():
    for name in ("minority-outage", "majority-outage"):
        s = builtin(name)
        assert s.cluster.profile == "fast" and s.duration <= 40


def test_acks_matrix_runs_the_studys_rows_at_its_load():
    s = builtin("acks-matrix")
    rows = {w.label: (w.acks, w.producers, w.count, w.rate, w.topic) for w in s.workloads}
    assert rows == {"acks0-1p": ("0", 1, 100_000, 0, "acks0-1p"),
                    "acks1-1p": ("1", 1, 100_000, 0, "acks1-1p"),
                    "acks1-10p": ("1", 10, 1_000_000, 0, "acks1-10p"),
                    "acksall-10p": ("all", 10, 1_000_000, 0, "acksall-10p")}
    # one partition, RF 3 per row, one leader for all: the kill 10 s in hits every row
    assert {(t.partitions, t.replication_factor, t.replicas) for t in s.topics} == {
        (1, 3, (1, 2, 3))}
    assert (s.schedule[0].at, s.schedule[0].action) == (10.0, "kill")
    assert {(x.label, x.expected) for x in s.over_runs} == {
        ("acks1-10p", "most"), ("acksall-10p", "none")}


def test_zookeeper_netns_builtins_cut_what_their_observations_say():
    b4 = builtin("zk-node-network-cut")
    assert b4.cluster.zookeeper and b4.cluster.zookeepers == 3
    assert [(t.name, t.partitions, t.replication_factor) for t in b4.topics] == [
        ("test-topic", 3, 2)]
    cut = b4.schedule[0]
    assert (cut.action, cut.target, cut.params) == ("isolate", "host:leader:test-topic-0", {})
    # The delivery timeout is shorter than the cut: no unacknowledged write needs moved
    # leaders.
    wait = next(step.seconds for step in b4.schedule if step.action == "wait")
    assert b4.workloads[0].message_timeout_ms / 1000 < wait
    czk = builtin("zk-leader-isolated-from-zookeeper")
    assert czk.cluster.zookeeper
    assert (czk.schedule[0].target, czk.schedule[0].params) == (
        "leader:isolated-acks1-0", {"from": "zookeeper"})
    assert {w.acks for w in czk.workloads} == {"1", "all"}


def test_network_rows_run_at_the_studys_load():
    for name, cut in (("leader-isolation", "nodes"),
                      ("leader-isolated-from-controller", "controllers"),
                      ("zk-leader-isolated-from-zookeeper", "zookeeper")):
        s = builtin(name)
        assert {(w.acks, w.producers, w.count, w.rate) for w in s.workloads} == {
            ("1", 10, 1_000_000, 0), ("all", 10, 1_000_000, 0)}, name
        # one topic per acks level, one leader for both, cut 10 s in
        assert {t.replicas for t in s.topics} == {(1, 2, 3)} and len(s.topics) == 2
        step = s.schedule[0]
        assert (step.at, step.action, step.params) == (10.0, "isolate", {"from": cut})
        assert {(x.label, x.expected) for x in s.over_runs} == {
            ("acks-1", "all"), ("acks-all", "none")}


def test_scenarios_command_lists_names_and_descriptions():
    result = CliRunner().invoke(app, ["scenarios"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for name in REQUIRED:
        assert name in result.output
    assert "Observation A3" in result.output


def test_run_refuses_unknown_scenarios_and_bad_files(tmp_path):
    result = CliRunner().invoke(app, ["run", "minority-outag"])
    assert result.exit_code == 2
    assert "did you mean 'minority-outage'" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nduration: 5s\nworkload: []\n")
    result = CliRunner().invoke(app, ["run", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}:3: workload: unknown key (did you mean 'workloads'?)" in result.output
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"name: x\n\xff\xfe\n")
    result = CliRunner().invoke(app, ["run", str(binary), "--validate"])
    assert result.exit_code == 2
    assert (f"{binary}: cannot read: not UTF-8 text (byte 8: invalid start byte)"
            in result.output), result.output


def test_resolve_file_or_name(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nduration: 1s\n")
    assert resolve(str(path)).name == "mine"
    assert resolve("minority-outage").name == "minority-outage"


def test_zookeeper_builtins_run_in_zookeeper_mode_over_three_servers():
    for name in ("zk-broker-failover", "zk-two-brokers-down", "zk-quorum-loss"):
        s = builtin(name)
        assert (s.cluster.zookeeper, s.cluster.zookeepers, s.cluster.brokers) == (True, 3, 3)
        assert {t.name: (t.partitions, t.replication_factor) for t in s.topics} == {
            "test-topic": (3, 2)}
        assert {w.acks for w in s.workloads} == {"all", "1"} and s.consumers, name
        assert not s.needs_root, name


def test_run_zookeeper_refuses_a_scenario_that_names_controller_nodes():
    result = CliRunner().invoke(app, ["run", "controller-loss", "--zookeeper"])
    assert result.exit_code == 2
    assert "cannot run in ZooKeeper mode" in result.output and "3001" in result.output



def test_power_loss_builtins_differ_only_in_flushing():
    lossy, flushed = builtin("power-loss"), builtin("power-loss-flushed")
    assert "log.flush.interval.messages" not in lossy.cluster.broker_set
    assert flushed.cluster.broker_set["log.flush.interval.messages"] == "1"
    for s in (lossy, flushed):
        assert [(st.action, st.target) for st in s.schedule] == [("power-loss", "all-brokers")]
        assert s.duration <= 40
    expected = {(e.name, e.label): e.expected for e in lossy.expectations}
    assert set(expected[("lost_write_reasons", "acks-all")]) == {"power-loss", "unexplained"}


def test_storage_faults_builtin_covers_every_damage_and_both_live_faults():
    s = builtin("storage-faults")
    damages = {st.params.get("damage") for st in s.schedule if st.action == "corrupt-log"}
    assert damages == {"crc", "torn-tail", "missing-index", "missing-checkpoints"}
    assert {st.action for st in s.schedule} >= {"read-only-logdir", "disk-full"}
