"""`brownout fault ...`: break the cluster in --dir by hand, one fault at a time.

Each command resolves its TARGET from live metadata now, does the fault through the
same `Nemesis` the scenarios use, and prints what was resolved and what happened.
Exit status: 0 ok, 1 the fault was refused or failed (nothing happened), 3 indeterminate
(e.g. a SIGTERM'd broker did not exit in time), 2 bad arguments.

With ``--bootstrap-server HOST:PORT --nodes FILE`` the process faults act on a cluster
the lab did not start, through the nodes file's commands (faults/external.py); the
network faults are refused there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..cluster.state import ClusterState, locked, resolve_dir
from ..cluster.supervisor import DEFAULT_START_TIMEOUT, KAFKA_START_TIMEOUT, start_timeout
from ..faults.targets import TARGET_HELP, describe_id
from ._common import DirOption, UsageError, fail, handle_errors

if TYPE_CHECKING:
    from ..faults.nemesis import Fault, FaultResult
    from ..faults.nodes_file import NodesFile

# The nemesis and the external control (the wire client, the storage faults) are imported
# where a fault runs, so that `brownout --help` starts without them.

fault_app = typer.Typer(
    name="fault",
    help="Inject one fault into the cluster in --dir (kill, terminate, pause, resume, start, "
    "restart, rolling-restart, isolate, partition, loss, bandwidth, latency, heal). "
    + TARGET_HELP
    + ". ZooKeeper servers (of a cluster with an ensemble) take the process faults and, "
    "like nodes, the network ones. Network faults need `brownout up --network netns` "
    "(root). Exit status: 0 ok, 1 refused/failed, 3 indeterminate.",
    no_args_is_help=True,
)

TargetArg = Annotated[str, typer.Argument(help=TARGET_HELP, show_default=False)]
OptionalTargetArg = Annotated[str | None, typer.Argument(help=TARGET_HELP, show_default=False)]
SeedOption = Annotated[
    int | None,
    typer.Option(
        "--seed",
        help="Seed for random targets (random-broker, minority-..., minority-zookeepers, halves).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the fault's history value.")]
TimeoutOption = Annotated[
    float,
    typer.Option("--timeout", help="Seconds to wait for a SIGTERM'd node to exit.", min=0.1),
]
DownOption = Annotated[
    float,
    typer.Option(
        "--down",
        help="Seconds each node stays stopped before it starts again (a real Kafka broker "
        "takes seconds to minutes to restart; the embedded node about one).",
        min=0,
    ),
]
RejoinOption = Annotated[
    float | None,
    typer.Option(
        "--rejoin-timeout",
        help="Seconds to wait for a started node to serve again (and, in a rolling restart, "
        f"for every ISR to be full again). Default {DEFAULT_START_TIMEOUT:.0f} "
        f"(Apache Kafka's JVMs: {KAFKA_START_TIMEOUT:.0f}).",
        min=1,
        show_default=False,
    ),
]
FromOption = Annotated[
    str | None,
    typer.Option(
        "--from",
        help="Whom to cut the targets from: everyone (default: other nodes, ZooKeeper "
        "servers and clients) | nodes (nodes and ZooKeeper servers) | controllers | brokers "
        "| clients | zookeeper (the whole ensemble; ZooKeeper mode only: cut a broker from "
        "ZooKeeper only) | a TARGET (e.g. all-zookeepers).",
        show_default=False,
    ),
]

BootstrapServerOption = Annotated[
    str | None,
    typer.Option(
        "--bootstrap-server",
        "--bootstrap",
        help="Bootstrap servers (host:port,...) of a cluster the lab did not start; needs "
        "--nodes (overrides the file's `bootstrap`).",
        show_default=False,
    ),
]
NodesOption = Annotated[
    Path | None,
    typer.Option(
        "--nodes",
        help="Nodes file (YAML) of a cluster the lab did not start: each node's role and "
        "the shell commands that kill, terminate, start, pause and resume it (see "
        "docs/external.md). Replaces --dir.",
        show_default=False,
    ),
]

EXIT = {"ok": 0, "fail": 1, "info": 3}


def external_cluster(
    nodes: Path, bootstrap_server: str | None, directory: Any = None
) -> tuple[NodesFile, str]:
    """The nodes file and the bootstrap servers of an external cluster; UsageError (exit
    status 2) for a bad file or missing bootstrap servers."""
    from ..faults.nodes_file import NodesFileError
    from ..faults.nodes_file import load as load_nodes

    if directory is not None:
        raise UsageError(
            "--dir names a cluster the lab started, --nodes one it did not: give one of them"
        )
    try:
        nodes_file = load_nodes(str(nodes))
    except NodesFileError as e:
        raise UsageError(str(e)) from None
    bootstrap = bootstrap_server or nodes_file.bootstrap
    if not bootstrap:
        raise UsageError(
            f"no bootstrap servers for the cluster of {nodes}: pass "
            "--bootstrap-server HOST:PORT or set `bootstrap:` in the file"
        )
    return nodes_file, bootstrap


def _run_external(
    fault: Fault,
    nodes: Path | None,
    bootstrap_server: str | None,
    directory: Any,
    seed: int | None,
    terminate_timeout: float,
    rejoin_timeout: float,
) -> FaultResult:
    from ..faults.external import ExternalControl
    from ..faults.nemesis import EXTERNAL_NETWORK, NETWORK_ACTIONS, Nemesis

    if fault.action in NETWORK_ACTIONS:
        raise fail(EXTERNAL_NETWORK, EXIT["fail"])  # refused, as in a loopback lab
    if nodes is None:
        raise UsageError(
            "--bootstrap-server needs --nodes FILE: how to kill, terminate, "
            "start, pause and resume each node of that cluster"
        )
    nodes_file, bootstrap = external_cluster(nodes, bootstrap_server, directory)
    control = ExternalControl(nodes_file, bootstrap)
    nemesis = Nemesis(
        None,
        control,
        bootstrap=bootstrap,
        seed=seed,
        terminate_timeout=terminate_timeout,
        rejoin_timeout=rejoin_timeout,
        start_timeout=rejoin_timeout,
    )
    return nemesis.invoke(fault)


def _run(
    action: str,
    target: str | None,
    params: dict[str, Any],
    directory: Any,
    seed: int | None,
    as_json: bool,
    terminate_timeout: float = 30.0,
    rejoin_timeout: float | None = None,
    *,
    bootstrap_server: str | None = None,
    nodes: Path | None = None,
) -> None:
    from ..faults.nemesis import Fault, Nemesis

    params = {k: v for k, v in params.items() if v is not None}
    if bootstrap_server or nodes is not None:
        result = _run_external(
            Fault(action, target, params),
            nodes,
            bootstrap_server,
            directory,
            seed,
            terminate_timeout,
            rejoin_timeout or DEFAULT_START_TIMEOUT,
        )
    else:
        target_dir = resolve_dir(directory)
        state = ClusterState.require(target_dir)
        rejoin_timeout = rejoin_timeout or start_timeout(state.request)
        with locked(target_dir):
            nemesis = Nemesis(
                state,
                seed=seed,
                terminate_timeout=terminate_timeout,
                rejoin_timeout=rejoin_timeout,
                start_timeout=rejoin_timeout,
            )
            result = nemesis.invoke(Fault(action, target, params))
    if as_json:
        typer.echo(json.dumps(result.value(), indent=2, default=str))
    else:
        if target is not None:
            nodes = ", ".join(map(describe_id, result.nodes)) or "-"
            typer.echo(f"target {target} -> node(s) {nodes}")
        line = f"{result.outcome}: {action}: {result.message} ({result.duration:.2f}s)"
        typer.echo(line, err=result.outcome == "fail")
    raise typer.Exit(EXIT.get(result.outcome, 1))


@fault_app.command("kill", help="SIGKILL (kill -9) the target node(s) or ZooKeeper server(s).")
@handle_errors
def kill_command(
    target: TargetArg,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "kill", target, {}, directory, seed, as_json, bootstrap_server=bootstrap_server, nodes=nodes
    )


@fault_app.command(
    "terminate",
    help="SIGTERM the target node(s) or ZooKeeper server(s) and wait for them to exit (a "
    "broker exits once the controller approved its controlled shutdown); never SIGKILLs: "
    "reports a node that did not exit.",
)
@handle_errors
def terminate_command(
    target: TargetArg,
    timeout: TimeoutOption = 30.0,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "terminate",
        target,
        {},
        directory,
        seed,
        as_json,
        terminate_timeout=timeout,
        bootstrap_server=bootstrap_server,
        nodes=nodes,
    )


@fault_app.command(
    "pause", help="SIGSTOP the target node(s) or ZooKeeper server(s): frozen, sockets open."
)
@handle_errors
def pause_command(
    target: TargetArg,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "pause",
        target,
        {},
        directory,
        seed,
        as_json,
        bootstrap_server=bootstrap_server,
        nodes=nodes,
    )


@fault_app.command(
    "resume",
    help="SIGCONT the target node(s) or ZooKeeper server(s) (default: every paused one).",
)
@handle_errors
def resume_command(
    target: OptionalTargetArg = None,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "resume",
        target,
        {},
        directory,
        seed,
        as_json,
        bootstrap_server=bootstrap_server,
        nodes=nodes,
    )


@fault_app.command(
    "start",
    help="Start stopped node(s) or ZooKeeper server(s) (default: every stopped one, ZooKeeper "
    "first) and wait until they serve (a ZooKeeper server: as leader or follower).",
)
@handle_errors
def start_command(
    target: OptionalTargetArg = None,
    rejoin_timeout: RejoinOption = None,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "start",
        target,
        {},
        directory,
        seed,
        as_json,
        rejoin_timeout=rejoin_timeout,
        bootstrap_server=bootstrap_server,
        nodes=nodes,
    )


@fault_app.command(
    "restart",
    help="Terminate (SIGKILL after --timeout) and start again, waiting until served; a "
    "ZooKeeper server starts with its zoo.cfg and must rejoin the ensemble.",
)
@handle_errors
def restart_command(
    target: TargetArg,
    timeout: TimeoutOption = 30.0,
    down: DownOption = 0.0,
    rejoin_timeout: RejoinOption = None,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "restart",
        target,
        {"down": down or None},
        directory,
        seed,
        as_json,
        timeout,
        rejoin_timeout,
        bootstrap_server=bootstrap_server,
        nodes=nodes,
    )


@fault_app.command(
    "rolling-restart",
    help="Restart each target in turn (default all-brokers; the active controller last), "
    "waiting after each until every partition's ISR is full again (after a ZooKeeper "
    "server: until the ensemble has a leader and a majority).",
)
@handle_errors
def rolling_restart_command(
    target: OptionalTargetArg = None,
    timeout: TimeoutOption = 30.0,
    down: DownOption = 0.0,
    rejoin_timeout: RejoinOption = None,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "rolling-restart",
        target,
        {"down": down or None},
        directory,
        seed,
        as_json,
        timeout,
        rejoin_timeout,
        bootstrap_server=bootstrap_server,
        nodes=nodes,
    )


@fault_app.command(
    "isolate",
    help="Cut the target node(s) off the network (netns mode): from everyone by default; "
    "--one-way: the targets cannot hear the others, who still hear them.",
)
@handle_errors
def isolate_command(
    target: TargetArg,
    from_: FromOption = None,
    one_way: Annotated[
        bool, typer.Option("--one-way", help="Asymmetric: only the targets are deaf.")
    ] = False,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "isolate",
        target,
        {"from": from_, "one_way": one_way or None},
        directory,
        seed,
        as_json,
        bootstrap_server=bootstrap_server,
        nodes=nodes,
    )


@fault_app.command(
    "partition",
    help="Split the cluster (netns mode). SPEC: halves (random minority | majority), bridge "
    "(two halves and one node that hears both, Jepsen's), or components like "
    "'1,2|3,3001' (zookeeper-N names ZooKeeper server N).",
)
@handle_errors
def partition_command(
    spec: Annotated[str, typer.Argument(help="halves | bridge | 'A,B|C,D'")] = "halves",
    nodes: Annotated[
        str | None,
        typer.Option(
            "--nodes", help="TARGET naming the nodes taking part (default all).", show_default=False
        ),
    ] = None,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "partition",
        spec,
        {"nodes": nodes},
        directory,
        seed,
        as_json,
        bootstrap_server=bootstrap_server,
    )


@fault_app.command(
    "loss", help="Drop a random fraction of the packets the target node(s) receive (netns)."
)
@handle_errors
def loss_command(
    target: TargetArg,
    probability: Annotated[
        float, typer.Option("--probability", "-p", help="0 < P <= 1.", min=0.0, max=1.0)
    ] = 0.1,
    from_: FromOption = None,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "loss",
        target,
        {"probability": probability, "from": from_},
        directory,
        seed,
        as_json,
        bootstrap_server=bootstrap_server,
        nodes=nodes,
    )


@fault_app.command(
    "bandwidth", help="Limit the target node(s) to --rate each way (tc tbf on its veth; netns)."
)
@handle_errors
def bandwidth_command(
    target: TargetArg,
    rate: Annotated[str, typer.Option("--rate", help="e.g. 1mbit, 500kbit.")] = "1mbit",
    burst: Annotated[str, typer.Option("--burst", help="tbf burst.")] = "32kbit",
    latency: Annotated[str, typer.Option("--latency", help="tbf queue latency.")] = "400ms",
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "bandwidth",
        target,
        {"rate": rate, "burst": burst, "latency": latency},
        directory,
        seed,
        as_json,
        bootstrap_server=bootstrap_server,
        nodes=nodes,
    )


@fault_app.command(
    "latency",
    help="Delay the target node(s)' packets (tc netem; netns). Refused where the kernel has "
    "no netem.",
)
@handle_errors
def latency_command(
    target: TargetArg,
    delay: Annotated[str, typer.Option("--delay", help="e.g. 100ms.")] = "100ms",
    jitter: Annotated[str | None, typer.Option("--jitter", help="e.g. 10ms.")] = None,
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    seed: SeedOption = None,
    as_json: JsonOption = False,
) -> None:
    _run(
        "latency",
        target,
        {"delay": delay, "jitter": jitter},
        directory,
        seed,
        as_json,
        bootstrap_server=bootstrap_server,
        nodes=nodes,
    )


@fault_app.command("heal", help="Remove every network fault (flush the lab's chains, qdiscs).")
@handle_errors
def heal_command(
    directory: DirOption = None,
    bootstrap_server: BootstrapServerOption = None,
    nodes: NodesOption = None,
    as_json: JsonOption = False,
) -> None:
    _run("heal", None, {}, directory, None, as_json, bootstrap_server=bootstrap_server, nodes=nodes)
