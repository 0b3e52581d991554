"""The nemesis: Jepsen-style fault injection on a running cluster.

The fault kinds are registered in `faults.kinds`; each is carried out by the executor
of its family (faults/executors/: process, network, storage). The nemesis keeps the
lifecycle, the targets resolved at fault time and the history events.

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
import random
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..cluster.ensemble import Ensemble
from ..cluster.state import ClusterState
from ..cluster.supervisor import Supervisor, SupervisorError
from ..cluster.wire import PartitionMetadata, WireError
from .control import NodeControl
from .executors.network import NetworkExecutor, NetworkLayer
from .executors.process import ProcessExecutor, Timeouts
from .executors.storage import StorageExecutor
from .fault import Failed, Fault, FaultResult, Indeterminate
from .health import Health
from .kinds import (
    ACTIONS,
    EXTERNAL_NETWORK,
    FROM_GROUPS,
    FROM_ZOOKEEPER_KRAFT,
    KINDS,
    NETWORK,
    NETWORK_ACTIONS,
    PROCESS,
    PROCESS_ACTIONS,
    STORAGE,
    STORAGE_ACTIONS,
)
from .netns import FaultRefused, NetworkFaults
from .resolver import Resolver
from .targets import (
    Snapshot,
    TargetError,
    zookeeper_host,
    zookeeper_server,
)

EventCallback = Callable[[str, dict[str, Any]], None]


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
        self.health = Health(self.topology, self.supervisor, self.ensemble, self.bootstrap,
                             request_timeout)
        self.resolver = Resolver(state, self.topology, self.supervisor, self.health, self.rng,
                                 request_timeout)
        self._network = NetworkLayer(state)
        timeouts = Timeouts(terminate_timeout, start_timeout, rejoin_timeout)
        processes = ProcessExecutor(self.supervisor, self.ensemble, self.topology, self.health,
                                    timeouts, lab=state is not None)
        self.processes = processes
        # One executor per family of fault kinds (faults.kinds): a kind names its method.
        self.executors: dict[str, Any] = {
            PROCESS: processes,
            NETWORK: NetworkExecutor(self._network, self.topology, self.resolver, self.rng,
                                     self._everything(), self._zookeepers()),
            STORAGE: StorageExecutor(state, self.topology, self.supervisor, processes,
                                     timeouts),
        }

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def network_capable(self) -> bool:
        return self.state is not None and self.state.request.netns

    def network(self) -> NetworkFaults:
        """The lab's network faults; FaultRefused with the reason when not possible."""
        return self._network()

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
        return self.processes.process_state(target_id)

    def snapshot(self, spec: str | None = None, topics: list[str] | None = None) -> Snapshot:
        return self.resolver.snapshot(spec, topics)

    def resolve(self, spec: str) -> tuple[int, ...]:
        return self.resolver.resolve(spec)

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
                raise Failed(f"unknown fault {fault.action!r} (one of {', '.join(ACTIONS)})")
            nodes = self._targets_within(fault, target_wait)
            if fault.action in PROCESS_ACTIONS:
                self.supervisor.check_action(fault.action, nodes)
        except (Failed, TargetError, FaultRefused) as e:
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
        kind = KINDS[fault.action]
        handler = getattr(self.executors[kind.family], kind.run)
        try:
            message = handler(fault, nodes, details)
            outcome = "ok"
        except (Failed, FaultRefused, TargetError) as e:
            outcome, message = "fail", str(e)
        except Indeterminate as e:
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
                raise Failed(f"{action} needs a target")
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

    # -- waiting (the scenarios' stages wait on the cluster through the nemesis) --------

    def wait_registered(self, node_ids: Iterable[int], timeout: float) -> bool:
        """Every broker in `node_ids` is listed by Metadata (registered and unfenced)."""
        return self.health.wait_registered(node_ids, timeout)

    def wait_isr_full(self, timeout: float, topics: list[str] | None = None) -> bool:
        """Every partition (of `topics`; None: of every topic) has a leader and its ISR
        holds every replica."""
        return self.health.wait_isr_full(timeout, topics)

    def wait_quorum(self, timeout: float) -> bool:
        return self.health.wait_quorum(timeout)

    def wait_ensemble(self, server_ids: Iterable[int], timeout: float) -> bool:
        """The ensemble has a leader and a majority, and each of `server_ids` serves."""
        return self.health.wait_ensemble(server_ids, timeout)

    def partitions(self) -> list[PartitionMetadata]:
        """Every partition as the first answering broker sees it ([] when none does)."""
        return self.health.partitions()


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
