"""`brownout acls` (like kafka-acls.sh): list, add and remove ACLs over CreateAcls,
DescribeAcls and DeleteAcls. It speaks only the Kafka protocol, so --bootstrap can point
it at any Kafka cluster with an authorizer."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..cluster.acls import (
    AclAdmin,
    AclUsageError,
    Entry,
    Pattern,
    Principals,
    Resources,
    acls_to_apply,
    binding_text,
    describe_all,
    format_adding,
    format_current,
    parse_pattern_type,
    parse_principal,
    removal_question,
    resource_patterns,
    unsendable,
)
from ._common import (
    BootstrapOption,
    DirOption,
    TimeoutOption,
    UsageError,
    handle_errors,
    resolve_bootstrap,
)

ACLS_HELP = "\n\n".join([
    "List, add and remove ACLs (like kafka-acls.sh); the cluster needs an authorizer "
    "(authorizer.class.name).",
    "Exactly one action: --list [resources] [--principal P]; --add or --remove with "
    "resources (--topic, --group, --transactional-id, --cluster), --allow-principal or "
    "--deny-principal (User:alice; hosts default to *) and --operation (default All), or "
    "--producer / --consumer for their usual operations. --resource-pattern-type is "
    "literal (the default) or prefixed; listing and removing also take any and match. "
    "--remove asks before it removes, unless --force.",
])


@handle_errors
def acls_command(
    list_: Annotated[bool, typer.Option("--list", help="List ACLs (of the resources "
                                        "named, else all).")] = False,
    add: Annotated[bool, typer.Option("--add", help="Add ACLs.")] = False,
    remove: Annotated[bool, typer.Option("--remove", help="Remove ACLs.")] = False,
    topic: Annotated[list[str] | None, typer.Option(
        "--topic", metavar="TOPIC", help="A topic ('*': every topic); repeatable.",
        show_default=False)] = None,
    group: Annotated[list[str] | None, typer.Option(
        "--group", metavar="GROUP", help="A consumer group ('*': every group); repeatable.",
        show_default=False)] = None,
    transactional_id: Annotated[list[str] | None, typer.Option(
        "--transactional-id", metavar="ID", help="A transactional id ('*': every one); "
        "repeatable.", show_default=False)] = None,
    cluster: Annotated[bool, typer.Option("--cluster", help="The cluster resource.")] = False,
    pattern_type: Annotated[str, typer.Option(
        "--resource-pattern-type", metavar="literal|prefixed|any|match",
        help="How the resource names match.")] = "literal",
    operation: Annotated[list[str] | None, typer.Option(
        "--operation", metavar="OPERATION", help="Read, Write, Create, Delete, Alter, "
        "Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All "
        "(the default); repeatable.", show_default=False)] = None,
    allow_principal: Annotated[list[str] | None, typer.Option(
        "--allow-principal", metavar="TYPE:NAME", help="A principal to allow (User:alice, "
        "User:*); repeatable.", show_default=False)] = None,
    deny_principal: Annotated[list[str] | None, typer.Option(
        "--deny-principal", metavar="TYPE:NAME", help="A principal to deny (a DENY wins "
        "over every ALLOW); repeatable.", show_default=False)] = None,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", metavar="HOST", help="Where --allow-principal may connect from "
        "(default: *, anywhere); repeatable.", show_default=False)] = None,
    deny_host: Annotated[list[str] | None, typer.Option(
        "--deny-host", metavar="HOST", help="Where --deny-principal is denied from "
        "(default: *); repeatable.", show_default=False)] = None,
    principal: Annotated[list[str] | None, typer.Option(
        "--principal", metavar="TYPE:NAME", help="With --list: only this principal's "
        "ACLs; repeatable.", show_default=False)] = None,
    producer: Annotated[bool, typer.Option(
        "--producer", help="Write, Describe and Create on --topic; Write and Describe on "
        "--transactional-id.")] = False,
    consumer: Annotated[bool, typer.Option(
        "--consumer", help="Read and Describe on --topic, Read on --group.")] = False,
    idempotent: Annotated[bool, typer.Option(
        "--idempotent", help="With --producer: IdempotentWrite on the cluster.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Remove without asking.")] = False,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    actions = [name for name, on in (("--list", list_), ("--add", add), ("--remove", remove))
               if on]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove.")
    grants = Principals(allow_principal or [], deny_principal or [], allow_host or [],
                        deny_host or [])
    _check_options(list_, grants, principal, producer, consumer, idempotent, operation,
                   topic, group, cluster, transactional_id)
    resources = Resources(topic or [], group or [], transactional_id or [], cluster)
    try:
        kind = parse_pattern_type(pattern_type, adding=add)
        if list_:
            shown = [parse_principal(p) for p in principal or []]
            filters = resource_patterns(resources, kind)
        else:
            planned = acls_to_apply(resources, kind, grants, operation or [], producer,
                                    consumer, idempotent)
        if not list_ and (missing := unsendable(planned)):
            raise AclUsageError(f"{', '.join(missing)}: an operation this command's client "
                                "(confluent-kafka) cannot send; use Kafka's kafka-acls.sh")
    except AclUsageError as e:
        raise UsageError(str(e)) from None
    admin = AclAdmin(resolve_bootstrap(bootstrap, directory), timeout)
    if list_:
        _list(admin, filters, shown)
    elif add:
        if any(not acl for acl in planned.values()):
            raise UsageError("You must specify one of: --allow-principal, --deny-principal "
                             "when trying to add ACLs.")
        _add(admin, planned)
    else:
        _remove(admin, planned, force)


def _check_options(list_: bool, grants: Principals, principal: list[str] | None,
                   producer: bool, consumer: bool, idempotent: bool,
                   operation: list[str] | None, topic: list[str] | None,
                   group: list[str] | None, cluster: bool,
                   transactional_id: list[str] | None) -> None:
    """kafka-acls.sh's checks of which options go together."""
    if list_ and (producer or consumer or grants.allow or grants.deny or grants.allow_hosts
                  or grants.deny_hosts):
        raise UsageError("--list takes no --producer, --consumer, --allow-principal, "
                         "--deny-principal, --allow-host or --deny-host")
    if (producer or consumer) and (operation or grants.deny or grants.deny_hosts):
        raise UsageError("--producer and --consumer take no --operation, --deny-principal "
                         "or --deny-host")
    if principal and not list_:
        raise UsageError("The --principal option is only available if --list is set")
    if producer and not topic:
        raise UsageError("With --producer you must specify a --topic")
    if idempotent and not producer:
        raise UsageError("The --idempotent option is only available if --producer is set")
    if consumer and (not topic or not group or (not producer and (cluster or
                                                                   transactional_id))):
        raise UsageError("With --consumer you must specify a --topic and a --group and no "
                         "--cluster or --transactional-id option should be specified.")


