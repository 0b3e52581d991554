"""`brownout pipeline run | check`: the Spark Structured Streaming jobs over the workload
topics (brownout.spark.pipeline) and their end-to-end audit (brownout.spark.audit)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Annotated

import typer

from ..common.extras import pyspark_home
from ._common import (
    BootstrapOption,
    DirOption,
    UsageError,
    check_output_directory,
    handle_errors,
    resolve_bootstrap,
)

pipeline_app = typer.Typer(help="Spark streaming jobs over the workload topics, and their "
                           "audit.", no_args_is_help=True)


@pipeline_app.command("run")
@handle_errors
def run_command(
    topics: Annotated[str, typer.Option(
        "--topics", help="Comma-separated topics, TOPIC or TOPIC:WORKLOAD (payments, clicks, "
        "logs); a bare topic must be named after its workload.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (Parquet, "
                                      "checkpoints, progress.jsonl, pipeline.json).")],
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    master: Annotated[str, typer.Option(
        help="Spark master: local[N], or a cluster's URL such as the spark://127.0.0.1:PORT "
        "of `brownout spark up` (executors get this brownout package).")] = "local[*]",
    duration: Annotated[float | None, typer.Option(
        help="Seconds to run (default: until Ctrl-C).", show_default=False)] = None,
    trigger: Annotated[str, typer.Option(
        help="Micro-batch interval (2s, 500 milliseconds) or availableNow (catch up, "
        "then stop).")] = "2s",
    window: Annotated[str, typer.Option(help="Tumbling window length.")] = "1 minute",
    watermark: Annotated[str, typer.Option(help="Allowed event-time lateness.")] = "30 seconds",
    session_gap: Annotated[str, typer.Option(help="clicks: session inactivity gap.")
                           ] = "1 minute",
    flag_threshold: Annotated[int, typer.Option(
        help="payments: flag accounts with more new payments per window.")] = 5,
    starting_offsets: Annotated[str, typer.Option(
        help="earliest | latest | JSON (first start only; then the checkpoint).")
                                ] = "earliest",
    max_offsets_per_trigger: Annotated[int | None, typer.Option(
        help="Limit offsets per micro-batch.", show_default=False)] = None,
    fail_on_data_loss: Annotated[bool, typer.Option(
        "--fail-on-data-loss/--no-fail-on-data-loss",
        help="Stop when planned offsets are gone from the log (else warn and skip).")
                                 ] = True,
    ledger: Annotated[bool, typer.Option(
        "--ledger/--no-ledger", help="Also record every record read (for the audit).")
                      ] = True,
    drain: Annotated[float, typer.Option(
        help="On stop, wait up to this many seconds to catch up with the log.")] = 0.0,
) -> None:
    """Run the streaming jobs (event-time windows, watermarks) into Parquet, reading Kafka
    with Spark's own source (spark-sql-kafka-0-10; `brownout spark install` fetches it
    once)."""
    pyspark_home("brownout pipeline run")
    from ..spark.pipeline import PipelineConfig, parse_topics, run_pipeline
    from ..spark.session import KafkaSourceMissing

    try:
        topic_map = parse_topics(topics)
    except ValueError as e:
        raise UsageError(str(e)) from None
    check_output_directory(out)
    config = PipelineConfig(
        bootstrap=resolve_bootstrap(bootstrap, directory), topics=topic_map, out=out,
        master=master, trigger=trigger, duration=duration, window=window,
        watermark=watermark, session_gap=session_gap, flag_threshold=flag_threshold,
        starting_offsets=starting_offsets, max_offsets_per_trigger=max_offsets_per_trigger,
        fail_on_data_loss=fail_on_data_loss, ledger=ledger, drain_timeout=drain)
    stop = threading.Event()
    typer.echo(f"pipeline: {', '.join(f'{t} ({w})' for t, w in topic_map.items())} -> {out}",
               err=True)
    try:
        result = run_pipeline(config, stop=stop)
    except KeyboardInterrupt:
        stop.set()
        raise
    except KafkaSourceMissing as e:
        raise UsageError(str(e)) from None
    typer.echo(json.dumps({k: result.get(k) for k in ("status", "error", "spark_startup_s",
                                                      "queries")}, indent=2))
    if result.get("status") != "stopped":
        raise typer.Exit(1)


@pipeline_app.command("check")
@handle_errors
def check_command(
    run_dir: Annotated[Path, typer.Argument(help="The workload run directory (history).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The pipeline's output directory.")],
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
) -> None:
    """Recompute the aggregates from the history and the log, compare with the pipeline's
    output window by window; writes RUN_DIR/pipeline-check.json."""
    pyspark_home("brownout pipeline check")
    from ..common.rundir import PIPELINE_CHECK_FILE
    from ..spark.audit import audit

    b = resolve_bootstrap(bootstrap, directory) if (bootstrap or directory) else None
    report = audit(run_dir, out, bootstrap=b)
    for topic, t in report["topics"].items():
        typer.echo(f"{topic}: {t['log_records']} records in the log, lost {t['lost']}, "
                   f"duplicated {t['duplicated']}, unacknowledged {t['unacknowledged_in_log']} "
                   f"(of which certainly failed {t['failed_in_log']}),"
                   f" unread by the pipeline {t['unread_by_pipeline']}")
        for name, o in t["outputs"].items():
            typer.echo(f"  {name}: {o['rows_equal']}/{o['rows_closed']} closed rows equal, "
                       f"{o['differences_pipeline']} pipeline differences, "
                       f"{o['rows_open']} open")
    typer.echo(f"valid: {report['valid']} ({run_dir / PIPELINE_CHECK_FILE})")
    if not report["valid"]:
        raise typer.Exit(1)
