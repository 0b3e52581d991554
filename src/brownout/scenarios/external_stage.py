"""A scenario run on a cluster the lab did not start (`brownout run SCENARIO
--bootstrap-server HOST:PORT --nodes FILE`).

`check_external(scenario, nodes)` is pure: it refuses what cannot run there (network
faults, ZooKeeper servers as targets, targets naming nodes the file does not list,
process faults whose command a possible target lacks, topics with more replicas than
the file lists brokers) with the file, line and field, before anything is done, and
returns notes on what of the scenario's `cluster:` block is ignored: the cluster runs
as it is.

`ExternalClusterStage` takes the place of ClusterStage: nothing is built or torn down;
the scenario's topics are created on the cluster (an existing topic is refused unless
--reuse-topics, and then only with the scenario's partition count) and left there;
faults go through the nodes file's commands (faults/external.py). Node logs, configs and
event-loop stalls stay on the cluster's machines: <run>/external.json records what the
run talked to instead of <run>/nodes/.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..cluster.admin import Admin
from ..common.rundir import EXTERNAL_FILE
from ..faults import Nemesis
from ..faults.external import NEEDS, ExternalControl
from ..faults.kinds import NETWORK_ACTIONS, PROCESS_ACTIONS, STORAGE_ACTIONS
from ..faults.nemesis import EventCallback
from ..faults.nodes_file import NodesFile
from ..faults.targets import Target, TargetError
from ..faults.targets import parse as parse_target
from .cluster_stage import START_TIMEOUT, TOPICS_ISR_TIMEOUT, ClusterStage
from .progress import Progress
from .random_faults import KINDS, OWN_TARGET
from .schema import ClusterSpec, Scenario, ScenarioError

# Targets and the role of the nodes they may name (None: any node).
_BROKER_KINDS = ("leader", "coordinator", "random-broker", "minority-brokers",
                 "majority-brokers", "all-brokers")
_CONTROLLER_KINDS = ("random-controller", "minority-controllers", "majority-controllers",
                     "all-controllers", "active-controller")


# What the heal then needs for a node a fault stopped or paused.
_UNDO = {"kill": ("start",), "terminate": ("start",), "pause": ("resume",)}


def _candidates(target: Target, nodes: NodesFile) -> tuple[int, ...]:
    """Every node `target` could name on this cluster (ids: exactly those)."""
    if target.kind == "ids":
        return target.ids
    if target.kind in _BROKER_KINDS:
        return tuple(n.node_id for n in nodes.brokers)
    if target.kind in _CONTROLLER_KINDS:
        controllers = tuple(n.node_id for n in nodes.nodes if n.is_controller)
        # ZooKeeper mode, or a file without controllers: the controller is a broker
        return controllers or tuple(n.node_id for n in nodes.brokers)
    return tuple(n.node_id for n in nodes.nodes)


def _faults(scenario: Scenario) -> list[tuple[int, str, str, str | None]]:
    """(step index, field, action, target) of every fault the schedule can do, random
    steps' kinds and their undos included."""
    out: list[tuple[int, str, str, str | None]] = []
    for i, step in enumerate(scenario.schedule):
        if step.action == "random":
            spec = step.params["spec"]
            for kind in spec.faults:
                action, own, undo = KINDS[kind]
                targets = spec.targets if spec.targets and kind not in OWN_TARGET else (own,)
                out += [(i, f"{step.action}.faults", action, t) for t in targets]
                if undo is not None:
                    out.append((i, f"{step.action}.faults", undo, None))
        elif step.action in (*PROCESS_ACTIONS, *NETWORK_ACTIONS, *STORAGE_ACTIONS):
            out.append((i, step.action, step.action, step.target))
    return out


