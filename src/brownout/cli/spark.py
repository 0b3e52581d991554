"""`brownout spark up | down | status`: a Spark standalone cluster on this machine, from
PySpark's own jars, loopback only (brownout.spark.standalone), to run the pipeline on
(`brownout pipeline run --master spark://...`, `pipeline: {master: ...}`); and
`brownout spark install`: fetch Spark's Kafka source (the pipeline's) once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..common.extras import pyspark_home
from ._common import UsageError, handle_errors

spark_app = typer.Typer(help="A Spark standalone cluster on this machine (loopback) for the "
                        "pipeline, and Spark's Kafka source.", no_args_is_help=True)

StateDir = Annotated[Path | None, typer.Option(
    "--dir", help="State directory (pid files, logs, cluster.json); default "
    "$BROWNOUT_SPARK_DIR or ~/.brownout/spark.", show_default=False)]


def _dir(directory: Path | None) -> Path:
    from ..spark.standalone import default_dir

    return directory or default_dir()


@spark_app.command("up")
@handle_errors
def up_command(
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 2,
    cores: Annotated[int, typer.Option(help="Cores each worker offers.")] = 1,
    memory: Annotated[str, typer.Option(help="Memory each worker offers (Spark's "
                                        "notation: 1g, 768m).")] = "1g",
    directory: StateDir = None,
) -> None:
    """Start a master and N workers on 127.0.0.1; prints the master URL."""
    from ..spark.standalone import StandaloneError, up

    try:
        state = up(_dir(directory), workers=workers, cores=cores, memory=memory)
    except StandaloneError as e:
        raise UsageError(str(e)) from None
    typer.echo(json.dumps({k: state[k] for k in ("master", "webui", "workers", "pids")}))
    typer.echo(f"run the pipeline on it: brownout pipeline run --master {state['master']} ...",
               err=True)


@spark_app.command("install")
@handle_errors
def install_command() -> None:
    """Fetch Spark's Kafka source (spark-sql-kafka-0-10 at this PySpark's version) from
    Maven Central into the Ivy cache, so the pipeline starts offline afterwards; and make
    the class-data archives Spark's JVMs and ZooKeeper-mode labs' ZooKeeper servers
    start from (both run from PySpark's jars), once per PySpark, in
    ~/.cache/brownout/class-data."""
    pyspark_home("brownout spark install")
    from ..spark.session import KafkaSourceMissing, install_kafka_package

    try:
        done = install_kafka_package()
    except KafkaSourceMissing as e:
        raise UsageError(str(e)) from None
    done["zookeeper_class_data"] = _zookeeper_archive()
    typer.echo(json.dumps(done))


def _zookeeper_archive() -> str | None:
    """The ZooKeeper servers' class-data archive (made when missing), or None with a note
    on stderr: it only speeds their start up, so its absence fails nothing."""
    from ..cluster import zookeeper as zk
    from ..cluster import zookeeper_cds
    from ..common.java import JavaError, require_java

    try:
        jars = zk.jars_dir()
        archive = zookeeper_cds.existing_archive(jars)
        if archive is None:
            archive = zookeeper_cds.make_archive(require_java("ZooKeeper (QuorumPeerMain)"),
                                                 jars)
    except (JavaError, zk.ZooKeeperError, OSError) as e:
        typer.echo(f"note: no class-data archive for ZooKeeper's servers ({e}); they start "
                   "without one", err=True)
        return None
    return str(archive)


@spark_app.command("down")
@handle_errors
def down_command(directory: StateDir = None) -> None:
    """Stop the cluster `spark up` started (workers, then the master)."""
    from ..spark.standalone import StandaloneError, down

    try:
        stopped = down(_dir(directory))
    except StandaloneError as e:
        raise UsageError(str(e)) from None
    typer.echo(f"stopped {len(stopped)} Spark processes")


@spark_app.command("status")
@handle_errors
def status_command(directory: StateDir = None) -> None:
    """The running cluster's master URL and how many workers are alive."""
    from ..spark.standalone import alive_workers, read_state

    state = read_state(_dir(directory))
    if state is None:
        raise UsageError(f"no Spark cluster was started from {_dir(directory)}")
    try:
        alive: int | None = alive_workers(int(state["webui_port"]))
    except OSError:
        alive = None
    typer.echo(json.dumps({"master": state["master"], "workers": state["workers"],
                           "alive_workers": alive}))
    if alive is None:
        raise typer.Exit(1)
