"""`brownout topics create | list | describe | delete | alter` (like kafka-topics.sh) and
`brownout offsets` (like GetOffsetShell). They speak only the Kafka protocol
(confluent-kafka's AdminClient, and the lab's own wire client for describe), so
--bootstrap can point them at any Kafka cluster."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..cluster.admin import (
    Admin,
    DescribedTopic,
    PartitionFilters,
    format_describe,
    format_filtered,
    format_offsets,
)
from ..cluster.groups import GroupAdmin
from ..common.java_hashmap import hashmap_order
from ._common import (
    BootstrapOption,
    DirOption,
    TimeoutOption,
    UsageError,
    handle_errors,
    parse_key_values,
    resolve_bootstrap,
)

topics_app = typer.Typer(
    help="Create, list, describe, delete and alter topics (like kafka-topics.sh).",
    no_args_is_help=True,
)


@topics_app.command("create")
@handle_errors
def create_command(
    name: Annotated[str, typer.Argument(help="The topic to create.", show_default=False)],
    partitions: Annotated[
        int,
        typer.Option(
            "--partitions",
            "-p",
            help="Number of partitions; -1 = the broker's num.partitions.",
        ),
    ] = -1,
    replication_factor: Annotated[
        int,
        typer.Option(
            "--replication-factor",
            "-r",
            help="Replicas per partition; -1 = the broker's default.replication.factor.",
        ),
    ] = -1,
    config: Annotated[
        list[str] | None,
        typer.Option(
            "--config",
            "-c",
            metavar="KEY=VALUE",
            help="A topic config override, e.g. min.insync.replicas=2 (repeatable).",
        ),
    ] = None,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    """Create a topic and print `Created topic NAME.`"""
    if partitions == 0 or partitions < -1:
        raise UsageError(f"--partitions must be at least 1 (or -1), got {partitions}")
    if replication_factor == 0 or replication_factor < -1:
        raise UsageError(
            f"--replication-factor must be at least 1 (or -1), got {replication_factor}"
        )
    configs = parse_key_values(config, "--config")
    admin = Admin(resolve_bootstrap(bootstrap, directory), timeout)
    admin.create_topic(name, partitions, replication_factor, configs)
    typer.echo(f"Created topic {name}.")


@topics_app.command("delete")
@handle_errors
def delete_command(
    name: Annotated[str, typer.Argument(help="The topic to delete.", show_default=False)],
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    """Delete a topic; silent on success, as kafka-topics.sh --delete."""
    GroupAdmin(resolve_bootstrap(bootstrap, directory), timeout).delete_topic(name)


@topics_app.command("alter")
@handle_errors
def alter_command(
    name: Annotated[str, typer.Argument(help="The topic to alter.", show_default=False)],
    partitions: Annotated[
        int, typer.Option("--partitions", "-p", help="The new (larger) partition count.",
                          show_default=False),
    ],
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    """Add partitions to a topic; silent on success, as kafka-topics.sh --alter."""
    if partitions < 1:
        raise UsageError(f"--partitions must be at least 1, got {partitions}")
    GroupAdmin(resolve_bootstrap(bootstrap, directory), timeout).alter_partitions(
        name, partitions)


@topics_app.command("list")
@handle_errors
def list_command(
    exclude_internal: Annotated[
        bool,
        typer.Option(
            "--exclude-internal",
            help="Leave out internal topics such as __consumer_offsets.",
        ),
    ] = False,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    """Print every topic name, one a line, sorted."""
    admin = Admin(resolve_bootstrap(bootstrap, directory), timeout)
    for name in admin.topic_names():
        if exclude_internal and name.startswith("__"):
            continue
        typer.echo(name)


DESCRIBE_HELP = "\n\n".join(
    [
        "Describe topics exactly like `kafka-topics.sh --describe`.",
        "Tab separated: a header line with TopicId, PartitionCount, ReplicationFactor and the "
        "topic's Configs that are not defaults (set on the topic or the brokers), in the order "
        "Kafka's tool prints them, then one line per partition "
        "with Leader ('none' when there is no leader), Replicas, Isr, Elr and LastKnownElr.",
        "The replication reports (--under-replicated-partitions, --under-min-isr-partitions, "
        "--at-min-isr-partitions, --unavailable-partitions; several may be given) print no "
        "header, only the partitions any of them matches.",
    ]
)

OFFSETS_HELP = "\n\n".join(
    [
        "Print `topic:partition:offset` for every partition (like GetOffsetShell).",
        "A partition without a leader (or whose request fails) is reported on stderr as "
        "`topic:partition: no leader` and the others are still printed; exit status 0.",
    ]
)


@topics_app.command("describe", help=DESCRIBE_HELP)
@handle_errors
def describe_command(
    names: Annotated[
        list[str] | None,
        typer.Argument(
            help="Topics to describe (default: every topic).",
            show_default=False,
        ),
    ] = None,
    exclude_internal: Annotated[
        bool,
        typer.Option(
            "--exclude-internal",
            help="Leave out internal topics such as __consumer_offsets.",
        ),
    ] = False,
    under_replicated: Annotated[bool, typer.Option(
        "--under-replicated-partitions",
        help="Only partitions whose ISR is smaller than their replica set.")] = False,
    under_min_isr: Annotated[bool, typer.Option(
        "--under-min-isr-partitions",
        help="Only partitions without a leader or with fewer ISR members than "
        "min.insync.replicas.")] = False,
    at_min_isr: Annotated[bool, typer.Option(
        "--at-min-isr-partitions",
        help="Only partitions whose ISR is exactly min.insync.replicas.")] = False,
    unavailable: Annotated[bool, typer.Option(
        "--unavailable-partitions",
        help="Only partitions without a leader or led by a broker that is not live.")
    ] = False,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    filters = PartitionFilters(under_replicated, under_min_isr, at_min_isr, unavailable)
    admin = Admin(resolve_bootstrap(bootstrap, directory), timeout)
    topics = tool_order(admin.describe(names or None, exclude_internal=exclude_internal))
    if not filters.any():
        for topic in topics:
            for line in format_describe(topic):
                typer.echo(line)
        return
    min_isr, live = admin.replication_view([t.name for t in topics])
    for topic in topics:
        for line in format_filtered(topic, min_isr[topic.name], live, filters):
            typer.echo(line)


def tool_order(topics: list[DescribedTopic]) -> list[DescribedTopic]:
    """The topics in the order kafka-topics.sh (4.x) prints them: it puts the sorted names
    into a `HashMap<>(n)` of futures (KafkaAdminClient's describeTopics), copies that into
    another (DescribeTopicsResult.allTopicNames) and prints that map's values."""
    by_name = {t.name: t for t in topics}
    n = len(by_name)
    return [by_name[name] for name in hashmap_order(hashmap_order(sorted(by_name), n), n)]


@handle_errors
def offsets_command(
    topic: Annotated[str, typer.Argument(help="The topic.", show_default=False)],
    time: Annotated[
        int,
        typer.Option(
            "--time",
            help="-1: log-end offsets (latest), -2: log-start offsets (earliest), or a "
            "timestamp in ms (first offset at or after it).",
        ),
    ] = -1,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    if time < -2:
        raise UsageError(f"--time must be -1, -2 or a timestamp in ms, got {time}")
    admin = Admin(resolve_bootstrap(bootstrap, directory), timeout)
    out, err = format_offsets(admin.offsets(topic, time))
    for line in out:
        typer.echo(line)
    for line in err:
        print(line, file=sys.stderr)
