"""The nodes file of an external cluster: what it yields, and how a bad one is reported
(file, line and key) before any command runs."""

from __future__ import annotations

import pytest

from brownout.faults.nodes_file import NodesFileError, load, parse

GOOD = """\
bootstrap: kafka1:9092, kafka2:9092
timeout: 20
defaults:
  kill: docker kill -s KILL kafka{node}
  start: docker start kafka{node}
nodes:
  1: {role: broker, terminate: "docker stop -t {timeout} kafka1"}
  2:
    role: broker
    kill: "awk '{print $1}' /tmp/pid-{node} | xargs kill -9"
    address: 127.0.0.1:9092
  3001: {role: controller, pause: docker pause ctl}
  7: {roles: [controller, broker]}
"""


def test_good_file() -> None:
    nf = parse(GOOD, "nodes.yaml")
    assert nf.bootstrap == "kafka1:9092,kafka2:9092"
    assert nf.timeout == 20
    assert [n.node_id for n in nf.nodes] == [1, 2, 7, 3001]
    one, two, seven, ctl = nf.nodes
    assert one.roles == ("broker",) and one.is_broker and not one.is_controller
    assert seven.roles == ("broker", "controller")
    assert ctl.roles == ("controller",)
    # defaults, with {node} substituted; a node's own command wins
    assert one.command("kill") == "docker kill -s KILL kafka1"
    assert ctl.command("start") == "docker start kafka3001"
    assert one.command("terminate", 30) == "docker stop -t 30 kafka1"
    # other braces are left alone (shell, awk)
    assert two.command("kill") == "awk '{print $1}' /tmp/pid-2 | xargs kill -9"
    assert two.address == "127.0.0.1:9092" and one.address is None
    assert one.command("pause") is None and ctl.command("pause") == "docker pause ctl"
    assert nf.node(3001) is ctl and nf.node(5) is None
    assert [n.node_id for n in nf.brokers] == [1, 2, 7]
    assert one.line == 7


def test_minimal_file_defaults() -> None:
    nf = parse("nodes:\n  1: {role: broker}\n")
    assert nf.bootstrap is None and nf.timeout == 60.0
    assert nf.nodes[0].commands == {}


def _error(text: str) -> NodesFileError:
    with pytest.raises(NodesFileError) as e:
        parse(text, "n.yaml")
    return e.value


@pytest.mark.parametrize(
    ("text", "line", "key", "words"),
    [
        ("nodes:\n  1: {role: broker, kil: x}\n", 2, "nodes.1.kil", "did you mean kill?"),
        ("nodes:\n  1:\n    role: broker\n    strat: x\n", 4, "nodes.1.strat", "start"),
        ("nodes:\n  1: {role: brokr}\n", 2, "nodes.1.role", "got brokr"),
        ("nodes:\n  1: {kill: x}\n", 2, "nodes.1", "missing role"),
        ("nodes:\n  1: {role: broker, kill: ''}\n", 2, "nodes.1.kill", "non-empty"),
        ("nodes:\n  1: {role: broker, kill: [a]}\n", 2, "nodes.1.kill", "got a list"),
        ("nodes:\n  x: {role: broker}\n", 2, "nodes.x", "a node id is a number"),
        ("nodes:\n  -1: {role: broker}\n", 2, "nodes.-1", "a node id is a number"),
        ("nodes:\n  4001: {role: broker}\n", 2, "nodes.4001", "above 4000"),
        ("nodes:\n  1: {role: broker}\n  1: {role: broker}\n", 3, "nodes.1", "repeated"),
        ("nodes:\n  1: {role: controller}\n", 1, "nodes", "no broker"),
        ("nodes: {}\n", 1, "nodes", "no node listed"),
        ("bootstrap: kafka1\nnodes:\n  1: {role: broker}\n", 1, "bootstrap", "host:port"),
        ("timeout: 0\nnodes:\n  1: {role: broker}\n", 1, "timeout", "seconds > 0"),
        ("defaults: {stop: x}\nnodes:\n  1: {role: broker}\n", 1, "defaults.stop",
         "unknown key"),
        ("nodes:\n  1: {role: broker, address: host}\n", 2, "nodes.1.address", "host:port"),
        ("bootstrap: a:1\n", 1, "nodes", "missing `nodes:`"),
        ("nodse:\n  1: {role: broker}\n", 1, "nodse", "did you mean nodes?"),
        ("nodes: [1, 2]\n", 1, "nodes", "expected a mapping"),
    ],
)
def test_errors_name_line_and_key(text: str, line: int, key: str, words: str) -> None:
    e = _error(text)
    assert (e.line, e.key) == (line, key), str(e)
    assert words in e.message, str(e)
    assert str(e).startswith(f"n.yaml:{line}: {key}: ")


def test_not_yaml_and_empty() -> None:
    e = _error("nodes:\n  1: {role: broker\n")
    assert "not valid YAML" in str(e) and e.line is not None
    e = _error("")
    assert "empty nodes file" in str(e)


def test_load_unreadable(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(NodesFileError, match="cannot read it"):
        load(str(tmp_path / "missing.yaml"))
    path = tmp_path / "nodes.yaml"
    path.write_text("nodes:\n  '2': {role: broker}\n")
    assert load(str(path)).nodes[0].node_id == 2