def check_external(scenario: Scenario, nodes: NodesFile, bootstrap: str) -> list[str]:
    """ScenarioError for what this scenario cannot do on the external cluster of `nodes`;
    else the notes on what is ignored (see the module docstring)."""
    source = scenario.source

    def refuse(message: str, line: int | None = None, field: str | None = None) -> None:
        raise ScenarioError(f"cannot run on the external cluster of {nodes.source}: "
                            f"{message}", source=source, line=line, field=field)

    known = {n.node_id for n in nodes.nodes}
    for i, field, action, spec in _faults(scenario):
        step = scenario.schedule[i]
        where = f"schedule[{i}].{field}"
        if action in STORAGE_ACTIONS:
            refuse(f"{action} is a storage fault on the files of a node the lab started; "
                   "an external cluster takes process faults only", step.line, where)
        if action in NETWORK_ACTIONS:
            refuse(f"{action} is a network fault; an external cluster takes process faults "
                   f"only ({', '.join(PROCESS_ACTIONS)})", step.line, where)
        if spec is None:
            # targetless resume / start: only nodes the run paused or stopped, whose
            # commands were checked with the step that did it (_UNDO)
            targets: tuple[int, ...] = ()
            if action == "rolling-restart":
                targets = tuple(n.node_id for n in nodes.brokers)
        else:
            try:
                target = parse_target(spec)
            except TargetError as e:
                refuse(str(e), step.line, where)
            if target.zookeeper or target.kind == "host":
                refuse(f"{spec!r} names ZooKeeper servers; the lab does not run this "
                       "cluster's ZooKeeper", step.line, where)
            targets = _candidates(target, nodes)
            unknown = sorted(set(targets) - known)
            if unknown:
                refuse(f"{spec!r} names node(s) {', '.join(map(str, unknown))}, which "
                       f"{nodes.source} does not list", step.line, where)
        needs = NEEDS[action] + _UNDO.get(action, ())
        missing = []
        for n in sorted(set(targets) & known):
            lacks = [f"`{c}`" for c in needs if nodes.node(n).command(c) is None]  # type: ignore[union-attr]
            if lacks:
                missing.append(f"node {n} has no {' or '.join(lacks)} command")
        if missing:
            refuse(f"{action} {spec or '(every broker)'}: {'; '.join(missing)}",
                   step.line, where)
    brokers = len(nodes.brokers)
    for t in scenario.topics:
        if t.replication_factor > brokers:
            refuse(f"topic {t.name}: replication_factor {t.replication_factor}, but "
                   f"{nodes.source} lists {brokers} broker(s)", field="topics")
    c = scenario.cluster
    ignored = [f"{key}" for key, value, default in (
        ("brokers", c.brokers, None), ("controllers", c.controllers, None),
        ("combined", c.combined, ClusterSpec.combined), ("profile", c.profile, None),
        ("network", c.network, ClusterSpec.network), ("set", c.set, {}),
        ("broker_set", c.broker_set, {}), ("controller_set", c.controller_set, {}),
        ("zookeepers", c.zookeepers, 0), ("zookeeper", c.zookeeper, False))
        if value != default]
    return [f"external cluster at {bootstrap} (nodes file {nodes.source}): the scenario's "
            f"cluster block is not applied ({', '.join(f'cluster.{k}' for k in ignored)} "
            f"ignored; asked for {c.brokers} broker(s), the file lists {brokers}); the "
            "cluster's own configuration decides timeouts and replication defaults"]


@dataclasses.dataclass(frozen=True)
class External:
    """Where and how a run reaches a cluster the lab did not start."""

    nodes: NodesFile
    bootstrap: str
    reuse_topics: bool = False


class TopicsExist(ScenarioError):
    """A topic of the scenario is already on the external cluster."""


def existing_topics(bootstrap: str, names: list[str]) -> dict[str, int]:
    """Which of `names` the cluster has, with their partition counts (AdminError when it
    cannot be reached)."""
    admin = Admin(bootstrap, 15.0)
    present = [n for n in admin.topic_names() if n in names]
    return {d.name: len(d.partitions) for d in admin.describe(present)} if present else {}


