"""The cluster of one scenario run: build it, create its topics, heal it, tear it down.

The cluster lives in <run>/cluster and gets its ports from the lab's allocator
(cluster/ports.py) when it is built, so runs side by side never share a port or a
directory. `down` first copies the nodes' files into <run>/nodes (the report and the
overload check read them) as far as the disk lets it, then stops the cluster unless it
is to be kept.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from ..cluster import lab
from ..cluster.admin import Admin
from ..cluster.supervisor import KAFKA_START_TIMEOUT
from ..cluster.topology import Overrides, TopologyRequest
from ..common.gc_log import gc_log_files
from ..common.rundir import CLUSTER_DIR, CLUSTER_STATE_FILE, NODE_FILES, NODES_DIR, node_dirs
from ..faults import Nemesis
from ..faults.nemesis import EventCallback
from .progress import Progress
from .schema import Scenario

START_TIMEOUT = 60.0
TOPICS_ISR_TIMEOUT = 30.0


class ClusterStage:
    def __init__(self, scenario: Scenario, run_dir: Path, progress: Progress,
                 notes: list[str], *, keep: bool = False) -> None:
        self.scenario = scenario
        self.run_dir = run_dir
        self.directory = run_dir / CLUSTER_DIR
        self.progress = progress
        self.keep = keep
        self.up_result: lab.UpResult | None = None
        self.isr_recovered: bool | None = None
        self.notes = notes  # the run's notes (verdict.json), in the order they happen
        self.isr_topics: list[str] | None = None  # whose ISRs the heal waits for (None: all)

    @property
    def bootstrap(self) -> str:
        assert self.up_result is not None
        return self.up_result.topology.bootstrap_servers

    @property
    def start_timeout(self) -> float:
        """How long a node may take to serve: Apache Kafka's JVMs get longer."""
        if self.scenario.cluster.distribution:
            return KAFKA_START_TIMEOUT
        return START_TIMEOUT

    def up(self) -> lab.UpResult:
        c = self.scenario.cluster
        request = TopologyRequest(
            brokers=c.brokers, controllers=c.controllers, combined=c.combined,
            profile=c.profile, overrides=Overrides(dict(c.set), dict(c.broker_set),
                                                   dict(c.controller_set)),
            network=c.network, zookeepers=c.zookeepers, zookeeper_mode=c.zookeeper,
            distribution=c.distribution)
        self.up_result = lab.up(self.directory, request, fresh=True,
                                timeout=self.start_timeout)
        self.progress.say(f"cluster: {self.up_result.topology.request.describe()}; bootstrap "
                          f"{self.up_result.topology.bootstrap_servers}")
        return self.up_result

    def nemesis(self, seed: int, on_event: EventCallback | None = None) -> Nemesis:
        """The run's nemesis over the cluster built by `up`, set up."""
        assert self.up_result is not None
        nemesis = Nemesis(self.up_result.state, seed=seed, on_event=on_event,
                          terminate_timeout=20.0, start_timeout=self.start_timeout,
                          rejoin_timeout=self.start_timeout)
        nemesis.setup()
        return nemesis

    def create_topics(self, bootstrap: str, nemesis: Nemesis) -> None:
        admin = Admin(bootstrap, 15.0)
        for t in self.scenario.topics:
            admin.create_topic(t.name, t.partitions, t.replication_factor, dict(t.configs),
                               t.replicas)
            configs = ",".join(f"{k}={v}" for k, v in t.configs.items())
            placed = f" replicas {','.join(map(str, t.replicas))}" if t.replicas else ""
            self.progress.say(f"topic {t.name}: {t.partitions} partition(s), RF "
                              f"{t.replication_factor}{' ' + configs if configs else ''}"
                              f"{placed}")
        if self.scenario.topics and not nemesis.wait_isr_full(TOPICS_ISR_TIMEOUT):
            raise RuntimeError("the topics' partitions did not get leaders and full ISRs "
                               f"within {TOPICS_ISR_TIMEOUT:g}s")

    def heal(self, nemesis: Nemesis) -> None:
        """Undo every fault (heal the network, resume, start) until every ISR is full or
        the scenario's heal timeout passes; isr_recovered says which."""
        if not self.scenario.heal.enabled:
            self.notes.append("heal disabled by the scenario")
            return
        deadline = time.monotonic() + self.scenario.heal.timeout
        while True:
            nemesis.teardown()
            remaining = max(1.0, deadline - time.monotonic())
            full = nemesis.wait_isr_full(min(remaining, 20.0), self.isr_topics)
            stopped = [n.node_id for n in nemesis.topology.nodes
                       if nemesis.supervisor.process_state(n.node_id) != "running"]
            if full and not stopped:
                self.isr_recovered = True
                break
            if time.monotonic() >= deadline:
                self.isr_recovered = False
                self.notes.append(f"heal: not every ISR full after "
                                  f"{self.scenario.heal.timeout:g}s (nodes not running: "
                                  f"{stopped or 'none'})")
                break
            time.sleep(0.5)
        self.progress.say(
            f"  heal: {'every ISR full' if self.isr_recovered else 'ISR incomplete'}")

    def down(self) -> None:
        """Keep the nodes' files, then stop the cluster (unless kept). Safe to call when
        the build failed half way; never raises (a teardown error must not mask the
        run's own)."""
        if self.up_result is None and not (self.directory / CLUSTER_STATE_FILE).exists():
            return
        for error in keep_node_files(self.directory, self.run_dir):
            self.notes.append(f"teardown: not kept: {error}")
            self.progress.console.print(f"[red]teardown: not kept: {error}[/red]")
        if self.keep:
            self.progress.console.print(f"cluster kept running: stop it with `brownout "
                                        f"down --dir {self.directory}`")
            return
        # The run is over and its nodes' files are kept: a controlled shutdown would only
        # hand over leaderships nobody reads, and in ZooKeeper mode brokers stopped
        # together spend its retries (controlled.shutdown.max.retries x backoff) on
        # partitions that have no other live replica. Kafka's system tests clean a node
        # with kill -9 likewise.
        try:
            lab.down(self.directory, timeout=0.0)
        except Exception as e:
            self.progress.console.print(f"[red]teardown: {type(e).__name__}: {e}[/red]")

def keep_node_files(cluster_dir: Path, run_dir: Path) -> list[str]:
    """cluster.json and each node's log, config and events (or GC logs) into the run
    directory, as far as they can be copied. What could not be (a full disk) comes back
    as messages instead of an error, so that the teardown after it still stops the
    nodes."""
    errors: list[str] = []

    def keep(source: Path, dest: Path) -> None:
        try:
            shutil.copy2(source, dest)
        except FileNotFoundError:
            pass  # a node that never wrote this file
        except OSError as e:
            errors.append(f"{source.name} of {source.parent}: {e.strerror or e}")

    keep(cluster_dir / CLUSTER_STATE_FILE, run_dir / CLUSTER_STATE_FILE)
    target = run_dir / NODES_DIR
    for node_dir in node_dirs(cluster_dir).values():
        dest = target / node_dir.name
        try:
            dest.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            errors.append(f"{dest}: {e.strerror or e}")
            continue
        # a Kafka node's GC logs from before its restarts were rotated to gc.log.N
        rotated = [p.name for p in gc_log_files(node_dir)]
        for name in dict.fromkeys((*NODE_FILES, *rotated)):
            keep(node_dir / name, dest / name)
    return errors
