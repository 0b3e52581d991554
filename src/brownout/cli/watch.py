"""`brownout watch`: a live view of one cluster while people break it by hand.

Every `--interval` seconds: each node's process state (a lab cluster) or each broker
Metadata lists (`--bootstrap-server`), the active controller and the quorum or ZooKeeper
ensemble, every partition's leader, replicas and ISR with what changed since the last
frame highlighted (a new leader, an ISR that shrank or grew, a partition without a
leader), and each topic's write rate from its log-end offsets. A frame that cannot be
read says why and the next one tries again. `--once` draws one frame and exits.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..cluster.admin import Admin, AdminError, DescribedTopic
from ._common import BootstrapOption, DirOption, resolve_dir

Key = tuple[str, int]  # (topic, partition)

# How a partition changed since the previous frame, and how it is shown.
STYLES = {"new": "cyan", "leader": "bold yellow", "isr-": "bold red", "isr+": "green",
          "leaderless": "bold white on red"}


@dataclasses.dataclass(frozen=True)
class PartitionView:
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclasses.dataclass
class Frame:
    at: float
    status: dict[str, Any] | None
    partitions: dict[Key, PartitionView]
    end_offsets: dict[str, int]  # topic -> sum of its partitions' log-end offsets
    error: str | None = None


def partition_changes(previous: Mapping[Key, PartitionView] | None,
                      current: Mapping[Key, PartitionView]) -> dict[Key, str]:
    """What changed per partition: leaderless, a new leader, an ISR that shrank or grew,
    or a partition not seen before (nothing on the first frame)."""
    if previous is None:
        return {k: "leaderless" for k, v in current.items() if v.leader is None}
    out: dict[Key, str] = {}
    for key, view in current.items():
        before = previous.get(key)
        if view.leader is None:
            out[key] = "leaderless"
        elif before is None:
            out[key] = "new"
        elif view.leader != before.leader:
            out[key] = "leader"
        elif set(view.isr) < set(before.isr):
            out[key] = "isr-"
        elif set(view.isr) > set(before.isr):
            out[key] = "isr+"
    return out


def write_rates(previous: Frame | None, current: Frame) -> dict[str, float]:
    """Records per second written to each topic between two frames."""
    if previous is None or current.at <= previous.at:
        return {}
    seconds = current.at - previous.at
    return {t: max(0, n - previous.end_offsets[t]) / seconds
            for t, n in current.end_offsets.items() if t in previous.end_offsets}


def views(topics: Sequence[DescribedTopic]) -> dict[Key, PartitionView]:
    return {(t.name, p.partition): PartitionView(p.leader, p.replicas, p.isr)
            for t in topics for p in t.partitions}


# -- reading the cluster -------------------------------------------------------------


def collect(directory: Path | None, bootstrap: str | None, timeout: float) -> Frame:
    from ..cluster import lab  # here: `brownout --help` starts without the lab's imports

    now = time.monotonic()
    try:
        if bootstrap:
            status = lab.external_status(bootstrap, timeout)
        else:
            assert directory is not None
            status = lab.status(directory, timeout)
        servers = bootstrap or status.get("bootstrap_servers") or ""
        admin = Admin(servers, timeout)
        topics = admin.describe(exclude_internal=True)
        ends = {}
        for t in topics:
            offsets = admin.offsets(t.name)
            ends[t.name] = sum(o.offset or 0 for o in offsets)
        return Frame(now, status, views(topics), ends)
    except (lab.LabError, AdminError, OSError) as e:
        return Frame(now, None, {}, {}, error=str(e))


# -- drawing -------------------------------------------------------------------------


def render(frame: Frame, previous: Frame | None) -> Group:
    parts: list[Any] = []
    if frame.error is not None:
        parts.append(Text(f"cannot read the cluster: {frame.error}", style="red"))
        return Group(*parts)
    status = frame.status or {}
    nodes = Table(title=f"cluster {status.get('cluster_id') or '?'}", title_justify="left")
    for column in ("node", "roles", "state", "fenced"):
        nodes.add_column(column)
    for n in status.get("nodes", []):
        state = str(n.get("state"))
        nodes.add_row(str(n["id"]), ",".join(n.get("roles", [])),
                      Text(state, style="green" if state in ("running", "unknown") else "red"),
                      str(n.get("fenced")))
    parts.append(nodes)
    parts.append(Text(_controller_line(status)))
    changes = partition_changes(previous.partitions if previous else None, frame.partitions)
    rates = write_rates(previous, frame)
    table = Table(title="partitions (highlighted: changed since the last frame)",
                  title_justify="left")
    for column in ("topic", "partition", "leader", "replicas", "isr", "change"):
        table.add_column(column)
    for (topic, partition), view in sorted(frame.partitions.items()):
        change = changes.get((topic, partition), "")
        style = STYLES.get(change, "")
        table.add_row(topic, str(partition), "none" if view.leader is None else str(view.leader),
                      ",".join(map(str, view.replicas)), ",".join(map(str, view.isr)),
                      change, style=style)
    parts.append(table)
    if rates:
        parts.append(Text("writes/s: " + "  ".join(f"{t} {r:.0f}" for t, r in
                                                    sorted(rates.items()))))
    parts.append(Text(time.strftime("%H:%M:%S") + "  (Ctrl-C to stop)", style="dim"))
    return Group(*parts)


def _controller_line(status: Mapping[str, Any]) -> str:
    controller = status.get("controller")
    if isinstance(controller, Mapping):
        who = controller.get("id", controller.get("broker"))
        return f"controller: {who if who is not None else 'none'} ({status.get('mode')})"
    quorum = status.get("quorum") or {}
    if quorum:
        return f"quorum leader: {quorum.get('leader_id', '?')}"
    return f"controller: {status.get('controller_id', '?')}"


WATCH_HELP = (
    "A live view of a cluster while you break it in another terminal: nodes and their "
    "state, the controller, every partition's leader and ISR with changes highlighted, "
    "and each topic's write rate. Works on the lab's cluster (--dir) or any Kafka "
    "cluster (--bootstrap-server)."
)


def watch_command(
    directory: DirOption = None,
    bootstrap: BootstrapOption = None,
    interval: Annotated[float, typer.Option("--interval", min=0.2,
                                            help="Seconds between frames.")] = 1.0,
    once: Annotated[bool, typer.Option("--once", help="Draw one frame and exit.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1,
                                           help="Seconds for each request.")] = 2.0,
) -> None:
    console = Console(highlight=False)
    where = None if bootstrap else resolve_dir(directory)
    previous: Frame | None = None
    frame = collect(where, bootstrap, timeout)
    if once:
        console.print(render(frame, None))
        raise typer.Exit(1 if frame.error else 0)
    try:
        with Live(render(frame, None), console=console, refresh_per_second=4) as live:
            while True:
                time.sleep(interval)
                previous, frame = frame, collect(where, bootstrap, timeout)
                live.update(render(frame, previous))
    except KeyboardInterrupt:
        pass