def check_existing(wanted: dict[str, int], existing: dict[str, int], reuse: bool,
                   source: str) -> list[str]:
    """The topics to reuse (name -> partitions of the scenario / on the cluster); raises
    TopicsExist for an existing topic unless `reuse`, and for one whose partition count
    differs even then (the workloads' keys and leader:T-p targets assume it)."""
    found = sorted(set(wanted) & set(existing))
    other = [f"{t} ({existing[t]} partition(s), the scenario wants {wanted[t]})"
             for t in found if existing[t] != wanted[t]]
    if other:
        raise TopicsExist(f"topic(s) already on the cluster with another partition count: "
                          f"{'; '.join(other)}; delete them or rename the scenario's topics",
                          source=source, field="topics")
    if found and not reuse:
        raise TopicsExist(f"topic(s) {', '.join(found)} already on the cluster: delete them "
                          "(their records would count as writes nobody made in this run), "
                          "rename the scenario's topics, or pass --reuse-topics",
                          source=source, field="topics")
    return found


class ExternalClusterStage(ClusterStage):
    def __init__(self, scenario: Scenario, run_dir: Path, progress: Progress,
                 notes: list[str], external: External) -> None:
        super().__init__(scenario, run_dir, progress, notes)
        self.nodes = external.nodes
        self._bootstrap = external.bootstrap
        self.reuse_topics = external.reuse_topics
        self.control: ExternalControl | None = None
        # Only the run's topics must be whole again: the cluster may hold others.
        self.isr_topics = [t.name for t in scenario.topics]

    @property
    def bootstrap(self) -> str:
        return self._bootstrap

    def up(self) -> None:  # type: ignore[override]
        self.control = ExternalControl(self.nodes, self._bootstrap)
        registered = self.control.registered()
        if not registered:
            raise RuntimeError(f"no broker at {self._bootstrap} answered Metadata")
        listed = {n.node_id for n in self.nodes.brokers}
        if set(registered) - listed:
            self.notes.append(f"Metadata lists broker(s) {sorted(set(registered) - listed)} "
                              f"that {self.nodes.source} does not: no fault can reach them")
        (self.run_dir / EXTERNAL_FILE).write_text(json.dumps({
            "bootstrap": self._bootstrap,
            "registered_brokers": sorted(registered),
            "nodes_file": self.nodes.source,
            "nodes": [{"id": n.node_id, "roles": list(n.roles), "address": n.address,
                       "commands": dict(n.commands)} for n in self.nodes.nodes],
        }, indent=2) + "\n")
        self.progress.say(f"cluster: external at {self._bootstrap}; registered brokers "
                          f"{', '.join(map(str, sorted(registered)))}")

    def nemesis(self, seed: int, on_event: EventCallback | None = None) -> Nemesis:
        assert self.control is not None
        return Nemesis(None, self.control, bootstrap=self._bootstrap, seed=seed,
                       on_event=on_event, terminate_timeout=20.0,
                       start_timeout=START_TIMEOUT, rejoin_timeout=START_TIMEOUT)

    def create_topics(self, bootstrap: str, nemesis: Nemesis) -> None:
        admin = Admin(bootstrap, 15.0)
        wanted = {t.name: t.partitions for t in self.scenario.topics}
        existing = existing_topics(bootstrap, list(wanted))
        reused = check_existing(wanted, existing, self.reuse_topics, self.scenario.source)
        if reused:
            self.notes.append(f"topic(s) {', '.join(reused)} reused as found on the cluster "
                              "(--reuse-topics): their configs are not changed, and records "
                              "from before this run count as writes no producer of it made")
        for t in self.scenario.topics:
            if t.name in reused:
                self.progress.say(f"topic {t.name}: reused ({t.partitions} partition(s))")
                continue
            admin.create_topic(t.name, t.partitions, t.replication_factor, dict(t.configs),
                               t.replicas)
            self.progress.say(f"topic {t.name}: {t.partitions} partition(s), RF "
                              f"{t.replication_factor} (left on the cluster after the run)")
        if self.scenario.topics and not nemesis.wait_isr_full(TOPICS_ISR_TIMEOUT,
                                                              self.isr_topics):
            raise RuntimeError("the topics' partitions did not get leaders and full ISRs "
                               f"within {TOPICS_ISR_TIMEOUT:g}s")

    def down(self) -> None:
        """Nothing to stop or copy: the cluster is not the lab's."""


__all__ = ["EXTERNAL_FILE", "External", "ExternalClusterStage", "TopicsExist",
           "check_existing", "check_external", "existing_topics"]
