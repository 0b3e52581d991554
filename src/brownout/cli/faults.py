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

import inspect
import json
import keyword
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..cluster.state import ClusterState, locked, resolve_dir
from ..cluster.supervisor import DEFAULT_START_TIMEOUT, KAFKA_START_TIMEOUT, start_timeout
from ..faults.kinds import KINDS, REJOIN_TIMEOUT, TERMINATE_TIMEOUT, Kind, Option
from ..faults.targets import TARGET_HELP, describe_id
from ._common import DirOption, UsageError, fail, handle_errors

if TYPE_CHECKING:
    from ..faults.nemesis import Fault, FaultResult
    from ..faults.nodes_file import NodesFile

# The nemesis and the external control (the wire client, the storage faults) are imported
# where a fault runs, so that `brownout --help` starts without them. The commands are
# made from the registry of fault kinds (faults.kinds), which imports nothing of the lab.
COMMANDS = tuple(k for k in KINDS.values() if k.command)

fault_app = typer.Typer(
    name="fault",
    help="Inject one fault into the cluster in --dir ("
    + ", ".join(k.name for k in COMMANDS)
    + "). "
    + TARGET_HELP
    + ". ZooKeeper servers (of a cluster with an ensemble) take the process faults and, "
    "like nodes, the network ones. Network faults need `brownout up --network netns` "
    "(root). Exit status: 0 ok, 1 refused/failed, 3 indeterminate.",
    no_args_is_help=True,
)

TargetArg = Annotated[str, typer.Argument(help=TARGET_HELP, show_default=False)]
OptionalTargetArg = Annotated[str | None, typer.Argument(help=TARGET_HELP, show_default=False)]
SpecArg = Annotated[str, typer.Argument(help="halves | bridge | 'A,B|C,D'")]
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
            resolved = ", ".join(map(describe_id, result.nodes)) or "-"
            typer.echo(f"target {target} -> node(s) {resolved}")
        line = f"{result.outcome}: {action}: {result.message} ({result.duration:.2f}s)"
        typer.echo(line, err=result.outcome == "fail")
    raise typer.Exit(EXIT.get(result.outcome, 1))


# -- the commands, one per fault kind with `command` ----------------------------------

_TYPES: dict[str, type] = {"number": float, "text": str, "flag": bool}
_Param = inspect.Parameter


def _python_name(param: str) -> str:
    return param + "_" if keyword.iskeyword(param) else param


def _option(option: Option) -> _Param:
    """The command's parameter for a kind's option, as typer reads it."""
    kind: Any = _TYPES[option.type]
    if option.default is None:
        kind = kind | None
    info = typer.Option(*option.flags, help=option.help, min=option.minimum,
                        max=option.maximum, show_default=option.show_default)
    return _Param(_python_name(option.param), _Param.KEYWORD_ONLY,
                  annotation=Annotated[kind, info], default=option.default)


def _parameters(kind: Kind) -> list[_Param]:
    """The command's parameters in the order --help shows them: the target, the
    kind's own options (a SIGTERM's --timeout first, --rejoin-timeout last), then the
    common ones."""
    out = []
    positional = _Param.POSITIONAL_OR_KEYWORD
    if kind.target == "required":
        out.append(_Param("target", positional, annotation=TargetArg))
    elif kind.target == "optional":
        out.append(_Param("target", positional, annotation=OptionalTargetArg, default=None))
    elif kind.target == "spec":
        out.append(_Param("spec", positional, annotation=SpecArg, default="halves"))
    keyword_only = _Param.KEYWORD_ONLY
    if TERMINATE_TIMEOUT in kind.settings:
        out.append(_Param("timeout", keyword_only, annotation=TimeoutOption, default=30.0))
    out += [_option(o) for o in kind.options]
    if REJOIN_TIMEOUT in kind.settings:
        out.append(_Param("rejoin_timeout", keyword_only, annotation=RejoinOption,
                          default=None))
    out.append(_Param("directory", keyword_only, annotation=DirOption, default=None))
    out.append(_Param("bootstrap_server", keyword_only, annotation=BootstrapServerOption,
                      default=None))
    if _takes_nodes_file(kind):
        out.append(_Param("nodes", keyword_only, annotation=NodesOption, default=None))
    if kind.target != "none":
        out.append(_Param("seed", keyword_only, annotation=SeedOption, default=None))
    out.append(_Param("as_json", keyword_only, annotation=JsonOption, default=False))
    return out


def _takes_nodes_file(kind: Kind) -> bool:
    """--nodes names the external cluster's nodes file, unless the kind's own option is
    called so (partition: the nodes taking part)."""
    return not any("--nodes" in o.flags for o in kind.options)


def _make_command(kind: Kind) -> Callable[..., None]:
    parameters = _parameters(kind)

    def command(**values: Any) -> None:
        params: dict[str, Any] = {}
        for option in kind.options:
            value = values[_python_name(option.param)]
            params[option.param] = (value or None) if option.omit_zero else value
        target = values.get("spec", values.get("target"))
        _run(
            kind.name,
            target,
            params,
            values["directory"],
            values.get("seed"),
            values["as_json"],
            values.get("timeout", 30.0),
            values.get("rejoin_timeout"),
            bootstrap_server=values["bootstrap_server"],
            nodes=values.get("nodes") if _takes_nodes_file(kind) else None,
        )

    command.__name__ = kind.run + "_command"
    command.__qualname__ = command.__name__
    # typer reads the options from the signature and their types from the annotations.
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    return command


for _kind in COMMANDS:
    fault_app.command(_kind.name, help=_kind.help)(handle_errors(_make_command(_kind)))
