"""`brownout produce | consume | check`: drive a workload against any Kafka and record
its history into a run directory, then read the log back and count (or check).

Only bootstrap servers are needed (--bootstrap), or the `brownout up` cluster in --dir.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..cluster.admin import Admin
from ..common.rundir import CHECK_FILE, HISTORY_FILE, HISTORY_JSONL
from ..workload.generators import WORKLOADS
from ._common import (
    BootstrapOption,
    DirOption,
    UsageError,
    fail,
    handle_errors,
    parse_key_values,
    refuse_unfinished,
    resolve_bootstrap,
)

if TYPE_CHECKING:
    from ..workload.run import WorkloadRun

# The clients and the history's Arrow tables (confluent_kafka, pyarrow) are imported by
# the commands that use them, so that `brownout --help` starts without them.

F = TypeVar("F", bound=Callable[..., Any])

OutOption = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="Run directory to record into (created; appended to if "
                 "it holds a run). Default: ./runs/<time>-<command>.", show_default=False),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", metavar="KEY=VALUE",
                 help="Extra librdkafka client config, e.g. compression.type=lz4 "
                 "(repeatable)."),
]


def _workload_errors(func: F) -> F:
    """RunError and bad settings become one-line errors like the cluster commands'."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from confluent_kafka import KafkaException

        from ..workload.run import RunError

        try:
            return func(*args, **kwargs)
        except RunError as e:
            raise UsageError(str(e)) from None
        except ValueError as e:
            raise UsageError(str(e)) from None
        except KafkaException as e:  # e.g. the final read cannot reach the cluster
            arg = e.args[0] if e.args else e
            text = arg.str() if hasattr(arg, "str") else str(arg)
            raise fail(f"Kafka client error: {text}", 1) from None

    return handle_errors(wrapper)  # type: ignore[return-value]


def _default_out(what: str) -> Path:
    return Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{what}"


def _client_config(items: list[str] | None) -> dict[str, Any]:
    return dict(parse_key_values(items, "--set"))


def _ensure_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int) -> bool:
    """Create the topic when it does not exist; True if created."""
    admin = Admin(bootstrap, 15.0)
    if topic in admin.topic_names():
        return False
    admin.create_topic(topic, partitions, replication_factor, {})
    return True


def _progress(run: WorkloadRun, started: float, last: dict[str, float]) -> Text:
    t = run.totals()
    now = time.monotonic()
    dt = max(1e-6, now - last.get("at", started))
    sent = t.get("sent", 0)
    rate = (sent - last.get("sent", 0)) / dt
    polled = t.get("polled", 0)
    poll_rate = (polled - last.get("polled", 0)) / dt
    last.update(at=now, sent=sent, polled=polled)
    parts = [f"{now - started:6.1f}s"]
    if run.producers:
        parts.append(
            f"send {rate:7.0f}/s  sent {sent}  acked {t.get('acked', 0)}  "
            f"failed {t.get('failed', 0)}  info {t.get('info', 0)}  "
            f"in-flight {t.get('in_flight', 0)}")
    if run.consumers:
        parts.append(f"poll {poll_rate:7.0f}/s  polled {polled}  "
                     f"rebalances {t.get('rebalances', 0)}  errors {t.get('poll_errors', 0)}")
    return Text("  ".join(parts))


def _drive(run: WorkloadRun, console: Console) -> bool:
    """Start the run, show a live line until it ends; False if interrupted (Ctrl-C)."""
    started = time.monotonic()
    last: dict[str, float] = {}
    run.start()
    try:
        with Live(_progress(run, started, last), console=console, refresh_per_second=4,
                  transient=False) as live:
            while run.running():
                time.sleep(0.25)
                live.update(_progress(run, started, last))
    except KeyboardInterrupt:
        console.print("\n[yellow]interrupted: stopping and flushing…[/yellow]")
        return False
    console.line()
    return True


