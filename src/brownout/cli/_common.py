"""Options and error handling shared by the cluster commands (up, down, status, topics,
offsets): every failure becomes `Error: <one line>` on stderr and exit status 1 (2 for
bad arguments), never a traceback."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from ..cluster.admin import AdminError
from ..cluster.distribution import (
    DEFAULT_KAFKA_4,
    DistributionError,
    engine_home,
    open_home,
)
from ..cluster.state import DIR_ENV, StateError, resolve_dir
from ..cluster.supervisor import SupervisorError
from ..cluster.topology import TopologyError
from ..common import interrupt
from ..common.config import ConfigError
from ..common.extras import MissingExtra

F = TypeVar("F", bound=Callable[..., Any])

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        help=f"Working directory of the cluster (cluster.json, node-<id>/ folders). "
        f"Default: ${DIR_ENV}, else ./.brownout.",
        show_default=False,
    ),
]

BootstrapOption = Annotated[
    str | None,
    typer.Option(
        "--bootstrap",
        "--bootstrap-server",
        "-b",
        help="Bootstrap servers (host:port,...) of any Kafka cluster; overrides the "
        "cluster in --dir.",
        show_default=False,
    ),
]

TimeoutOption = Annotated[
    float,
    typer.Option("--timeout", help="Seconds to wait for each request to the cluster.", min=0.1),
]


class UsageError(Exception):
    """Bad arguments detected by our own checks (exit status 2)."""


ENGINE_HELP = (
    "What runs the nodes: node (Brownout's own node, the default; also brownout, as "
    "`compare --engines` names it), kafka (Apache Kafka "
    f"{DEFAULT_KAFKA_4}, real JVMs) or kafka:VERSION, a version installed with `brownout "
    "kafka install VERSION` (kafka:3.9 is the 3.9 line's default, 3.9.2). Kafka's nodes "
    "get the same server.properties, ports, log dirs and signals; their storage is "
    "formatted by Kafka's own storage tool.")
DISTRIBUTION_HELP = (
    "Run the nodes with your own Apache Kafka download (the folder with libs/), as "
    "--engine kafka does with an installed version. Needs Java 17.")


def resolve_engine(engine: str | None, distribution: Path | None) -> str | None:
    """The Apache Kafka folder (with libs/) that --engine or --distribution name; None
    for Brownout's node. UsageError when it is not there."""
    if engine is not None and distribution is not None:
        raise UsageError("--engine and --distribution both say what runs the nodes; give "
                         "one (--distribution KAFKA_HOME for a download of your own)")
    try:
        if distribution is not None:
            return str(open_home(distribution).home)
        return engine_home(engine)
    except DistributionError as e:
        raise UsageError(str(e)) from None


def check_output_directory(path: Path, option: str = "--out") -> Path:
    """Refuse, before anything runs, a directory to write into that cannot be made: a
    file at `path` or on the way to it, or a nearest existing folder that cannot be
    written. Nothing is left behind here: a run refused later leaves nothing."""
    whole = path.absolute()
    for folder in (whole, *whole.parents):
        if not folder.exists():
            continue
        if not folder.is_dir():
            raise UsageError(f"{option} {path}: {folder} is a file, not a directory")
        # Made and removed rather than asked of access(2): root passes every mode
        # check, and neither says that /proc or a read-only mount refuses a folder.
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".brownout-check-", dir=folder))
        except OSError as e:
            raise UsageError(f"{option} {path}: {folder} cannot be written "
                             f"({e.strerror or e})") from None
        break
    return path


def require_output_directory(path: Path, option: str = "--out") -> Path:
    """`check_output_directory` for the commands that print their own errors rather
    than use `handle_errors`: the same line, exit status 2."""
    try:
        return check_output_directory(path, option)
    except UsageError as e:
        raise fail(str(e), 2) from None


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(code)


def handle_errors(func: F) -> F:
    """Turn every expected failure into one clear message and exit status 1 or 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.BadParameter):
            raise
        except (UsageError, TopologyError, MissingExtra) as e:
            raise fail(str(e), 2) from None
        except (StateError, SupervisorError, AdminError, ConfigError) as e:
            raise fail(str(e), 1) from None
        except KeyboardInterrupt as e:
            raise fail("interrupted", interrupt.exit_status(e)) from None
        except OSError as e:
            raise fail(f"{e.strerror or e}{f': {e.filename}' if e.filename else ''}", 1) from None
        except RuntimeError as e:
            # A LabError comes from a command that loaded the lab: importing it here is
            # free then, and keeps the lab (kio, ZooKeeper's client) out of start-up.
            from ..cluster.lab import LabError

            if not isinstance(e, LabError):
                raise
            raise fail(str(e), 1) from None

    return wrapper  # type: ignore[return-value]


def resolve_bootstrap(bootstrap: str | None, directory: Path | None) -> str:
    """--bootstrap when given, else the running brokers of the cluster in --dir."""
    if bootstrap:
        return bootstrap
    from ..cluster.lab import bootstrap_servers

    return bootstrap_servers(resolve_dir(directory))


def parse_key_values(items: list[str] | None, option: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"{option} expects KEY=VALUE, got {item!r}")
        result[key.strip()] = value.strip()
    return result


def refuse_unfinished(run_dir: Path) -> None:
    """A scenario run still running, or killed with what it started left behind (its
    running.json), cannot be checked or reported yet: say what to do. Nor can a run
    interrupted before its workload started: nothing was recorded."""
    import json

    from ..common.rundir import RUN_FILE, VERDICT_FILE
    from ..scenarios.leftovers import run_state

    if not (run_dir / RUN_FILE).exists() and (run_dir / VERDICT_FILE).exists():
        try:
            how = json.loads((run_dir / VERDICT_FILE).read_text()).get("interrupted")
        except (OSError, ValueError, AttributeError):
            how = None
        if isinstance(how, dict):
            raise fail(f"the run in {run_dir} was interrupted by {how.get('by')} during "
                       f"{how.get('phase')}, before its workload started: it recorded "
                       "nothing to check or report", 1)
    state = run_state(run_dir)
    if state == "running":
        raise fail(f"{run_dir} is still running; check it once it ended", 1)
    if state == "killed":
        raise fail(f"the process of the run in {run_dir} was killed and left what it "
                   f"started behind: `brownout clean {run_dir}` stops that and marks the "
                   "run interrupted; then check or report it", 1)
