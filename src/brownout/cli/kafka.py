"""`brownout kafka install | list`: Apache Kafka's jars for `--engine kafka[:VERSION]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..cluster.distribution import (
    CACHE_ENV,
    DEFAULT_VERSIONS,
    DistributionError,
    cache_root,
    list_cached,
)

kafka_app = typer.Typer(
    help="Install Apache Kafka versions (from Maven Central, with Maven) for `brownout up "
    "--engine kafka[:VERSION]`, and list the installed ones.",
    no_args_is_help=True,
)

CacheOption = Annotated[
    Path | None,
    typer.Option(
        "--cache",
        help=f"The cache of installed versions (<cache>/<version>/libs/*.jar). Default: "
        f"${CACHE_ENV}, else ${{XDG_CACHE_HOME:-~/.cache}}/brownout/kafka.",
        show_default=False,
    ),
]


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(code)


@kafka_app.command("install")
def install_command(
    versions: Annotated[
        list[str] | None,
        typer.Argument(
            help=f"Kafka versions (default: {' '.join(DEFAULT_VERSIONS)}).",
            show_default=False,
        ),
    ] = None,
    cache: CacheOption = None,
    force: Annotated[
        bool, typer.Option("--force", help="Resolve again even when installed.")
    ] = False,
) -> None:
    """Resolve Kafka's broker and controller (kafka_2.13), its storage and admin tools
    (kafka-tools), its Java clients (kafka-clients) and a logging backend, with their
    dependencies, from Maven Central into the cache. Needs Java 17 and Maven (`mvn`);
    a version already installed is not resolved again, so this works offline then.
    Then one throwaway Kafka node runs once to make the version's class-data archive
    (its JVMs start on about 40% less CPU)."""
    from ..cluster import kafka_install  # here: it loads urllib (xml.sax.saxutils)

    root = cache_root(cache)
    for version in versions or list(DEFAULT_VERSIONS):
        try:
            result = kafka_install.install(version, root, force=force)
        except (kafka_install.InstallUsageError, DistributionError) as e:
            raise _fail(str(e), 2) from None
        except kafka_install.InstallError as e:
            raise _fail(str(e), 1) from None
        what = "installed" if result.resolved else "already installed"
        typer.echo(f"Apache Kafka {version}: {what}, {result.jars} jars in "
                   f"{result.distribution.libs}; class-data archive {result.archive}")


@kafka_app.command("list")
def list_command(cache: CacheOption = None) -> None:
    """The installed versions: version, jar count, size and folder."""
    root = cache_root(cache)
    found = list_cached(root)
    if not found:
        typer.echo(f"no Kafka version installed in {root} (run `brownout kafka install`)")
        return
    table = Table(title=f"Kafka versions in {root}", title_justify="left")
    for column in ("version", "jars", "size", "path"):
        table.add_column(column)
    for c in found:
        table.add_row(c.version, str(c.jars), f"{c.size_bytes / 2**20:.1f} MiB", str(c.home))
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=160)
    console.print(table)