def _list(admin: AclAdmin, filters: list[Pattern], shown: list[str]) -> None:
    found = describe_all(admin, filters)
    if not shown:
        for line in format_current(found):
            typer.echo(line)
        return
    for who in dict.fromkeys(shown):
        typer.echo(f"ACLs for principal `{who}`")
        mine = {p: {e for e in acl if e.principal == who} for p, acl in found.items()}
        for line in format_current(mine):
            typer.echo(line)


def _add(admin: AclAdmin, planned: dict[Pattern, set[Entry]]) -> None:
    for pattern in sorted(planned):
        existing = admin.describe_acls(pattern).get(pattern, set())
        new: set[Entry] = set()
        for entry in sorted(planned[pattern]):
            if entry in existing:
                typer.echo(f"Acl {binding_text(pattern, entry)} already exists.")
            else:
                new.add(entry)
        if new:
            for line in format_adding(pattern, new):
                typer.echo(line)
            admin.create_acls(pattern, new)


def _remove(admin: AclAdmin, planned: dict[Pattern, set[Entry]], force: bool) -> None:
    for pattern in sorted(planned):
        if not force:
            for line in removal_question(pattern, planned[pattern]):
                typer.echo(line)
            answer = sys.stdin.readline()
            if answer.strip().lower() != "y":
                continue
        admin.delete_acls(pattern, planned[pattern])
