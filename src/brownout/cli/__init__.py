"""The `brownout` command line."""

from __future__ import annotations

import typer

from ..common.startup import without_hypothesis
from ._flags import show_flags_bare
from .acls import ACLS_HELP, acls_command
from .clean import CLEAN_HELP, clean_command
from .cluster import DOWN_HELP, STATUS_HELP, UP_HELP, down_command, status_command, up_command
from .compare import COMPARE_HELP, compare_command
from .configs import CONFIGS_HELP, configs_command
from .console import (
    CONSOLE_CONSUMER_HELP,
    CONSOLE_PRODUCER_HELP,
    console_consumer_command,
    console_producer_command,
)
from .demo import demo_command
from .faults import fault_app
from .groups import (
    CONSUMER_GROUPS_HELP,
    LEADER_ELECTION_HELP,
    consumer_groups_command,
    leader_election_command,
)
from .kafka import kafka_app
from .kafka_tool import tool_command  # noqa: F401  (registers `brownout kafka tool`)
from .perf import (
    CONSUMER_PERF_HELP,
    PERF_CONTEXT,
    PRODUCER_PERF_HELP,
    consumer_perf_test_command,
    producer_perf_test_command,
)
from .pipeline import pipeline_app
from .quorum import quorum_app
from .reassign import REASSIGN_HELP, reassign_partitions_command
from .report import report_command
from .run import RUN_HELP, SWEEP_HELP, run_command, scenarios_app, sweep_command
from .spark import spark_app
from .storage import DUMP_LOG_HELP, dump_log_command, storage_app
from .topics import OFFSETS_HELP, offsets_command, topics_app
from .watch import WATCH_HELP, watch_command
from .workload import check_command, consume_command, produce_command

app = typer.Typer(
    name="brownout",
    help="A laboratory for Kafka availability and durability.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(storage_app, name="storage")
app.command("dump-log", help=DUMP_LOG_HELP)(dump_log_command)
app.command("demo")(demo_command)
app.command("up", help=UP_HELP)(up_command)
app.command("down", help=DOWN_HELP)(down_command)
app.command("clean", help=CLEAN_HELP)(clean_command)
app.command("status", help=STATUS_HELP)(status_command)
app.command("watch", help=WATCH_HELP)(watch_command)
app.add_typer(topics_app, name="topics")
app.command("offsets", help=OFFSETS_HELP)(offsets_command)
app.command("consumer-groups", help=CONSUMER_GROUPS_HELP)(consumer_groups_command)
app.command("leader-election", help=LEADER_ELECTION_HELP)(leader_election_command)
app.command("configs", help=CONFIGS_HELP)(configs_command)
app.command("acls", help=ACLS_HELP)(acls_command)
app.command("console-producer", help=CONSOLE_PRODUCER_HELP)(console_producer_command)
app.command("console-consumer", help=CONSOLE_CONSUMER_HELP)(console_consumer_command)
app.command("producer-perf-test", help=PRODUCER_PERF_HELP, context_settings=PERF_CONTEXT)(
    producer_perf_test_command)
app.command("consumer-perf-test", help=CONSUMER_PERF_HELP)(consumer_perf_test_command)
app.command("reassign-partitions", help=REASSIGN_HELP)(reassign_partitions_command)
app.add_typer(quorum_app, name="metadata-quorum")
app.add_typer(fault_app, name="fault")
app.command("produce")(produce_command)
app.command("consume")(consume_command)
app.command("check")(check_command)
app.add_typer(pipeline_app, name="pipeline")
app.add_typer(spark_app, name="spark")
app.add_typer(kafka_app, name="kafka")
app.command("report")(report_command)
app.command("run", help=RUN_HELP)(run_command)
app.command("sweep", help=SWEEP_HELP)(sweep_command)
app.command("compare", help=COMPARE_HELP)(compare_command)
app.add_typer(scenarios_app, name="scenarios")
show_flags_bare(app)


def main() -> None:
    """The `brownout` command: no command imports Hypothesis (common/startup.py), and the
    package's heavier modules are imported by the commands that need them, after this."""
    without_hypothesis()
    app()
