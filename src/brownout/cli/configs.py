"""`brownout configs` (like kafka-configs.sh, for topics and brokers). It speaks only the
Kafka protocol, so --bootstrap can point it at any Kafka cluster."""

from __future__ import annotations

from typing import Annotated

import typer

from ..cluster.admin import AdminError
from ..cluster.configs import (
    BROKERS,
    DEFAULT_BROKER,
    ENTITY_TYPES,
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
    "Describe or alter the dynamic configs of a topic or a broker (like kafka-configs.sh).",
    "--describe lists the configs set on the entity itself, each with its synonyms (all "
    "topics, or all brokers and the cluster-wide default, without --entity-name). --alter "
    "sets --add-config 'k1=v1,k2=[a,b]' and removes --delete-config k1,k2 with "
    "IncrementalAlterConfigs. --entity-default names the cluster-wide broker default.",
])


def entity_name_for(entity_type: str, name: str | None, default: bool) -> str | None:
    """The resource name (DEFAULT_BROKER for --entity-default; None: every entity),
    refusing what kafka-configs.sh refuses."""
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
    describe: Annotated[bool, typer.Option("--describe", help="List the entity's dynamic "
                                           "configs.")] = False,
    alter: Annotated[bool, typer.Option("--alter", help="Change the entity's configs.")
                     ] = False,
    entity_type: Annotated[str, typer.Option("--entity-type", help="topics or brokers.",
                                             show_default=False)] = "",
    entity_name: Annotated[str | None, typer.Option(
        "--entity-name", help="A topic name or a broker id.", show_default=False)] = None,
    entity_default: Annotated[bool, typer.Option(
        "--entity-default", help="The cluster-wide default (brokers).")] = False,
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
    if not entity_type:
        raise UsageError("At least one entity type must be specified")
    name = entity_name_for(entity_type, entity_name, entity_default)
    if describe and (add_config is not None or delete_config):
        raise UsageError("--add-config and --delete-config go with --alter")
    admin = ConfigAdmin(resolve_bootstrap(bootstrap, directory), timeout)
    if describe:
        names = admin.entity_names(entity_type) if name is None else [name]
        for n in names:
            shown = dynamic_entries(entity_type, n, admin.entries(entity_type, n))
            for line in format_describe(entity_type, n, shown):
                typer.echo(line)
        return
    if name is None:
        raise UsageError(f"an entity name must be specified with --alter of {entity_type}"
                         if entity_type != BROKERS else "an entity-name or default entity "
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
        invalid = missing_deletes(entity_type, name, admin.entries(entity_type, name), deletes)
        if invalid:
            raise AdminError(f"Invalid config(s): {','.join(invalid)}")
    admin.alter(entity_type, name, add, deletes)
    typer.echo(completed_message(entity_type, name))
