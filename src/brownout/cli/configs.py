"""`brownout configs` (like kafka-configs.sh, for topics, brokers, users and clients). It
speaks only the Kafka protocol, so --bootstrap can point it at any Kafka cluster."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated

import typer

from ..cluster.admin import AdminError
from ..cluster.configs import (
    BROKERS,
    CLIENTS,
    DEFAULT_BROKER,
    ENTITY_TYPES,
    USERS,
    ConfigAdmin,
    completed_message,
    dynamic_entries,
    format_describe,
    missing_deletes,
    parse_add_config,
    parse_delete_config,
)
from ._common import (
    BootstrapOption,
    DirOption,
    TimeoutOption,
    UsageError,
    handle_errors,
    resolve_bootstrap,
)

CONFIGS_HELP = "\n\n".join([
    "Describe or alter the dynamic configs of a topic or a broker, or the client quotas "
    "and SCRAM credentials of users and clients (like kafka-configs.sh).",
    "--describe lists the configs set on the entity itself, each with its synonyms (all "
    "topics, or all brokers and the cluster-wide default, without --entity-name). --alter "
    "sets --add-config 'k1=v1,k2=\\[a,b]' and removes --delete-config k1,k2 with "
    "IncrementalAlterConfigs. --entity-default names the cluster-wide broker default.",
    "Users and clients (--entity-type users|clients, or --user/--client, both for a "
    "user's client): quotas (producer_byte_rate, consumer_byte_rate, request_percentage, "
    "controller_mutation_rate) with DescribeClientQuotas and AlterClientQuotas; a user's "
    "SCRAM credentials with --add-config 'SCRAM-SHA-256=\\[iterations=8192,password=pw]' "
    "and --delete-config SCRAM-SHA-512. --entity-default (--user-defaults, "
    "--client-defaults) names the default user or client.",
])

_ORDER = "brownout.configs.entity_order"


def _noted(kind: str) -> Callable[[typer.Context, object], object]:
    """A callback that notes where --entity-name or --entity-default first came on the
    command line: Kafka pairs names with types in that order, and click calls the
    callbacks of the options given in the order they were given."""
    def callback(ctx: typer.Context, value: object) -> object:
        if value:
            ctx.meta.setdefault(_ORDER, []).append(kind)
        return value
    return callback


def entity_args(
    entity_types: Sequence[str], entity_names: Sequence[str], defaults: int,
    order: Sequence[str], *, user: str | None = None, client: str | None = None,
    user_defaults: bool = False, client_defaults: bool = False,
) -> tuple[list[str], list[str]]:
    """kafka-configs.sh's entity types and names ("" for a default), in its order, with
    its checks (UsageError with its messages): --entity-type values, then the flags
    --client, --user, --client-defaults, --user-defaults; names paired the same way."""
    flags = [(client is not None, CLIENTS, client), (user is not None, USERS, user)]
    default_flags = [(client_defaults, CLIENTS), (user_defaults, USERS)]
    types = list(entity_types) + [t for given, t, _ in flags if given] + [
        t for given, t in default_flags if given]
    from_specs: list[str] = []
    for kind in order:
        from_specs += list(entity_names) if kind == "name" else [""] * defaults
    names = from_specs + [n for given, _, n in flags if given and n is not None] + [
        "" for given, _ in default_flags if given]
    twice = [t for i, t in enumerate(types) if t in types[:i]]
    if twice:
        raise UsageError(f"Duplicate entity type(s) specified: {','.join(dict.fromkeys(twice))}")
    for t in types:
        if t not in ENTITY_TYPES:
            raise UsageError(f"Invalid entity type {t}, the entity type must be one of "
                             f"{', '.join(ENTITY_TYPES)} with a --bootstrap-server argument")
    if not types:
        raise UsageError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise UsageError("Only 'users' and 'clients' entity types may be specified together")
    if (entity_types or entity_names or defaults) and (
            any(given for given, _, _ in flags) or user_defaults or client_defaults):
        raise UsageError("--entity-{type,name,default} should not be used in conjunction "
                         "with specific entity flags")
    return types, names


def entity_name_for(entity_type: str, name: str | None, default: bool) -> str | None:
    """The resource name of a topic or broker (DEFAULT_BROKER for --entity-default;
    None: every entity), refusing what kafka-configs.sh refuses."""
    if entity_type not in ENTITY_TYPES:
        raise UsageError(f"Invalid entity type {entity_type}, the entity type must be one of "
                         f"{', '.join(ENTITY_TYPES)} with a --bootstrap-server argument")
    if default and name is not None:
        raise UsageError("give --entity-name or --entity-default, not both")
    if default:
        if entity_type != BROKERS:
            raise UsageError("--entity-default goes with --entity-type brokers")
        return DEFAULT_BROKER
    if name is not None and entity_type == BROKERS and not name.lstrip("-").isdigit():
        raise UsageError(f"The entity name for brokers must be a valid integer broker id, "
                         f"but it is: {name}")
    return name


@handle_errors
def configs_command(
    ctx: typer.Context,
    describe: Annotated[bool, typer.Option("--describe", help="List the entity's dynamic "
                                           "configs.")] = False,
    alter: Annotated[bool, typer.Option("--alter", help="Change the entity's configs.")
                     ] = False,
    entity_type: Annotated[list[str] | None, typer.Option(
        "--entity-type", metavar="TYPE", help="topics, brokers, users or clients (users and "
        "clients together for a user's client).", show_default=False)] = None,
    entity_name: Annotated[list[str] | None, typer.Option(
        "--entity-name", metavar="NAME", help="A topic name, a broker id, a user principal or "
        "a client id (one per --entity-type).", show_default=False,
        callback=_noted("name"))] = None,
    entity_default: Annotated[int, typer.Option(
        "--entity-default", count=True, metavar="", show_default=False,
        help="The default entity (brokers: the cluster-wide default; users, clients: the "
        "default user or client).",
        callback=_noted("default"))] = 0,
    user: Annotated[str | None, typer.Option(
        "--user", metavar="USER", help="The user's principal name.", show_default=False)] = None,
    client: Annotated[str | None, typer.Option(
        "--client", metavar="CLIENT", help="The client's ID.", show_default=False)] = None,
    user_defaults: Annotated[bool, typer.Option(
        "--user-defaults", help="The config defaults for all users.")] = False,
    client_defaults: Annotated[bool, typer.Option(
        "--client-defaults", help="The config defaults for all clients.")] = False,
    add_config: Annotated[str | None, typer.Option(
        "--add-config", metavar="K=V[,K=V]", help="Configs to set; square brackets group "
        "values that contain commas.", show_default=False)] = None,
    delete_config: Annotated[list[str] | None, typer.Option(
        "--delete-config", metavar="K[,K]", help="Configs to remove.", show_default=False)
    ] = None,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    if describe == alter:
        raise UsageError("give exactly one of --describe, --alter")
    types, names = entity_args(
        entity_type or [], entity_name or [], entity_default, ctx.meta.get(_ORDER, []),
        user=user, client=client, user_defaults=user_defaults,
        client_defaults=client_defaults)
    if describe and (add_config is not None or delete_config):
        raise UsageError("--add-config and --delete-config go with --alter")
    if types[0] in (USERS, CLIENTS):
        _users_and_clients(types, names, describe, add_config, delete_config or [],
                           resolve_bootstrap(bootstrap, directory), timeout)
        return
    if len(entity_name or []) > 1 or entity_default > 1:
        raise UsageError("An entity name must be specified for every entity type")
    name = entity_name_for(types[0], entity_name[0] if entity_name else None,
                           bool(entity_default))
    entity_type_ = types[0]
    admin = ConfigAdmin(resolve_bootstrap(bootstrap, directory), timeout)
    if describe:
        names_ = admin.entity_names(entity_type_) if name is None else [name]
        for n in names_:
            shown = dynamic_entries(entity_type_, n, admin.entries(entity_type_, n))
            for line in format_describe(entity_type_, n, shown):
                typer.echo(line)
        return
    if name is None:
        raise UsageError(f"an entity name must be specified with --alter of {entity_type_}"
                         if entity_type_ != BROKERS else "an entity-name or default entity "
                         "must be specified with --alter of users, clients, brokers or ips")
    if add_config is None and not delete_config:
        raise UsageError("At least one of --add-config, --add-config-file, or --delete-config "
                         "must be specified with --alter")
    try:
        add = parse_add_config(add_config) if add_config is not None else {}
    except ValueError as e:
        raise UsageError(str(e)) from None
    deletes = parse_delete_config(delete_config or [])
    if deletes:
        invalid = missing_deletes(entity_type_, name, admin.entries(entity_type_, name), deletes)
        if invalid:
            raise AdminError(f"Invalid config(s): {','.join(invalid)}")
    admin.alter(entity_type_, name, add, deletes)
    typer.echo(completed_message(entity_type_, name))


def _users_and_clients(types: list[str], names: list[str], describe: bool,
                       add_config: str | None, delete_config: list[str], bootstrap: str,
                       timeout: float) -> None:
    """--describe or --alter of users, clients or a user's clients, as kafka-configs.sh
    does it with --bootstrap-server."""
    from ..cluster.quotas import (
        QuotaAdmin,
        QuotaCommandError,
        entity_pairs,
        plan_alteration,
        quota_lines,
        scram_lines,
    )

    if len(names) > len(types):
        raise UsageError("More entity names specified than entity types")
    if not describe:
        if not names:
            raise UsageError("An entity-name or default entity must be specified with "
                             "--alter of users, clients, brokers or ips")
        if add_config is None and not delete_config:
            raise UsageError("At least one of --add-config, --add-config-file, or "
                             "--delete-config must be specified with --alter")
        if len(types) != len(names):
            raise UsageError("An entity name must be specified for every entity type")
    admin = QuotaAdmin(bootstrap, timeout)
    if describe:
        for line in quota_lines(admin.describe_quotas(types, names)):
            typer.echo(line)
        # Credentials only of users, and not of the default user (as the tool).
        if CLIENTS not in types and "" not in names:
            for line in scram_lines(admin.describe_scram(names)):
                typer.echo(line)
        return
    try:
        add = parse_add_config(add_config) if add_config is not None else {}
    except ValueError as e:
        raise UsageError(str(e)) from None
    deletes = parse_delete_config(delete_config)

    def current() -> dict[str, float]:
        found = admin.describe_quotas(types, names)
        return dict(found[0][1]) if found else {}

    try:
        plan = plan_alteration(types, names, add, deletes, current)
    except QuotaCommandError as e:
        raise AdminError(str(e)) from None
    if plan.is_quota:
        admin.alter_quotas(entity_pairs(types, names), plan.quotas)
    else:
        admin.alter_scram(names[0], plan.scram_deletions, plan.scram_upsertions)
    typer.echo(completed_message(types[0], names[0]))
