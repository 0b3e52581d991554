"""The nodes file: how to kill, stop, start, pause and resume each node of a cluster the
lab did not start (`brownout fault ... --nodes FILE`, `brownout run ... --nodes FILE`).

    bootstrap: kafka1:9092,kafka2:9092     # optional; --bootstrap-server wins
    timeout: 60                            # optional: seconds a command may take
    defaults:                              # optional: commands for every node
      kill: docker kill -s KILL kafka{node}
      start: docker start kafka{node}
    nodes:
      1: {role: broker, terminate: "docker stop -t {timeout} kafka1"}
      2: {role: broker}
      3001: {role: controller, address: "ctl1:9093", kill: "ssh ctl1 sudo pkill -9 java"}

A node's own command wins over the default one. In a command, ``{node}`` becomes the
node id and ``{timeout}`` the seconds the fault allows (terminate: how long the broker
may take to exit); any other brace is left alone, so shell and awk syntax pass through.
`role` is broker, controller or broker,controller. `address` (host:port) is optional:
the listener that tells whether the node is up (a broker's defaults to the address it
advertises in Metadata; a controller without one is assumed running unless this process
stopped it).

Parsing is pure: `parse(text, source)` gives a `NodesFile` or raises `NodesFileError`
naming the file, line and key, so a typo is reported before any command runs.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..cluster.zookeeper import ZOOKEEPER_HOST_BASE
from ..common.text_file import read_text

# The process faults a nodes file can drive; restart and rolling-restart are terminate
# (kill when terminate does not finish) and start.
COMMANDS = ("kill", "terminate", "start", "pause", "resume")
NODE_KEYS = ("role", "roles", "address", *COMMANDS)
TOP_KEYS = ("bootstrap", "timeout", "defaults", "nodes")
ROLES = ("broker", "controller")
DEFAULT_TIMEOUT = 60.0


class NodesFileError(ValueError):
    """A nodes file that cannot be used; str() is ``file:line: key: message``."""

    def __init__(self, message: str, source: str, line: int | None = None,
                 key: str | None = None) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.key = key
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {key + ': ' if key else ''}{message}")


@dataclasses.dataclass(frozen=True)
class ExternalNode:
    node_id: int
    roles: tuple[str, ...]  # in Kafka's order: ("broker",), ("controller",) or both
    commands: Mapping[str, str]  # action -> shell command, {node} already substituted
    address: str | None = None  # host:port that answers while the node is up
    line: int = 0

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    def command(self, action: str, timeout: float | None = None) -> str | None:
        """The shell command for `action`, {timeout} filled in; None when not given."""
        text = self.commands.get(action)
        if text is None:
            return None
        return text.replace("{timeout}", f"{timeout:g}" if timeout is not None else "")


@dataclasses.dataclass(frozen=True)
class NodesFile:
    source: str
    nodes: tuple[ExternalNode, ...]  # sorted by id
    bootstrap: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    def node(self, node_id: int) -> ExternalNode | None:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        return None

    @property
    def brokers(self) -> tuple[ExternalNode, ...]:
        return tuple(n for n in self.nodes if n.is_broker)


# -- parsing (pure) --------------------------------------------------------------------


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source
        self._constructor = SafeConstructor()

    def error(self, node: Node | None, message: str, key: str | None = None) -> NodesFileError:
        line = None if node is None else node.start_mark.line + 1
        return NodesFileError(message, self.source, line, key)

    def scalar(self, node: Node, key: str) -> Any:
        if not isinstance(node, ScalarNode):
            kind = "a mapping" if isinstance(node, MappingNode) else "a list"
            raise self.error(node, f"expected a single value, got {kind}", key)
        try:
            return self._constructor.construct_object(node, deep=True)
        except ConstructorError as e:
            raise self.error(node, str(e.problem or e), key) from None

    def mapping(self, node: Node, key: str,
                known: tuple[str, ...] = ()) -> list[tuple[Any, Node, Node]]:
        """(key, key node, value node) in file order; repeated or unknown keys fail."""
        if not isinstance(node, MappingNode):
            raise self.error(node, "expected a mapping (key: value)", key or None)
        seen: set[Any] = set()
        out = []
        for key_node, value_node in node.value:
            name = self.scalar(key_node, key)
            where = f"{key}.{name}" if key else str(name)
            if name in seen:
                raise self.error(key_node, "repeated key", where)
            if known and name not in known:
                raise self.error(key_node, "unknown key" + _did_you_mean(str(name), known), where)
            seen.add(name)
            out.append((name, key_node, value_node))
        return out


def _did_you_mean(name: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, choices, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{hint}; expected one of {', '.join(choices)}"


def _address(r: _Reader, node: Node, key: str) -> str:
    value = r.scalar(node, key)
    host, sep, port = str(value).strip().rpartition(":")
    if not isinstance(value, str) or not sep or not host or not port.isdigit():
        raise r.error(node, f"expected host:port, got {value!r}", key)
    return f"{host}:{port}"


def _command(r: _Reader, node: Node, key: str) -> str:
    value = r.scalar(node, key)
    if not isinstance(value, str) or not value.strip():
        raise r.error(node, f"expected a shell command (a non-empty string), got {value!r}", key)
    return value


def _roles(r: _Reader, node: Node, key: str) -> tuple[str, ...]:
    if isinstance(node, SequenceNode):
        raw = [r.scalar(item, key) for item in node.value]
    else:
        raw = str(r.scalar(node, key) or "").split(",")
    names = {str(x).strip() for x in raw if str(x).strip()}
    unknown = sorted(names - set(ROLES))
    if unknown or not names:
        raise r.error(node, f"expected broker, controller or broker,controller, got "
                      f"{', '.join(unknown) or 'nothing'}", key)
    return tuple(role for role in ROLES if role in names)


def _node(r: _Reader, node_id: Any, key_node: Node, value: Node,
          defaults: Mapping[str, str]) -> ExternalNode:
    key = f"nodes.{node_id}"
    if isinstance(node_id, str) and node_id.strip().isdigit():
        node_id = int(node_id)
    if isinstance(node_id, bool) or not isinstance(node_id, int) or node_id < 0:
        raise r.error(key_node, f"a node id is a number >= 0 (Kafka's node.id), got "
                      f"{node_id!r}", key)
    if node_id > ZOOKEEPER_HOST_BASE:
        # Resolved targets above that base are ZooKeeper servers (faults/targets.py).
        raise r.error(key_node, f"node ids above {ZOOKEEPER_HOST_BASE} are not supported "
                      "(the lab names ZooKeeper servers with them)", key)
    roles: tuple[str, ...] = ()
    address = None
    commands = dict(defaults)
    for name, _, sub in r.mapping(value, key, NODE_KEYS):
        where = f"{key}.{name}"
        if name in ("role", "roles"):
            roles = _roles(r, sub, where)
        elif name == "address":
            address = _address(r, sub, where)
        else:
            commands[name] = _command(r, sub, where)
    if not roles:
        raise r.error(value, "missing role (broker, controller or broker,controller)", key)
    commands = {k: v.replace("{node}", str(node_id)) for k, v in commands.items()}
    return ExternalNode(node_id, roles, commands, address, value.start_mark.line + 1)


def parse(text: str, source: str = "<nodes file>") -> NodesFile:
    """Parse and check a nodes file; NodesFileError names file, line and key."""
    r = _Reader(source)
    try:
        root = yaml.compose(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise NodesFileError(f"not valid YAML: {e.problem or e}", source,
                             mark.line + 1 if mark else None) from None
    if root is None:
        raise NodesFileError("empty nodes file (it needs a `nodes:` mapping)", source, 1)
    top = {name: (k, v) for name, k, v in r.mapping(root, "", TOP_KEYS)}
    bootstrap = None
    if "bootstrap" in top:
        value = r.scalar(top["bootstrap"][1], "bootstrap")
        parts = [p.strip() for p in str(value or "").split(",") if p.strip()]
        if not isinstance(value, str) or not parts or any(
                not p.rpartition(":")[2].isdigit() or not p.rpartition(":")[0] for p in parts):
            raise r.error(top["bootstrap"][1], f"expected host:port[,host:port...], got "
                          f"{value!r}", "bootstrap")
        bootstrap = ",".join(parts)
    timeout = DEFAULT_TIMEOUT
    if "timeout" in top:
        value = r.scalar(top["timeout"][1], "timeout")
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise r.error(top["timeout"][1], f"expected seconds > 0, got {value!r}", "timeout")
        timeout = float(value)
    defaults: dict[str, str] = {}
    if "defaults" in top:
        for name, _, sub in r.mapping(top["defaults"][1], "defaults", COMMANDS):
            defaults[name] = _command(r, sub, f"defaults.{name}")
    if "nodes" not in top:
        raise NodesFileError("missing `nodes:` (node id -> role and commands)", source,
                             root.start_mark.line + 1, "nodes")
    nodes_key, nodes_node = top["nodes"]
    entries = r.mapping(nodes_node, "nodes")
    if not entries:
        raise r.error(nodes_key, "no node listed", "nodes")
    nodes = [_node(r, node_id, k, v, defaults) for node_id, k, v in entries]
    if not any(n.is_broker for n in nodes):
        raise r.error(nodes_key, "no broker listed (a node needs role: broker)", "nodes")
    return NodesFile(source, tuple(sorted(nodes, key=lambda n: n.node_id)), bootstrap, timeout)


def load(path: str) -> NodesFile:
    """Read and parse the nodes file at `path` (NodesFileError also when unreadable)."""
    try:
        text = read_text(path)
    except OSError as e:
        raise NodesFileError(f"cannot read it: {e.strerror or e}", str(path)) from None
    return parse(text, str(path))


__all__ = [
    "COMMANDS",
    "DEFAULT_TIMEOUT",
    "ExternalNode",
    "NodesFile",
    "NodesFileError",
    "load",
    "parse",
]
