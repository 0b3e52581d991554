"""The nemesis: Jepsen-style fault injection on a running cluster.

``setup()`` checks what this cluster allows (network faults need netns mode and root)
and heals leftovers; ``invoke(fault)`` resolves the fault's target from live metadata
*now*, acts, and returns a `FaultResult`; ``heal()`` removes every network fault;
``teardown()`` heals, resumes paused nodes and starts stopped ones.

Every invocation also reports two history events through ``on_event(type, value)``:
``("invoke", value)`` once the targets are resolved, then ``("ok" | "fail" | "info",
value)`` when done. The caller records them as process "nemesis", f="fault", value as
JSON (`FaultResult.value()` is that JSON). Outcomes follow Jepsen: ``ok`` the fault
happened as asked; ``fail`` it certainly did not (refused, target not found, node not
running); ``info`` indeterminate (e.g. a SIGTERM'd broker did not exit in time, or a
restarted node did not rejoin in time): the message says which.

Actions (`Fault.action`) and their params:

===================  =================================================================
kill                 SIGKILL; waits until the process is gone
terminate            SIGTERM; waits (``timeout``, default 30 s) for the exit, which for
                     a broker means the controller approved controlled shutdown (read
                     from its log); no SIGKILL afterwards: "info" when it did not exit
pause / resume       SIGSTOP / SIGCONT (resume without target: every paused node)
start                start stopped node(s) and wait until they serve (broker: back in
                     Metadata) (no target: every stopped node)
restart              terminate (SIGKILL if it does not exit in time) + start + wait;
                     ``down`` (seconds, default 0): how long the node stays stopped
                     before it starts again -- an Apache Kafka broker takes seconds to
                     minutes to restart (JVM, log recovery), the embedded node about one
rolling-restart      restart (with ``down``) each target in turn (default all brokers,
                     active controller last), waiting after each until every partition's
                     ISR is full again (brokers) or the quorum has a leader (controllers)
isolate              cut targets from ``from`` = everyone (default: other nodes and
                     clients) | nodes | controllers | brokers | clients | zookeeper (the
                     whole ensemble; ZooKeeper mode only) | a target spec;
                     ``one_way``: the targets cannot hear them, they still hear targets
partition            target = halves | bridge | "1,2|3,4" (components); ``nodes`` =
                     target spec of the nodes taking part (default all)
loss                 drop ``probability`` of packets the targets receive (``from``)
bandwidth            tbf: ``rate`` (e.g. 1mbit), ``burst``, ``latency``
latency              netem ``delay`` (e.g. 100ms) ``jitter`` -- refused where the kernel
                     has no netem (this machine)
heal                 remove every network fault
power-loss           SIGKILL the targets together, cut every segment and index file to
                     what each node had fsynced (its durability journal), start them
                     again (after ``down`` seconds) and wait until they serve
corrupt-log          SIGKILL, damage the log dir (``damage``: torn-tail | crc |
                     missing-index | truncated-index | missing-checkpoints; ``log``
                     e.g. orders-0, default every partition with data), start, wait
read-only-logdir     chattr +i on the log dir while the node runs; waits (``timeout``,
                     default 30 s) for the node to halt on its next write, then makes
                     the dir writable again and leaves the node stopped
disk-full            restart the node with its log dir on a tmpfs with ``free`` bytes
                     left (default 1MiB), wait (``timeout``) for it to halt when they
                     fill, copy the files back; the node is left stopped
===================  =================================================================

ZooKeeper servers (targets ``zookeeper:N``, ``zk-leader``, ``minority-zookeepers``, ...)
take every process fault through `cluster.ensemble`: kill, terminate (a server exits at
once: it has nothing to hand over), pause / resume, start and restart (the same zoo.cfg;
"started" means serving again as leader or follower, which needs a quorum to join, so a
lone server started into a lost ensemble ends "info"), rolling-restart (waiting after each
server until the ensemble has a leader and a majority). In netns mode they take the
network faults too: a server's id is its host id (4000 + N), so grudges name it like a
node, and ``from: everyone`` (or ``nodes``) includes the ensemble, so an isolated broker
is cut from ZooKeeper as a real node's network cut would. Targetless ``resume``,
``start`` and `teardown` cover the ensemble, starting it before the nodes as Kafka's
documentation does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..cluster import zookeeper as zk
from ..cluster.ensemble import Ensemble
from ..cluster.launcher import DURABILITY_JOURNAL
from ..cluster.state import ClusterState
from ..cluster.supervisor import Supervisor, SupervisorError
from ..cluster.wire import PartitionMetadata, WireClient, WireError
from . import grudge as grudges
from . import storage as storage_faults
from .control import NodeControl
from .kinds import (
    ACTIONS,
    EXTERNAL_NETWORK,
    FROM_GROUPS,
    FROM_ZOOKEEPER_KRAFT,
    NETWORK_ACTIONS,
    PROCESS_ACTIONS,
    STORAGE_ACTIONS,
)
from .netns import FaultRefused, NetworkFaults
from .targets import (
    Snapshot,
    TargetError,
    describe_id,
    parse,
    resolve,
    take_snapshot,
    zookeeper_host,
    zookeeper_server,
)

# What a broker logs when its controlled shutdown ends, in KRaft mode and (second) in
# ZooKeeper mode, where the controller is asked over the wire with retries.
SHUTDOWN_APPROVED = (
    "The controller has asked us to exit controlled shutdown",
    "Controlled shutdown request returned successfully",
)
SHUTDOWN_TIMED_OUT = (
    "Timed out waiting for the controller to approve controlled shutdown",
    "Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed",
)

EventCallback = Callable[[str, dict[str, Any]], None]


@dataclasses.dataclass(frozen=True)
class Fault:
    """What to do: an action, a target spec (see targets.py) and action params."""

    action: str
    target: str | None = None
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "target": self.target, "params": dict(self.params)}


@dataclasses.dataclass
class FaultResult:
    """What happened: the history event's value (`value()`)."""

    action: str
    target: str | None
    nodes: tuple[int, ...]  # targets as resolved at fault time
    start: float  # wall clock (time.time())
    end: float
    outcome: str  # ok | fail | info
    message: str
    details: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def duration(self) -> float:
        return max(0.0, self.end - self.start)

    def value(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "target": self.target,
            "nodes": list(self.nodes),
            "outcome": self.outcome,
            "message": self.message,
            "start": round(self.start, 6),
            "end": round(self.end, 6),
            "duration_s": round(self.duration, 3),
            **self.details,
        }

    def to_json(self) -> str:
        return json.dumps(self.value(), default=str, sort_keys=False)


