"""Brownout from Python: a lab cluster as a context manager, faults, scenario runs, and
their results as Arrow tables, for notebooks and tests.

    import brownout as bo                      # or brownout.api: the same names

    with bo.Cluster(brokers=3) as cluster:
        cluster.create_topic("orders", partitions=3, replication_factor=3,
                             configs={"min.insync.replicas": "2"})
        print(cluster.bootstrap_servers)       # for your own clients
        cluster.fault("kill", "leader:orders-0")
        cluster.fault("start")                 # every stopped node
        print(cluster.describe("orders"))

    run = bo.run("minority-outage", seed=1)    # a built-in name or a YAML file
    run.outcome, run.verdict["expectations"], run.history().num_rows
    run                                        # in a notebook: the report, inline

Everything here is the CLI's machinery (cluster.lab, faults.Nemesis, scenarios.runner)
behind a small interface; the pytest plugin (brownout.pytest_plugin) builds on it.
"""

from __future__ import annotations

import dataclasses
import html
import json
import shutil
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
from rich.console import Console

from .cluster import lab
from .cluster.admin import Admin, AdminError, DescribedTopic
from .cluster.distribution import engine_home
from .cluster.supervisor import Supervisor
from .cluster.topology import Overrides, TopologyRequest
from .common.documents import STATUS_DOCUMENT, versioned
from .common.rundir import (
    CHECK_FILE,
    CLUSTER_DIR,
    CLUSTER_STATE_FILE,
    HISTORY_FILE,
    REPORT_FILE,
    VERDICT_FILE,
)
from .faults import Fault, Nemesis
from .faults.nemesis import FaultResult
from .scenarios import resolve
from .scenarios.runner import run_scenario
from .scenarios.schema import with_distribution
from .workload.history import read_history

__all__ = ["Cluster", "Run", "run"]

Outcome = Literal["pass", "fail", "unknown"]
OUTCOMES: tuple[Outcome, ...] = ("pass", "fail", "unknown")


class Cluster:
    """A lab cluster of node processes (KRaft, or ZooKeeper mode with `zookeeper=True`)
    in `directory` (a temporary one, removed afterwards, when None). Leaving the `with`
    block stops every node and ZooKeeper server, also after an error.

    `engine` says what runs the nodes, as `brownout up --engine`: "node" or "brownout"
    (Brownout's own, the default), "kafka" or "kafka:VERSION" (Apache Kafka's JVMs, a version
    installed with `brownout kafka install`). `start_timeout`: seconds every node may
    take to serve (default by engine: 60 for the node, 180 for Kafka's JVMs).
    `network="netns"` puts each node in a network namespace of its own (root only), as
    `brownout up --network netns`; `security="sasl"` or `"ssl"` gives the brokers a
    secure listener beside PLAINTEXT, as `--security`: `client_config` says how to use
    it."""

    def __init__(
        self,
        brokers: int = 3,
        *,
        controllers: int | None = None,
        combined: bool = False,
        zookeeper: bool = False,
        profile: str = "fast",
        broker_config: dict[str, object] | None = None,
        directory: Path | str | None = None,
        seed: int = 0,
        start_timeout: float | None = None,
        engine: str | None = None,
        network: str = "loopback",
        security: str | None = None,
    ) -> None:
        self.request = TopologyRequest(
            brokers=brokers,
            controllers=None if zookeeper else controllers,
            combined=combined,
            profile=profile,
            overrides=Overrides({}, {k: str(v) for k, v in (broker_config or {}).items()},
                                {}),
            zookeepers=3 if zookeeper else 0,
            zookeeper_mode=zookeeper,
            distribution=engine_home(engine),
            network=network,
            security=security,
        )
        self._own_directory = directory is None
        self.directory = Path(directory) if directory is not None else Path(
            tempfile.mkdtemp(prefix="brownout-"))
        self.seed = seed
        self.start_timeout = start_timeout
        self._nemesis: Nemesis | None = None
        self.faults: list[FaultResult] = []

    # -- life cycle -----------------------------------------------------------------

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        try:
            result = lab.up(self.directory / "cluster", self.request,
                            timeout=self.start_timeout)
        except BaseException:
            self.stop()
            raise
        self.topology = result.topology
        self._nemesis = Nemesis(result.state, seed=self.seed)

    def stop(self) -> None:
        """Stop everything (SIGTERM, then SIGKILL what is left); remove a temporary
        directory."""
        try:
            lab.down(self.directory / "cluster", timeout=30)
        except Exception:
            state = lab.load(self.directory / CLUSTER_DIR) if (
                self.directory / CLUSTER_DIR / CLUSTER_STATE_FILE).exists() else None
            if state is not None:
                sup = Supervisor(state)
                for node_id in list(state.nodes):
                    sup.kill_node(node_id)
        finally:
            if self._own_directory:
                shutil.rmtree(self.directory, ignore_errors=True)

    # -- shape ----------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return self.topology.bootstrap_servers

    @property
    def client_config(self) -> dict[str, str]:
        """A client's settings (librdkafka's and Java's names): bootstrap.servers, and
        with `security` the secure listeners' with the settings that log in to them."""
        return {"bootstrap.servers": self.bootstrap_servers,
                **self.topology.client_settings()}

    @property
    def broker_ids(self) -> list[int]:
        return [n.node_id for n in self.topology.brokers]

    def status(self) -> dict[str, Any]:
        """What `brownout status --json` prints: nodes, quorum or ZooKeeper controller."""
        return versioned(STATUS_DOCUMENT, lab.status(self.directory / "cluster"))

    # -- topics ---------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     configs: dict[str, str] | None = None, *, timeout: float = 30.0) -> None:
        """Create the topic and wait until a broker shows every partition with a leader
        (brokers learn a new topic at their own pace after the controller made it)."""
        admin = Admin(self.bootstrap_servers)
        admin.create_topic(name, partitions, replication_factor, dict(configs or {}))
        deadline = time.monotonic() + timeout
        while True:
            try:
                described = self.describe(name)
                if len(described.partitions) == partitions and all(
                        p.leader is not None for p in described.partitions):
                    return
            except AdminError:
                pass
            if time.monotonic() > deadline:
                raise AdminError(f"topic {name} was created but has no leader for every "
                                 f"partition after {timeout:g}s")
            time.sleep(0.2)

    def describe(self, topic: str) -> DescribedTopic:
        [described] = Admin(self.bootstrap_servers).describe([topic])
        return described

    # -- faults ---------------------------------------------------------------------

    def fault(self, action: str, target: str | None = None, **params: Any) -> FaultResult:
        """One nemesis fault, as `brownout fault ACTION TARGET` (kill, terminate, pause,
        resume, start, restart, rolling-restart; isolate, partition, ... in netns
        clusters); the result says what happened and to which nodes."""
        assert self._nemesis is not None, "the cluster is not started"
        result = self._nemesis.invoke(Fault(action, target, params))
        self.faults.append(result)
        return result

    def kill(self, target: str) -> FaultResult:
        return self.fault("kill", target)

    def start_stopped(self) -> FaultResult:
        return self.fault("start")


