"""`brownout up | down | status`: a local multi-process cluster in a working directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ..cluster.state import resolve_dir
from ..cluster.supervisor import (
    DEFAULT_START_TIMEOUT,
    DEFAULT_STOP_TIMEOUT,
    KAFKA_START_TIMEOUT,
)
from ..cluster.topology import (
    CONTROLLER_ID_BASE,
    DEFAULT_ZOOKEEPERS,
    PROFILES,
    Overrides,
    TopologyRequest,
    profile_table,
    unknown_key_warnings,
)
from ..common.documents import STATUS_DOCUMENT, versioned
from ..common.extras import pyspark_home
from ._common import (
    DISTRIBUTION_HELP,
    ENGINE_HELP,
    BootstrapOption,
    DirOption,
    handle_errors,
    resolve_engine,
)

_FAST_TABLE = "\n".join(
    f"  {key:<42} {fast!s:>5}   (Kafka: {default})" for key, default, fast in profile_table()
)
_FAST_ZK_TABLE = "\n".join(
    f"  {key:<42} {fast!s:>5}   (Kafka: {default})"
    for key, default, fast in profile_table(zookeeper_mode=True)
)

UP_HELP = "\n\n".join(
    [
        "Build and start a local cluster of node processes (or start a stopped one again).",
        "Node ids: brokers are 1..N. Dedicated controllers (the default) are "
        f"{CONTROLLER_ID_BASE + 1}..{CONTROLLER_ID_BASE}+M. With --combined there are N nodes, "
        "ids 1..N, each a broker, and the first M (default: all N) are also controllers "
        "(process.roles=broker,controller). Every controller is a voter in "
        "controller.quorum.voters.",
        "Configs use Apache Kafka's keys: listeners PLAINTEXT://127.0.0.1:port (brokers) and "
        "CONTROLLER://127.0.0.1:port (controllers); offsets.topic.replication.factor and "
        "transaction.state.log.replication.factor are min(3, N); default.replication.factor "
        "keeps Kafka's default 1 unless you --set it.",
        "--zookeeper builds a ZooKeeper-mode cluster instead (Kafka 3.9's older mode): a "
        "ZooKeeper ensemble of --zookeepers servers (default 3) and N brokers, ids 1..N, "
        "one of which is elected controller through ZooKeeper; no controller nodes, so "
        "--controllers and --combined do not apply. Brokers get broker.id, "
        "zookeeper.connect (the ensemble), zookeeper.session.timeout.ms, "
        "zookeeper.connection.timeout.ms and controlled.shutdown.enable=true, and only the "
        "PLAINTEXT listener. `up` starts the ensemble, waits for its leader, then the "
        "brokers; `down` stops the brokers, then the ensemble. ZooKeeper needs Java.",
        "Profile 'kafka' keeps Kafka's defaults. Profile 'fast' shortens timeouts for demos:",
        _FAST_TABLE,
        "and in ZooKeeper mode (without the KRaft-only keys):",
        _FAST_ZK_TABLE,
        "Precedence (later wins): generated < profile < --set < --broker-set < --controller-set.",
        "A directory holds one cluster. `up` on a stopped cluster starts the same nodes again "
        "with their data and ports; on a running one it refuses (run `brownout down` first); "
        "--fresh deletes a stopped cluster and builds a new one.",
        "The bootstrap servers are printed last, alone on a line: "
        "BOOTSTRAP=$(brownout up | tail -n 1)",
    ]
)

DOWN_HELP = "\n\n".join(
    [
        "Stop every node of the cluster in --dir, then its ZooKeeper servers.",
        "SIGTERM to each node's process group (brokers first, then controllers; a paused node "
        "is resumed so it can act on it), SIGKILL after --timeout. Nothing is deleted unless "
        "--purge.",
        "Only recorded processes are signalled: a pid of cluster.json whose command line "
        "still names the node's (or ZooKeeper server's) config file. In netns mode the "
        "namespaces, links and rules named with the directory's prefix go too, also what a "
        "killed command left. A scenario run's cluster is RUN/cluster (`brownout clean` "
        "finds the runs whose process was killed, and also stops their pipeline).",
    ]
)

STATUS_HELP = "\n\n".join(
    [
        "Show every node's state, the fenced brokers and the KRaft quorum (in ZooKeeper "
        "mode: the controller, the broker that holds /controller).",
        "Per node: id, roles, pid, state (running / paused = SIGSTOP'd / stopped), listeners, "
        "and for a live broker whether it is fenced (missing from a broker's Metadata: fenced "
        "or not registered). The quorum leader and epoch come from DescribeQuorum (API key 55) "
        "sent to a controller listener, then to a broker; 'unknown' when no node answers it.",
        "'worst stall' is the node's longest event-loop stall of the last 10 minutes and how "
        "long ago it ended (the node's 'stall' events: its event loop woke later than "
        "event.loop.stall.threshold.ms, default 100 ms). A stall longer than a third of "
        "broker.session.timeout.ms is enough to fence a broker or lose a leader: the lab, "
        "not Kafka's protocol, is then what a run measures. A SIGSTOP'd (paused) node shows "
        "its pause here once resumed.",
        "A cluster with a ZooKeeper ensemble also lists each ZooKeeper server: its process "
        "state, its mode as its `srvr` four-letter word reports it (leader, follower, "
        "standalone; not-serving while it has no quorum; down when it does not answer) and "
        "whether the ensemble has a leader and a majority.",
    ]
)


def _console(err: bool = False) -> Console:
    console = Console(stderr=err, highlight=False)
    if not console.is_terminal:  # piped: never truncate listeners to the default 80
        console = Console(stderr=err, highlight=False, width=160)
    return console


@handle_errors
def up_command(
    brokers: Annotated[
        int | None,
        typer.Option(
            "--brokers",
            help="Number of brokers (ids 1..N). Default 1.",
            show_default=False,
        ),
    ] = None,
    controllers: Annotated[
        int | None,
        typer.Option(
            "--controllers",
            help=f"Number of controllers (KRaft voters). Default: 1 dedicated controller (id "
            f"{CONTROLLER_ID_BASE + 1}); with --combined, every node.",
            show_default=False,
        ),
    ] = None,
    combined: Annotated[
        bool | None,
        typer.Option(
            "--combined/--dedicated",
            help="--combined: every node is broker+controller (process.roles=broker,controller)."
            " --dedicated (default): controllers are separate processes.",
            show_default=False,
        ),
    ] = None,
    zookeeper: Annotated[
        bool | None,
        typer.Option(
            "--zookeeper/--kraft",
            help="--zookeeper: brokers in ZooKeeper mode, with a ZooKeeper ensemble "
            "(--zookeepers, default 3) instead of KRaft controllers. --kraft (default): KRaft.",
            show_default=False,
        ),
    ] = None,
    zookeepers: Annotated[
        int | None,
        typer.Option(
            "--zookeepers",
            help="Servers of a ZooKeeper ensemble (1, 3, 5 or 7; ids 1..Z). Default: 3 with "
            "--zookeeper, else none (KRaft nodes with an ensemble beside them, for ZooKeeper "
            "fault targets).",
            show_default=False,
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            help=f"Config profile: {' | '.join(PROFILES)}. 'kafka' = Kafka's defaults; 'fast' "
            "= short timeouts for demos (see above). Default kafka.",
            show_default=False,
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="A server.properties key for every node (repeatable).",
        ),
    ] = None,
    broker_set: Annotated[
        list[str] | None,
        typer.Option(
            "--broker-set",
            metavar="KEY=VALUE",
            help="A server.properties key for nodes with the broker role (repeatable).",
        ),
    ] = None,
    controller_set: Annotated[
        list[str] | None,
        typer.Option(
            "--controller-set",
            metavar="KEY=VALUE",
            help="A server.properties key for nodes with the controller role (repeatable).",
        ),
    ] = None,
    network: Annotated[
        str | None,
        typer.Option(
            "--network",
            help="loopback (default): every node on 127.0.0.1. netns (root only): every node "
            "in its own network namespace on a lab bridge, with its own address in a private "
            "subnet, so that `brownout fault isolate|partition|loss|bandwidth` can cut links.",
            show_default=False,
        ),
    ] = None,
    subnet: Annotated[
        str | None,
        typer.Option(
            "--subnet",
            help="With --network netns: the private subnet (e.g. 10.123.7.0/24). Default: "
            "the first free 10.123.X.0/24 (checked against this machine's routes).",
            show_default=False,
        ),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option("--engine", metavar="node|kafka[:VERSION]", help=ENGINE_HELP,
                     show_default=False),
    ] = None,
    distribution: Annotated[
        Path | None,
        typer.Option("--distribution", metavar="KAFKA_HOME", help=DISTRIBUTION_HELP,
                     show_default=False),
    ] = None,
    security: Annotated[
        str | None,
        typer.Option(
            "--security",
            help="sasl: brokers get a SASL_PLAINTEXT listener too (PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512; users admin/admin-secret and alice/alice-secret). ssl: an SSL "
            "listener with a certificate signed by a CA the lab makes (DIR/tls/ca.pem). "
            "PLAINTEXT stays for the inter-broker traffic and the lab's own tools. The "
            "client settings are printed.",
            show_default=False,
        ),
    ] = None,
    directory: DirOption = None,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="Delete the stopped cluster in --dir (data too) and build a new one.",
        ),
    ] = False,
    no_start: Annotated[
        bool,
        typer.Option(
            "--no-start",
            help="Prepare only: write cluster.json and every server.properties and format "
            "storage, but start nothing (inspect or edit the configs, then run `brownout up`).",
        ),
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help=f"Seconds to wait for every node to be ready. Default "
            f"{DEFAULT_START_TIMEOUT:.0f} (Apache Kafka's JVMs: {KAFKA_START_TIMEOUT:.0f}).",
            min=1,
            show_default=False,
        ),
    ] = None,
) -> None:
    given = {
        name
        for name, value in (
            ("brokers", brokers),
            ("controllers", controllers),
            ("combined", combined),
            ("profile", profile),
            ("network", network),
            ("subnet", subnet),
            ("zookeeper_mode", zookeeper),
            ("zookeepers", zookeepers),
            ("distribution", distribution if engine is None else engine),
            ("security", security),
        )
        if value is not None
    }
    zookeeper_mode = bool(zookeeper)
    if zookeepers is None:
        zookeepers = DEFAULT_ZOOKEEPERS if zookeeper_mode else 0
    request = TopologyRequest(
        brokers=1 if brokers is None else brokers,
        controllers=controllers,
        combined=bool(combined),
        profile=profile or "kafka",
        overrides=Overrides.parse(set_ or [], broker_set or [], controller_set or []),
        network=network or ("netns" if subnet else "loopback"),
        subnet=subnet,
        zookeepers=zookeepers,
        zookeeper_mode=zookeeper_mode,
        distribution=resolve_engine(engine, distribution),
        security=security,
    )
    from ..cluster import lab  # here: `brownout --help` starts without the lab's imports

    if zookeepers and not no_start:  # before anything is written for a cluster it cannot start
        pyspark_home("a ZooKeeper ensemble (its servers run from the jars in PySpark's wheel)")
    target = resolve_dir(directory)
    err = _console(err=True)
    for warning in unknown_key_warnings(request):
        err.print(f"Warning: {warning}")
    result = lab.up(target, request, given, fresh=fresh, start=not no_start, timeout=timeout)
    topology = result.topology
    verb = "built" if result.created else "found"
    verb += (
        " (not started: --no-start)"
        if no_start
        else (" and started" if result.created else " and started again")
    )
    table = Table(
        title=f"cluster {result.state.cluster_id} {verb} in {target}", title_justify="left"
    )
    for column in ("node", "roles", "pid", "listeners"):
        table.add_column(column)
    for spec in topology.nodes:
        node = result.state.nodes[spec.node_id]
        table.add_row(
            str(spec.node_id), ",".join(spec.roles), str(node.pid or "-"), " ".join(spec.listeners)
        )
    _console().print(table)
    if topology.request.distribution:
        _console().print(f"engine: {topology.request.engine}")
    if topology.zookeepers:
        _console().print(f"zookeeper.connect: {topology.zookeeper_connect}")
    settings = topology.client_settings()
    if settings:
        _console().print(f"client settings for the {topology.request.security.upper()} "
                         "listeners (PLAINTEXT below stays open):")
        for key, value in settings.items():
            also = " (or PLAIN, SCRAM-SHA-512)" if key == "sasl.mechanism" else ""
            _console().print(f"  {key}={value}{also}", highlight=False)
    typer.echo(topology.bootstrap_servers)


@handle_errors
def down_command(
    directory: DirOption = None,
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="Also delete the cluster's files (configs, logs, data).",
        ),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Seconds to wait after SIGTERM before SIGKILL.",
            min=0,
        ),
    ] = DEFAULT_STOP_TIMEOUT,
) -> None:
    from ..cluster import lab

    target = resolve_dir(directory)
    stopped = lab.down(target, purge=purge, timeout=timeout)
    what = f"stopped node(s) {', '.join(map(str, stopped))}" if stopped else "no node was running"
    typer.echo(f"{what} in {target}" + ("; files deleted" if purge else ""))


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _stall_text(stall: dict[str, Any] | None) -> str:
    if not stall:
        return "-"
    return f"{stall['lag_ms']:.0f} ms, {stall['ago_s']:.0f}s ago"


@handle_errors
def status_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    directory: DirOption = None,
    bootstrap: BootstrapOption = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Seconds to wait for each protocol request.",
            min=0.1,
        ),
    ] = 3.0,
) -> None:
    from ..cluster import lab

    if bootstrap:
        data = lab.external_status(bootstrap, timeout)
    else:
        data = lab.status(resolve_dir(directory), timeout)
    if as_json:
        typer.echo(json.dumps(versioned(STATUS_DOCUMENT, data), indent=2))
        return
    console = _console()
    title = f"cluster {data.get('cluster_id') or '?'}"
    if "directory" in data:
        title += f" in {data['directory']}"
    table = Table(title=title, title_justify="left")
    for column in ("node", "roles", "pid", "state", "listeners", "fenced", "worst stall"):
        table.add_column(column)
    for n in data["nodes"]:
        table.add_row(
            str(n["id"]),
            ",".join(n["roles"]),
            _fmt(n["pid"]),
            n["state"],
            " ".join(n["listeners"]),
            _fmt(n["fenced"]),
            _stall_text(n.get("worst_stall")),
        )
    console.print(table)
    if data.get("mode") == "zookeeper":
        console.print(_controller_text(data["controller"]))
    else:
        q = data["quorum"]
        line = f"quorum leader: {q['leader']}  epoch: {q['epoch']}"
        if "reason" in q:
            line += f"  ({q['reason']})"
        console.print(line)
    if data.get("registered_brokers") is not None:
        console.print(
            "registered brokers: " + (",".join(map(str, data["registered_brokers"])) or "none")
        )
    console.print(f"bootstrap: {data['bootstrap_servers']}")
    if data.get("zookeeper"):
        _print_zookeeper(console, data["zookeeper"])


def _controller_text(controller: dict[str, Any]) -> str:
    """The controller line of a ZooKeeper-mode cluster."""
    if controller["id"] is None:
        return f"controller: unknown ({controller.get('reason', 'no answer')})"
    return f"controller: broker {controller['id']} (from {controller['source']})"


def _print_zookeeper(console: Console, ensemble: dict[str, Any]) -> None:
    table = Table(title="zookeeper", title_justify="left")
    for column in ("server", "pid", "state", "mode", "client", "zxid"):
        table.add_column(column)
    for z in ensemble["servers"]:
        table.add_row(
            str(z["id"]), _fmt(z["pid"]), z["state"], z["mode"], z["client_address"],
            _fmt(z["zxid"]),
        )
    console.print(table)
    q = ensemble["quorum"]
    line = (
        f"zookeeper leader: {_fmt(q['leader'])}  up: {q['up']}/{q['size']}  "
        f"quorum: {'yes' if q['has_quorum'] else 'no'}"
    )
    if len(q["leaders"]) > 1:
        line += f"  (servers {','.join(map(str, q['leaders']))} all say they lead)"
    console.print(line)
    console.print(f"zookeeper.connect: {ensemble['connect']}")