def _summary(run: WorkloadRun, console: Console, elapsed: float) -> None:
    t = run.totals()
    table = Table(title=f"run {run.run_id} → {run.run_dir}", show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    for key in ("sent", "acked", "failed", "info", "in_flight", "polled", "poll_errors",
                "rebalances", "commits"):
        if key in t:
            table.add_row(key.replace("_", "-"), str(t[key]))
    if t.get("sent"):
        table.add_row("send rate", f"{t['sent'] / max(elapsed, 1e-6):.0f}/s")
    errors: dict[str, int] = {}
    for group in run.producers:
        for k, v in group.errors().items():
            errors[k] = errors.get(k, 0) + v
    for name, n in sorted(errors.items(), key=lambda kv: -kv[1]):
        table.add_row(f"  {name}", str(n))
    console.print(table)


def produce_command(
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic to produce to.")],
    workload: Annotated[str, typer.Option(
        "--workload", "-w", help=f"Stream: {' | '.join(WORKLOADS)}.")] = "payments",
    rate: Annotated[float, typer.Option(
        "--rate", "-r", help="Messages/s over all producers (0 = as fast as possible).",
        min=0)] = 1000.0,
    duration: Annotated[float, typer.Option(
        "--duration", "-d", help="Seconds to produce (0 = until --count or Ctrl-C).",
        min=0)] = 10.0,
    count: Annotated[int | None, typer.Option(
        "--count", "-n", help="Stop after this many messages (over all producers).",
        min=1)] = None,
    acks: Annotated[str, typer.Option("--acks", help="0 | 1 | all.")] = "all",
    producers: Annotated[int, typer.Option(
        "--producers", "-P", help="Concurrent producers (threads, one client each).",
        min=1)] = 1,
    idempotent: Annotated[bool, typer.Option(
        "--idempotent/--no-idempotent", help="enable.idempotence (needs --acks all).")] = False,
    retries: Annotated[int | None, typer.Option(
        "--retries", help="librdkafka retries (default: librdkafka's, unlimited).",
        min=0)] = None,
    linger_ms: Annotated[float, typer.Option("--linger-ms", help="linger.ms", min=0)] = 5.0,
    size: Annotated[int, typer.Option(
        "--size", help="Pad message values to this many bytes (0 = natural size).",
        min=0)] = 0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the generators.")] = 0,
    message_timeout_ms: Annotated[int, typer.Option(
        "--message-timeout-ms", help="message.timeout.ms (delivery timeout).",
        min=1)] = 30_000,
    flush_timeout: Annotated[float, typer.Option(
        "--flush-timeout", help="Seconds to wait for outstanding sends at the end, before "
        "purging them (recorded as info).", min=0)] = 10.0,
    partitions: Annotated[int, typer.Option(
        "--partitions", help="Create the topic with this many partitions if it does not "
        "exist.", min=1)] = 3,
    replication_factor: Annotated[int, typer.Option(
        "--replication-factor", help="...and this replication factor (-1 = broker "
        "default).")] = -1,
    consume_group: Annotated[str | None, typer.Option(
        "--consume-group", "-g", help="Also run a consumer group on the topic, recording "
        "into the same history.", show_default=False)] = None,
    consumers: Annotated[int, typer.Option(
        "--consumers", help="Members of --consume-group.", min=1)] = 1,
    observe: Annotated[bool, typer.Option(
        "--observe/--no-observe", help="Record the cluster's metadata (leaders, epochs, "
        "ISR) a few times a second.")] = True,
    client_config: SetOption = None,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    out: OutOption = None,
) -> None:
    """Produce a deterministic stream and record every send (invoke, then ok / fail /
    info from the delivery report) into a run directory."""
    _produce(**locals())


@_workload_errors
def _produce(**o: Any) -> None:
    from ..workload.consumer import ConsumerSettings
    from ..workload.producer import ACKS, ProducerSettings
    from ..workload.run import WorkloadRun

    if o["acks"] not in ACKS:
        raise UsageError(f"--acks must be one of {', '.join(ACKS)}, got {o['acks']!r}")
    if o["workload"] not in WORKLOADS:
        raise UsageError(f"--workload must be one of {', '.join(WORKLOADS)}")
    if not o["duration"] and not o["count"]:
        raise UsageError("give --duration or --count (or both)")
    servers = resolve_bootstrap(o["bootstrap"], o["directory"])
    console = Console(highlight=False)
    if _ensure_topic(servers, o["topic"], o["partitions"], o["replication_factor"]):
        console.print(f"Created topic {o['topic']}.")
    settings = ProducerSettings(
        bootstrap=servers, topic=o["topic"], workload=o["workload"], acks=o["acks"],
        idempotent=o["idempotent"], retries=o["retries"], linger_ms=o["linger_ms"],
        rate=o["rate"], duration=o["duration"] or None, count=o["count"],
        producers=o["producers"], seed=o["seed"], size=o["size"],
        message_timeout_ms=o["message_timeout_ms"], flush_timeout=o["flush_timeout"],
        config=_client_config(o["client_config"]))
    settings.validate()
    run_dir = o["out"] or _default_out("produce")
    params = {k: v for k, v in o.items() if k not in ("directory", "out")}
    params["directory"] = str(o["directory"]) if o["directory"] else None
    started = time.monotonic()
    with WorkloadRun(run_dir, bootstrap=servers, command="produce", params=params) as run:
        run.add_producers(settings)
        if o["consume_group"]:
            run.add_consumers(ConsumerSettings(
                bootstrap=servers, topics=[o["topic"]], group=o["consume_group"],
                consumers=o["consumers"], duration=None, config=_client_config(
                    o["client_config"])))
        if o["observe"]:
            run.add_observer([o["topic"]])
        completed = _drive_producers(run, console)
    _summary(run, console, time.monotonic() - started)
    console.print(f"history: {run_dir / HISTORY_FILE}")
    if not completed:
        raise typer.Exit(130)


def _drive_producers(run: WorkloadRun, console: Console) -> bool:
    """Like _drive, but consumers running alongside stop when the producers are done
    (plus a moment to read the last acknowledged messages)."""
    if not run.consumers:
        return _drive(run, console)
    started = time.monotonic()
    last: dict[str, float] = {}
    run.start()
    try:
        with Live(_progress(run, started, last), console=console, refresh_per_second=4) as live:
            while any(g.alive() for g in run.producers):
                time.sleep(0.25)
                live.update(_progress(run, started, last))
            grace = time.monotonic() + 3.0
            while time.monotonic() < grace and run.running():
                time.sleep(0.25)
                live.update(_progress(run, started, last))
    except KeyboardInterrupt:
        console.print("\n[yellow]interrupted: stopping and flushing…[/yellow]")
        return False
    console.line()
    return True


def consume_command(
    topic: Annotated[list[str], typer.Option("--topic", "-t", metavar="TOPIC",
                                             help="Topic (repeatable).")],
    group: Annotated[str, typer.Option("--group", "-g", help="Consumer group id.")],
    duration: Annotated[float, typer.Option(
        "--duration", "-d", help="Seconds to consume (0 = until Ctrl-C).", min=0)] = 10.0,
    consumers: Annotated[int, typer.Option(
        "--consumers", "-C", help="Members of the group (threads, one client each).",
        min=1)] = 1,
    commit_interval: Annotated[float, typer.Option(
        "--commit-interval", help="Seconds between offset commits (0 = never).",
        min=0)] = 1.0,
    session_timeout_ms: Annotated[int, typer.Option(
        "--session-timeout-ms", help="session.timeout.ms", min=1)] = 10_000,
    client_config: SetOption = None,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    out: OutOption = None,
) -> None:
    """Consume with a consumer group and record every record, assignment, revocation,
    commit and broker list the clients saw into a run directory."""
    _consume(**locals())


@_workload_errors
def _consume(**o: Any) -> None:
    from ..workload.consumer import ConsumerSettings
    from ..workload.run import WorkloadRun

    servers = resolve_bootstrap(o["bootstrap"], o["directory"])
    console = Console(highlight=False)
    settings = ConsumerSettings(
        bootstrap=servers, topics=list(o["topic"]), group=o["group"],
        consumers=o["consumers"], duration=o["duration"] or None,
        commit_interval=o["commit_interval"], session_timeout_ms=o["session_timeout_ms"],
        config=_client_config(o["client_config"]))
    settings.validate()
    run_dir = o["out"] or _default_out("consume")
    params = {k: v for k, v in o.items() if k not in ("directory", "out")}
    started = time.monotonic()
    with WorkloadRun(run_dir, bootstrap=servers, command="consume", params=params) as run:
        run.add_consumers(settings)
        completed = _drive(run, console)
    _summary(run, console, time.monotonic() - started)
    console.print(f"history: {run_dir / HISTORY_FILE}")
    if not completed:
        raise typer.Exit(130)


@_workload_errors
def check_command(
    run_dir: Annotated[Path, typer.Argument(help="The run directory.", show_default=False)],
    reread: Annotated[bool, typer.Option(
        "--reread", help="Read the log again even if final-read.parquet exists.")] = False,
    timeout: Annotated[float, typer.Option(
        "--timeout", help="Seconds the final read may take.", min=1)] = 60.0,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
) -> None:
    """Read the run's topics up to their high watermarks (once the cluster has healed),
    then check the history against the log."""
    from ..check.run_dir import check_run
    from ..workload.final_read import load_final_read
    from ..workload.history import ensure_parquet
    from ..workload.run import do_final_read, interrupted_text, load_run
    from ..workload.summary import counts

    console = Console(highlight=False)
    refuse_unfinished(run_dir)
    info = load_run(run_dir)
    if info.get("interrupted"):
        console.print(f"[yellow]this run was {interrupted_text(info['interrupted'])}: what "
                      "it recorded is checked; where the log was not read back, what is "
                      "missing counts as unknown, not lost[/yellow]")
    if ensure_parquet(run_dir / HISTORY_JSONL, run_dir / HISTORY_FILE):
        console.print(f"{HISTORY_FILE} was missing (the recording process was killed?): "
                      f"converted from {HISTORY_JSONL}")
    if reread or load_final_read(run_dir) is None:
        servers = (resolve_bootstrap(bootstrap, directory) if bootstrap or directory
                   else info["bootstrap"])
        result = do_final_read(run_dir, bootstrap=servers, timeout=timeout)
        for p in result.partitions:
            if not p.complete:
                console.print(f"[yellow]{p.topic}:{p.partition}: {p.error} "
                              f"(read to {p.reached} of {p.high_watermark})[/yellow]")
        console.print(f"final read: {result.table.num_rows} records from "
                      f"{len(result.partitions)} partitions"
                      f"{'' if result.complete else ' (INCOMPLETE)'}")
    table = Table(title=f"run {info['run_id']}: counts", show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in counts(run_dir).items():
        table.add_row(key.replace("_", "-"), str(value))
    console.print(table)
    report = check_run(run_dir)
    _print_report(report, console)
    console.print(f"report: {run_dir / CHECK_FILE}")
    if report.valid is False:
        raise typer.Exit(1)


def _print_report(report: Any, console: Console) -> None:
    """A compact view of the checkers' Report: each checker's verdict and anomalies."""
    data = report.to_dict()
    table = Table(title=f"verdict: valid={data.get('valid')}")
    table.add_column("checker")
    table.add_column("valid")
    table.add_column("anomalies")
    for name, result in (data.get("results") or {}).items():
        anomalies = ", ".join(
            f"{a}={v.get('count')}{'' if not v.get('allowed') else ' (allowed)'}"
            for a, v in (result.get("anomalies") or {}).items()) or "-"
        if result.get("error"):
            anomalies += f"  error: {result['error']}"
        table.add_row(name, str(result.get("valid")), anomalies)
    console.print(table)