@dataclasses.dataclass
class Run:
    """One finished scenario run and its directory.

    A temporary run directory (`run` without `out` or `keep`) lives as long as this
    object: it is removed by `cleanup()`, at the end of a `with` block, when the object
    is garbage collected, or when the interpreter exits (as tempfile.TemporaryDirectory
    does). A directory you named, or kept, is never removed."""

    directory: Path
    exit_code: int
    temporary: bool = False

    def __post_init__(self) -> None:
        self._remove = (weakref.finalize(self, shutil.rmtree, self.directory,
                                         ignore_errors=True) if self.temporary else None)

    def cleanup(self) -> None:
        """Remove a temporary run directory now; nothing for one you named or kept."""
        if self._remove is not None:
            self._remove()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    @property
    def verdict(self) -> dict[str, Any]:
        return json.loads((self.directory / VERDICT_FILE).read_text())

    @property
    def outcome(self) -> Outcome:
        """The verdict: "pass" (every expectation held), "fail" (one did not, or the run
        could not complete) or "unknown" (the lab was overloaded: a node stalled long
        enough to be fenced before the first fault, so the run measured this machine
        rather than Kafka; the verdict's unknown_reason says which node and when).
        `brownout run` exits 0, 1 or 3 for them."""
        word = self.verdict.get("verdict")
        if word not in OUTCOMES:
            raise ValueError(f"{self.directory / VERDICT_FILE}: verdict {word!r} is not "
                             f"one of {', '.join(OUTCOMES)}")
        return word

    @property
    def passed(self) -> bool:
        """True only for a pass: an unknown run did not pass either (see `outcome`)."""
        return self.outcome == "pass"

    def check(self) -> dict[str, Any]:
        """check.json: every checker's result."""
        return json.loads((self.directory / CHECK_FILE).read_text())

    def history(self) -> pa.Table:
        """Every client send, delivery, poll and fault of the run (history.parquet)."""
        return read_history(self.directory / HISTORY_FILE)

    @property
    def report_path(self) -> Path:
        return self.directory / REPORT_FILE

    def _repr_html_(self) -> str:
        """The report, inline in a notebook (an iframe of the page, plotly's bundle in it:
        an iframe's srcdoc cannot reach the file beside the report)."""
        from .report.plotly_bundle import inlined

        page = html.escape(inlined(self.report_path.read_text(encoding="utf-8")), quote=True)
        return f'<iframe srcdoc="{page}" style="width:100%;height:800px;border:0"></iframe>'


def run(scenario: str | Path, *, seed: int = 0, out: Path | str | None = None,
        quiet: bool = True, keep: bool = False, engine: str | None = None) -> Run:
    """Run a scenario (a built-in name or a YAML file) end to end, as `brownout run`.

    Without `out` the run goes to a temporary directory that the returned Run removes
    (see `Run`), or that is removed at once when the run raises; `keep=True` leaves it
    (its path is `Run.directory`). `engine`: as `brownout run --engine` ("node" or
    "brownout", "kafka", "kafka:VERSION")."""
    loaded = resolve(str(scenario))
    home = engine_home(engine)
    if home is not None:
        loaded = with_distribution(loaded, home)
    temporary = out is None and not keep
    directory = Path(out) if out is not None else Path(
        tempfile.mkdtemp(prefix=f"brownout-{loaded.name}-"))
    console = Console(quiet=True) if quiet else Console(highlight=False)
    try:
        outcome = run_scenario(loaded, directory, seed, console=console, live=not quiet)
    except BaseException:  # refused, interrupted: nobody can reach a temporary directory
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)
        raise
    return Run(directory, outcome.exit_code, temporary=temporary)