class _Failed(Exception):
    """Internal: the fault certainly did not happen (outcome fail)."""


class _Indeterminate(Exception):
    """Internal: the fault may or may not have fully happened (outcome info)."""


class Nemesis:
    """Faults on the cluster recorded in `state`, through `supervisor` (made from the
    state when not given). Pass `rng` or `seed` for repeatable random targets.

    A cluster the lab did not start has no state: pass None and, as `supervisor`, a
    `NodeControl` that acts on its nodes (faults.external.ExternalControl), with
    `bootstrap`, its bootstrap servers, asked for Metadata after the running brokers.
    Network faults are then refused."""

    def __init__(
        self,
        state: ClusterState | None,
        supervisor: NodeControl | None = None,
        *,
        rng: random.Random | None = None,
        seed: int | None = None,
        on_event: EventCallback | None = None,
        request_timeout: float = 2.0,
        terminate_timeout: float = 30.0,
        start_timeout: float = 60.0,
        rejoin_timeout: float = 60.0,
        bootstrap: str | None = None,
    ) -> None:
        self.state = state
        if supervisor is None:
            assert state is not None, "a cluster without state needs its NodeControl"
            supervisor = Supervisor(state)
        self.supervisor: NodeControl = supervisor
        self.topology = self.supervisor.topology
        # Without state (an external cluster) the topology has no ZooKeeper servers, so
        # the ensemble is empty and never reads the state.
        self.ensemble = Ensemble(state, self.topology)  # type: ignore[arg-type]
        self.bootstrap = [a.strip() for a in (bootstrap or "").split(",") if a.strip()]
        self.rng = rng if rng is not None else random.Random(seed)
        self.on_event = on_event
        self.request_timeout = request_timeout
        self.terminate_timeout = terminate_timeout
        self.start_timeout = start_timeout
        self.rejoin_timeout = rejoin_timeout
        self._network: NetworkFaults | None = None

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def network_capable(self) -> bool:
        return self.state is not None and self.state.request.netns

    def network(self) -> NetworkFaults:
        """The lab's network faults; FaultRefused with the reason when not possible."""
        if self.state is None:
            raise FaultRefused(EXTERNAL_NETWORK)
        if self._network is None:
            self._network = NetworkFaults.for_cluster(self.state)
        return self._network

    def setup(self) -> None:
        """Check the lab and heal leftovers of an earlier run (network faults only in
        netns mode; process faults always work)."""
        if self.network_capable:
            net = self.network()
            net.check_ready()
            net.heal()

    def heal(self) -> FaultResult:
        return self.invoke(Fault("heal"))

    def teardown(self, start_stopped: bool = True) -> list[FaultResult]:
        """Leave the cluster whole: heal the network, resume paused nodes, start stopped
        ones (when `start_stopped`)."""
        results = []
        if self.network_capable:
            results.append(self.heal())
        if any(self.process_state(n) == "paused" for n in self._everything()):
            results.append(self.invoke(Fault("resume")))
        if start_stopped and any(self.process_state(n) == "stopped" for n in self._everything()):
            results.append(self.invoke(Fault("start")))
        return results

    # -- targets -----------------------------------------------------------------------

    def _all(self) -> list[int]:
        return [n.node_id for n in self.topology.nodes]

    def _zookeepers(self) -> list[int]:
        """Every ZooKeeper server, as the ids targets resolve them to."""
        return [zookeeper_host(i) for i in self.ensemble.server_ids]

    def _everything(self) -> list[int]:
        """ZooKeeper servers first: the order to start them in."""
        return self._zookeepers() + self._all()

    def process_state(self, target_id: int) -> str:
        """ "running", "paused" or "stopped", for a node or a ZooKeeper server."""
        server = zookeeper_server(target_id)
        if server is None:
            return self.supervisor.process_state(target_id)
        return self.ensemble.process_state(server)

    def _is_broker(self, target_id: int) -> bool:
        return zookeeper_server(target_id) is None and self.topology.node(target_id).is_broker

    def snapshot(self, spec: str | None = None, topics: list[str] | None = None) -> Snapshot:
        need = [parse(spec)] if spec else []
        return self._take_snapshot(need, topics)

    def resolve(self, spec: str) -> tuple[int, ...]:
        target = parse(spec)
        return resolve(target, self._take_snapshot([target]), self.rng)

    def _take_snapshot(self, need: list[Any], topics: list[str] | None = None) -> Snapshot:
        if self.state is not None:
            return take_snapshot(self.state, need=need, timeout=self.request_timeout,
                                 topics=topics)
        controllers = [
            c.controller_address
            for c in self.topology.controllers
            if c.controller_address and self.supervisor.process_state(c.node_id) == "running"
        ]
        return take_snapshot(None, need=need, timeout=self.request_timeout, topics=topics,
                             topology=self.topology, broker_addresses=self._broker_addresses(),
                             controller_addresses=controllers)

    # -- invoke ------------------------------------------------------------------------

    def _emit(self, kind: str, value: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(kind, value)

    def invoke(self, fault: Fault | str, target: str | None = None, *,
               target_wait: float = 0.0, **params: Any) -> FaultResult:
        """Do `fault` now (or `invoke("kill", "2")`); never raises for a refused or
        failed fault: the result's outcome and message say what happened. With
        `target_wait`, a target that does not exist yet (no active controller while a
        quorum elects one) is looked up again for up to that many seconds."""
        if isinstance(fault, str):
            fault = Fault(fault, target, params)
        start = time.time()
        details: dict[str, Any] = {}
        if fault.params:
            details["params"] = dict(fault.params)
        nodes: tuple[int, ...] = ()
        try:
            if fault.action not in ACTIONS:
                raise _Failed(f"unknown fault {fault.action!r} (one of {', '.join(ACTIONS)})")
            nodes = self._targets_within(fault, target_wait)
            if fault.action in PROCESS_ACTIONS:
                self.supervisor.check_action(fault.action, nodes)
        except (_Failed, TargetError, FaultRefused) as e:
            result = FaultResult(
                fault.action, fault.target, nodes, start, time.time(), "fail", str(e), details
            )
            self._emit("invoke", {**result.value(), "outcome": "invoke"})
            self._emit("fail", result.value())
            return result
        invoked = FaultResult(
            fault.action, fault.target, nodes, start, start, "invoke", "", dict(details)
        )
        self._emit("invoke", invoked.value())
        handler = getattr(self, "_do_" + fault.action.replace("-", "_"))
        try:
            message = handler(fault, nodes, details)
            outcome = "ok"
        except (_Failed, FaultRefused, TargetError) as e:
            outcome, message = "fail", str(e)
        except _Indeterminate as e:
            outcome, message = "info", str(e)
        except (SupervisorError, WireError, OSError) as e:
            outcome, message = "info", f"{type(e).__name__}: {e}"
        commands = self.supervisor.take_commands()
        if commands:
            details["commands"] = commands
            message += _failed_commands(commands)
        result = FaultResult(
            fault.action, fault.target, nodes, start, time.time(), outcome, message, details
        )
        self._emit(outcome, result.value())
        return result

    def _targets_within(self, fault: Fault, wait: float) -> tuple[int, ...]:
        deadline = time.monotonic() + wait
        while True:
            try:
                return self._targets(fault)
            except TargetError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    def _targets(self, fault: Fault) -> tuple[int, ...]:
        action, spec = fault.action, fault.target
        if action in NETWORK_ACTIONS:
            self.network()  # refuse early: loopback mode, no root, no iptables
        if action == "heal":
            return ()
        if action == "partition":
            return ()  # nodes are those of the grudge, filled in by _do_partition
        if spec is None or spec == "":
            if action == "resume":
                return tuple(n for n in self._everything() if self.process_state(n) == "paused")
            if action == "start":
                return tuple(n for n in self._everything() if self.process_state(n) == "stopped")
            if action == "rolling-restart":
                spec = "all-brokers"
            else:
                raise _Failed(f"{action} needs a target")
        nodes = self.resolve(spec)
        if action == "rolling-restart":
            nodes = self._rolling_order(nodes)
        return nodes

    def _rolling_order(self, nodes: Iterable[int]) -> tuple[int, ...]:
        """ZooKeeper servers (their leader last), then brokers by id, then controllers;
        the active controller (if among them) last."""
        nodes = list(nodes)
        leaders = set()
        if any(zookeeper_server(n) is None for n in nodes):
            with contextlib.suppress(TargetError, WireError):
                leaders.add(self.resolve("active-controller")[0])
        if any(zookeeper_server(n) is not None for n in nodes):
            with contextlib.suppress(TargetError):
                leaders.add(self.resolve("zk-leader")[0])

        def key(n: int) -> tuple[bool, bool, bool, int]:
            node = zookeeper_server(n) is None
            return (node, n in leaders, node and not self.topology.node(n).is_broker, n)

        return tuple(sorted(nodes, key=key))

    # -- waiting -----------------------------------------------------------------------

    def _broker_addresses(self) -> list[str]:
        running = [
            b.broker_address
            for b in self.topology.brokers
            if b.broker_address and self.supervisor.process_state(b.node_id) == "running"
        ]
        return list(dict.fromkeys(running + self.bootstrap))

    def _poll(self, what: Callable[[WireClient], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            for address in self._broker_addresses():
                try:
                    with WireClient(address, self.request_timeout) as client:
                        if what(client):
                            return True
                    break
                except (WireError, OSError):
                    continue
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)

    def wait_registered(self, node_ids: Iterable[int], timeout: float) -> bool:
        """Every broker in `node_ids` is listed by Metadata (registered and unfenced)."""
        wanted = {n for n in node_ids if self._is_broker(n)}
        if not wanted:
            return True
        return self._poll(lambda c: wanted <= set(c.metadata().broker_ids), timeout)

    def wait_isr_full(self, timeout: float, topics: list[str] | None = None) -> bool:
        """Every partition (of `topics`; None: of every topic) has a leader and its ISR
        holds every replica."""

        def full(client: WireClient) -> bool:
            md = client.topic_metadata(topics)
            return all(p.leader >= 0 and set(p.replicas) <= set(p.isr) for p in md.partitions)

        return self._poll(full, timeout)

    def wait_quorum(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        addresses = [c.controller_address for c in self.topology.controllers]
        if not any(addresses):  # an external cluster's controllers may have no address:
            addresses = self._broker_addresses()  # brokers forward DescribeQuorum
        while time.monotonic() < deadline:
            for address in addresses:
                with (
                    contextlib.suppress(WireError, OSError),
                    WireClient(str(address), self.request_timeout) as client,
                ):
                    if client.describe_quorum().leader_id >= 0:
                        return True
            time.sleep(0.2)
        return False

    def wait_ensemble(self, server_ids: Iterable[int], timeout: float) -> bool:
        """The ensemble has a leader and a majority, and each of `server_ids` serves."""
        wanted = set(server_ids)
        deadline = time.monotonic() + timeout
        while True:
            statuses = self.ensemble.statuses(timeout=self.request_timeout)
            quorum = zk.ensemble_quorum(statuses)
            if quorum.has_quorum and all(statuses[i].serving for i in wanted):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)

    def partitions(self) -> list[PartitionMetadata]:
        """Every partition as the first answering broker sees it ([] when none does)."""
        for address in self._broker_addresses():
            with (
                contextlib.suppress(WireError, OSError),
                WireClient(address, self.request_timeout) as client,
            ):
                return list(client.topic_metadata(None).partitions)
        return []

    def _led_by(self, nodes: Iterable[int]) -> dict[int, list[str]]:
        """Partitions led by each of `nodes` right now (empty when nobody answers)."""
        out: dict[int, list[str]] = {n: [] for n in nodes}
        for p in self.partitions():
            if p.leader in out:
                out[p.leader].append(f"{p.topic}-{p.partition}")
        return out

    # -- process faults ----------------------------------------------------------------

    def _how(self, signal_name: str, command: str) -> str:
        """How a process fault was done, for its message: the lab's signal, or an
        external cluster's command from the nodes file."""
        return signal_name if self.state is not None else f"`{command}` command"

    def _do_kill(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        killed = [n for n in nodes if self._kill(n)]
        details["killed"] = killed
        details["not_running"] = [n for n in nodes if n not in killed]
        if not killed:
            raise _Failed(f"node(s) {_ids(nodes)} not running: nothing killed")
        how = self._how("SIGKILL", "kill")
        return f"{how}: node(s) {_ids(killed)} gone" + _not_running(details)

    def _kill(self, target_id: int) -> bool:
        server = zookeeper_server(target_id)
        if server is None:
            return self.supervisor.kill_node(target_id)
        return self.ensemble.kill_server(server)

    def _terminate(
        self, targets: Iterable[int], details: dict[str, Any], timeout: float
    ) -> tuple[list[int], list[int]]:
        targets = list(targets)
        nodes = [n for n in targets if zookeeper_server(n) is None]
        servers = [n for n in targets if zookeeper_server(n) is not None]
        brokers = [n for n in nodes if self._is_broker(n)]
        led_before = self._led_by(brokers) if brokers else {}
        offsets = {n: self.supervisor.log_offset(n) for n in nodes}
        outcome: dict[int, bool | None] = {}
        # Nodes before servers: a ZooKeeper-mode broker's controlled shutdown goes
        # through ZooKeeper.
        if nodes:
            outcome.update(self.supervisor.terminate_nodes(nodes, timeout))
        if servers:
            by_server = self.ensemble.terminate_servers([_server_id(n) for n in servers], timeout)
            outcome.update({zookeeper_host(i): v for i, v in by_server.items()})
        exited = [n for n, v in outcome.items() if v is True]
        stuck = [n for n, v in outcome.items() if v is False]
        details["not_running"] = [n for n, v in outcome.items() if v is None]
        details["exited"] = exited
        details["still_running"] = stuck
        shutdown = {}
        for n in brokers:
            text = self.supervisor.log_since(n, offsets[n])
            if any(line in text for line in SHUTDOWN_APPROVED):
                shutdown[str(n)] = "approved"
            elif any(line in text for line in SHUTDOWN_TIMED_OUT):
                shutdown[str(n)] = "timed out"
            elif outcome.get(n) is not None:
                shutdown[str(n)] = "unknown"
        if shutdown:
            details["controlled_shutdown"] = shutdown
        if led_before:
            details["led_before"] = {str(k): v for k, v in led_before.items()}
        return exited, stuck

    def _do_terminate(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        timeout = float(fault.params.get("timeout", self.terminate_timeout))
        exited, stuck = self._terminate(nodes, details, timeout)
        if exited and any(self._is_broker(n) for n in exited):
            still = self._led_by(exited)
            details["still_leading"] = {str(k): v for k, v in still.items() if v}
        if stuck:
            sent = "SIGTERM sent" if self.state is not None else "`terminate` command run"
            raise _Indeterminate(
                f"{sent}, but node(s) {_ids(stuck)} did not exit within {timeout:g}s "
                "(for a broker: controlled shutdown not approved?); still running"
            )
        if not exited:
            raise _Failed(f"node(s) {_ids(nodes)} not running: nothing terminated")
        cs = details.get("controlled_shutdown", {})
        note = ""
        if cs:
            note = "; controlled shutdown " + ", ".join(f"{k}: {v}" for k, v in cs.items())
        how = self._how("SIGTERM", "terminate")
        return f"{how}: node(s) {_ids(exited)} exited{note}" + _not_running(details)

    def _do_pause(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        paused = [n for n in nodes if self._pause(n)]
        details["paused"] = paused
        details["not_running"] = [n for n in nodes if n not in paused]
        if not paused:
            raise _Failed(f"node(s) {_ids(nodes)} not running: nothing paused")
        how = self._how("SIGSTOP", "pause")
        return f"{how}: node(s) {_ids(paused)} paused" + _not_running(details)

    def _pause(self, target_id: int) -> bool:
        server = zookeeper_server(target_id)
        if server is None:
            return self.supervisor.pause(target_id)
        return self.ensemble.pause(server)

    def _resume(self, target_id: int) -> bool:
        server = zookeeper_server(target_id)
        if server is None:
            return self.supervisor.resume(target_id)
        return self.ensemble.resume(server)

    def _do_resume(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        # A group target (all-zookeepers, all) names running ones too: SIGCONT does them
        # no harm, but only the paused ones are reported as resumed.
        paused = {n for n in nodes if self.process_state(n) == "paused"}
        signalled = [n for n in nodes if self._resume(n)]
        resumed = [n for n in signalled if n in paused]
        details["resumed"] = resumed
        details["not_paused"] = [n for n in signalled if n not in paused]
        if not resumed:
            if not nodes:
                return "no paused node to resume"
            if signalled:
                return f"node(s) {_ids(signalled)} not paused: nothing resumed"
            return f"node(s) {_ids(nodes)} not running: nothing resumed"
        return f"{self._how('SIGCONT', 'resume')}: node(s) {_ids(resumed)} resumed"

    def _start(self, nodes: Iterable[int], details: dict[str, Any]) -> list[int]:
        nodes = list(nodes)
        servers = [n for n in nodes if zookeeper_server(n) is not None]
        started = self._start_zookeepers(servers, details)
        for n in nodes:
            if zookeeper_server(n) is not None:
                continue
            if self.supervisor.process_state(n) != "stopped":
                details.setdefault("already_running", []).append(n)
                continue
            self.supervisor.start_node(n, timeout=self.start_timeout)
            started.append(n)
        if started and not self.wait_registered(started, self.rejoin_timeout):
            raise _Indeterminate(
                f"node(s) {_ids(started)} started but not back in Metadata after "
                f"{self.rejoin_timeout:g}s"
            )
        return started

    def _start_zookeepers(self, targets: list[int], details: dict[str, Any]) -> list[int]:
        """Start the stopped servers among `targets` together, then wait until they
        serve: one at a time could never serve when only together they make a quorum."""
        started = []
        for n in targets:
            if self.process_state(n) != "stopped":
                details.setdefault("already_running", []).append(n)
                continue
            self.ensemble.start_server(_server_id(n), wait=False)
            started.append(n)
        if started and not self.wait_ensemble(
            [_server_id(n) for n in started], self.rejoin_timeout
        ):
            raise _Indeterminate(
                f"ZooKeeper server(s) {_ids(started)} started but not serving after "
                f"{self.rejoin_timeout:g}s (no majority to join?)"
            )
        return started

    def _do_start(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        t0 = time.monotonic()
        started = self._start(nodes, details)
        details["started"] = started
        details["serving_after_s"] = round(time.monotonic() - t0, 3)
        if not started:
            return "nothing to start: " + (
                f"node(s) {_ids(nodes)} already running" if nodes else "every node is running"
            )
        return f"started node(s) {_ids(started)}; serving after {details['serving_after_s']}s"

    def _restart_one(
        self, node: int, details: dict[str, Any], timeout: float, down: float
    ) -> dict[str, Any]:
        step: dict[str, Any] = {"node": node}
        t0 = time.monotonic()
        sub: dict[str, Any] = {}
        _exited, stuck = self._terminate([node], sub, timeout)
        step["controlled_shutdown"] = sub.get("controlled_shutdown", {}).get(str(node))
        if stuck:
            self._kill(node)
            step["killed_after_timeout"] = True
        if down > 0:
            time.sleep(down)
        step["down_s"] = round(time.monotonic() - t0, 3)
        self._start([node], {})
        step["serving_after_s"] = round(time.monotonic() - t0, 3)
        return step

    def _do_restart(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        timeout = float(fault.params.get("timeout", self.terminate_timeout))
        down = _down(fault)
        steps = []
        details["steps"] = steps
        for node in nodes:
            steps.append(self._restart_one(node, details, timeout, down))
        return "restarted node(s) " + ", ".join(
            f"{describe_id(s['node'])} (serving after {s['serving_after_s']}s)" for s in steps
        )

    def _do_rolling_restart(
        self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]
    ) -> str:
        timeout = float(fault.params.get("timeout", self.terminate_timeout))
        down = _down(fault)
        steps: list[dict[str, Any]] = []
        details["order"] = list(nodes)
        details["steps"] = steps
        for node in nodes:
            t0 = time.monotonic()
            step = self._restart_one(node, details, timeout, down)
            steps.append(step)
            if zookeeper_server(node) is not None:
                ok = self.wait_ensemble([], self.rejoin_timeout)
                what = "the ZooKeeper ensemble has a leader and a majority"
            elif self._is_broker(node):
                ok = self.wait_isr_full(self.rejoin_timeout)
                what = "every partition's ISR full again"
            else:
                ok = self.wait_quorum(self.rejoin_timeout)
                what = "the quorum has a leader"
            step["rejoined_after_s"] = round(time.monotonic() - t0, 3)
            if not ok:
                raise _Indeterminate(
                    f"rolling restart stopped after node {describe_id(node)}: not {what} within "
                    f"{self.rejoin_timeout:g}s"
                )
        return "rolling restart of " + ", ".join(
            f"{describe_id(s['node'])} ({s['rejoined_after_s']}s)" for s in steps
        )

    # -- storage faults ----------------------------------------------------------------

    def _lab_node_dirs(self, nodes: tuple[int, ...]) -> dict[int, tuple[Path, Path]]:
        """(log dir, durability journal) of each node; refused outside the lab."""
        if self.state is None or self.topology.request.distribution:
            raise _Failed(
                "storage faults act on the files of Brownout nodes the lab started itself "
                "(not an external cluster, not an Apache Kafka distribution)")
        out = {}
        for n in nodes:
            if zookeeper_server(n) is not None:
                raise _Failed(f"{describe_id(n)} is a ZooKeeper server: storage faults "
                              "target nodes")
            out[n] = (Path(self.state.nodes[n].data_dir),
                      self.topology.node(n).directory / DURABILITY_JOURNAL)
        return out

    def _do_power_loss(self, fault: Fault, nodes: tuple[int, ...],
                       details: dict[str, Any]) -> str:
        dirs = self._lab_node_dirs(nodes)
        down = _down(fault)
        killed = [n for n in nodes if self._kill(n)]
        details["killed"] = killed
        details["killed_at"] = round(time.time(), 6)
        if not killed:
            raise _Failed(f"node(s) {_ids(nodes)} not running: no power to lose")
        lost: dict[str, int] = {}
        files: dict[str, int] = {}
        try:
            for n in killed:
                log_dir, journal = dirs[n]
                cut = storage_faults.power_loss(journal, [log_dir])
                lost[str(n)] = sum(cut.values())
                files[str(n)] = len(cut)
        except (storage_faults.StorageFaultError, ValueError) as e:
            raise _Indeterminate(f"killed node(s) {_ids(killed)}, but: {e}") from None
        finally:
            details["bytes_lost"] = lost
            details["files_cut"] = files
        if down > 0:
            time.sleep(down)
        self._start(killed, details)
        return (f"power lost on node(s) {_ids(killed)}: unflushed bytes dropped "
                + ", ".join(f"{k}: {v}" for k, v in lost.items()) + "; serving again")

    def _do_corrupt_log(self, fault: Fault, nodes: tuple[int, ...],
                        details: dict[str, Any]) -> str:
        dirs = self._lab_node_dirs(nodes)
        damage = str(fault.params.get("damage", "crc"))
        if damage not in storage_faults.DAMAGE:
            raise _Failed(f"damage must be one of {', '.join(storage_faults.DAMAGE)}, "
                          f"got {damage!r}")
        partition = fault.params.get("log")
        down = _down(fault)
        killed = [n for n in nodes if self._kill(n)]
        details["killed"] = killed
        if not killed:
            raise _Failed(f"node(s) {_ids(nodes)} not running: nothing to corrupt")
        done: dict[str, list[str]] = {}
        details["damaged"] = done
        for n in killed:
            try:
                done[str(n)] = storage_faults.corrupt(
                    dirs[n][0], damage, None if partition is None else str(partition))
            except storage_faults.StorageFaultError as e:
                self._start(killed, {})
                raise _Indeterminate(f"node {describe_id(n)} killed but not damaged: {e}; "
                                     "started again") from None
        if down > 0:
            time.sleep(down)
        self._start(killed, details)
        return (f"{damage} on node(s) {_ids(killed)} "
                f"({sum(len(v) for v in done.values())} file(s)); serving again")

    def _wait_stopped(self, node: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.supervisor.process_state(node) != "stopped":
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def _do_read_only_logdir(self, fault: Fault, nodes: tuple[int, ...],
                             details: dict[str, Any]) -> str:
        dirs = self._lab_node_dirs(nodes)
        timeout = float(fault.params.get("timeout", self.terminate_timeout))
        running = [n for n in nodes if self.process_state(n) == "running"]
        if not running:
            raise _Failed(f"node(s) {_ids(nodes)} not running")
        t0 = time.monotonic()
        halted: dict[str, float | None] = {}
        details["halted_after_s"] = halted
        try:
            for n in running:
                storage_faults.set_read_only(dirs[n][0])
            for n in running:
                ok = self._wait_stopped(n, max(0.0, timeout - (time.monotonic() - t0)))
                halted[str(n)] = round(time.monotonic() - t0, 3) if ok else None
        except storage_faults.StorageFaultError as e:
            raise _Failed(str(e)) from None
        finally:
            for n in running:
                storage_faults.clear_read_only(dirs[n][0])
        stuck = [int(k) for k, v in halted.items() if v is None]
        if stuck:
            raise _Indeterminate(
                f"log dir of node(s) {_ids(stuck)} read-only for {timeout:g}s but the node "
                "did not halt (nothing written meanwhile?); writable again, still running")
        return (f"log dir of node(s) {_ids(running)} made read-only: halted after "
                + ", ".join(f"{k}: {v}s" for k, v in halted.items())
                + "; left stopped, dir writable again")

    def _do_disk_full(self, fault: Fault, nodes: tuple[int, ...],
                      details: dict[str, Any]) -> str:
        dirs = self._lab_node_dirs(nodes)
        if len(nodes) != 1:
            raise _Failed("disk-full takes one node")
        (n,) = nodes
        free = _size(fault.params.get("free", "1MiB"))
        timeout = float(fault.params.get("timeout", self.terminate_timeout))
        if not self._kill(n):
            raise _Failed(f"node {describe_id(n)} not running")
        t0 = time.monotonic()
        try:
            with storage_faults.small_disk(dirs[n][0], free) as size:
                details["tmpfs_bytes"] = size
                # Not waiting until it serves: it may fill the disk while catching up,
                # and halting then is the point.
                self.supervisor.start_node(n, timeout=self.start_timeout, wait=False)
                halted = self._wait_stopped(n, timeout)
                if not halted:
                    self._kill(n)
        except storage_faults.StorageFaultError as e:
            if self.process_state(n) == "stopped":
                self._start([n], {})
            raise _Failed(str(e)) from None
        details["halted_after_s"] = round(time.monotonic() - t0, 3) if halted else None
        if not halted:
            raise _Indeterminate(
                f"node {describe_id(n)} ran {timeout:g}s with {free} bytes free without "
                "filling them; killed, files copied back, left stopped")
        return (f"node {describe_id(n)} restarted with {free} bytes free in its log dir and "
                f"halted when they filled ({details['halted_after_s']}s); files copied back, "
                "left stopped")

    # -- network faults ----------------------------------------------------------------

    def _group(self, spec: str, targets: tuple[int, ...]) -> tuple[set[int], bool]:
        """(the nodes `from` names, whether clients are among them)."""
        everyone = set(self._everything())
        if spec == "everyone":
            return everyone - set(targets), True
        if spec == "nodes":
            return everyone - set(targets), False
        if spec == "clients":
            return set(), True
        if spec == "zookeeper":
            if not self.topology.request.zookeeper_mode:
                raise _Failed(FROM_ZOOKEEPER_KRAFT)
            return set(self._zookeepers()) - set(targets), False
        if spec == "controllers" and self.topology.request.zookeeper_mode:
            # No controller nodes: the controller is the broker holding /controller.
            return set(self.resolve("active-controller")) - set(targets), False
        if spec == "controllers":
            return {n.node_id for n in self.topology.controllers} - set(targets), False
        if spec == "brokers":
            return {n.node_id for n in self.topology.brokers} - set(targets), False
        return set(self.resolve(spec)) - set(targets), False

    def _do_isolate(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        source = str(fault.params.get("from") or "everyone")
        one_way = bool(fault.params.get("one_way", False))
        group, clients = self._group(source, nodes)
        if clients:
            group.add(grudges.CLIENTS)
        if not group:
            raise _Failed(f"isolate {_ids(nodes)} from {source}: nobody to cut them from")
        g = grudges.one_way(nodes, group) if one_way else grudges.cut(nodes, group)
        self.network().apply_grudge(g)
        details["from"] = source
        details["one_way"] = one_way
        details["isolated"] = list(nodes)
        details["grudge"] = grudges.to_json(g)
        arrow = "cannot hear" if one_way else "cut from"
        return f"node(s) {_ids(nodes)} {arrow} {source}: " + "; ".join(grudges.describe(g))

    def _do_partition(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        kind = (fault.target or "halves").strip()
        members = self.resolve(str(fault.params.get("nodes") or "all"))
        if kind == "halves":
            g = grudges.halves(members, self.rng)
        elif kind == "bridge":
            g = grudges.bridge(members, self.rng)
        else:
            try:
                comps = grudges.parse_components(kind)
            except ValueError as e:
                raise _Failed(f"partition {e}; or use halves | bridge") from None
            unknown = {n for c in comps for n in c} - set(self._everything()) - {grudges.CLIENTS}
            if unknown:
                raise _Failed(f"partition {kind}: no node {_ids(sorted(unknown))} here")
            g = grudges.complete(comps)
        if not g:
            raise _Failed(f"partition {kind} of {_ids(members)} cuts nothing")
        self.network().apply_grudge(g)
        involved = sorted({n for n in g} | {m for v in g.values() for m in v} - {grudges.CLIENTS})
        details["grudge"] = grudges.to_json(g)
        details["isolated"] = grudges.isolated_nodes(g, members)
        details["partitioned"] = [n for n in involved if n != grudges.CLIENTS]
        return f"partition {kind}: " + "; ".join(grudges.describe(g))

    def _do_loss(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        probability = float(fault.params.get("probability", 0.1))
        source = fault.params.get("from")
        sources: set[int] = set()
        if source:
            group, clients = self._group(str(source), nodes)
            sources = group | ({grudges.CLIENTS} if clients else set())
        self.network().loss(nodes, probability, sources)
        details["probability"] = probability
        details["from"] = source or "everyone"
        return (
            f"node(s) {_ids(nodes)} drop {probability:.0%} of packets received from "
            f"{source or 'everyone'}"
        )

    def _do_bandwidth(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        rate = str(fault.params.get("rate", "1mbit"))
        burst = str(fault.params.get("burst", "32kbit"))
        latency = str(fault.params.get("latency", "400ms"))
        self.network().bandwidth(nodes, rate, burst, latency)
        details.update(rate=rate, burst=burst)
        return f"node(s) {_ids(nodes)} limited to {rate} each way (tbf)"

    def _do_latency(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        delay = str(fault.params.get("delay", "100ms"))
        jitter = fault.params.get("jitter")
        self.network().latency(nodes, delay, str(jitter) if jitter else None)
        details["delay"] = delay
        return f"node(s) {_ids(nodes)} delayed by {delay} (netem)"

    def _do_heal(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        net = self.network()
        before = net.rules()
        net.heal()
        details["removed_rules"] = sum(len(v) for v in before.values())
        return f"network healed ({details['removed_rules']} rule(s) removed, qdiscs cleared)"


def _down(fault: Fault) -> float:
    """The ``down`` param of a restart: seconds a node stays stopped (>= 0)."""
    raw = fault.params.get("down", 0.0)
    try:
        down = float(raw)
    except (TypeError, ValueError):
        raise _Failed(f"down must be a number of seconds, got {raw!r}") from None
    if down < 0:
        raise _Failed(f"down must be >= 0 seconds, got {down:g}")
    return down


def _server_id(target_id: int) -> int:
    server = zookeeper_server(target_id)
    assert server is not None, f"{target_id} is not a ZooKeeper server"
    return server


def _size(raw: Any) -> int:
    """A byte count: bytes, or a number with KiB / MiB / GiB (k, m, g also)."""
    text = str(raw).strip()
    units = {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1 << 10, "m": 1 << 20,
             "g": 1 << 30}
    for suffix, factor in sorted(units.items(), key=lambda kv: -len(kv[0])):
        if text.lower().endswith(suffix) and text[: -len(suffix)].strip().isdigit():
            return int(text[: -len(suffix)]) * factor
    if text.isdigit():
        return int(text)
    raise _Failed(f"free must be bytes or a number with KiB, MiB or GiB, got {raw!r}")


def _ids(nodes: Iterable[int]) -> str:
    return ", ".join(map(describe_id, nodes)) or "none"


def _failed_commands(commands: list[dict[str, Any]]) -> str:
    """What the message adds about commands that exited non-zero or timed out."""
    failed = []
    for c in commands:
        if c["status"] == 0:
            continue
        why = "timed out" if c["status"] is None else f"exit status {c['status']}"
        last = (c["output"].strip().splitlines() or [""])[-1][:200]
        failed.append(f"node {c['node']} {c['action']}: {why}{': ' + last if last else ''}")
    return f"; command(s) failed: {'; '.join(failed)}" if failed else ""


def _not_running(details: dict[str, Any]) -> str:
    missing = details.get("not_running") or []
    return f" (not running: {_ids(missing)})" if missing else ""


__all__ = [
    "ACTIONS",
    "EXTERNAL_NETWORK",
    "FROM_GROUPS",
    "FROM_ZOOKEEPER_KRAFT",
    "NETWORK_ACTIONS",
    "PROCESS_ACTIONS",
    "STORAGE_ACTIONS",
    "EventCallback",
    "Fault",
    "FaultRefused",
    "FaultResult",
    "Nemesis",
]
