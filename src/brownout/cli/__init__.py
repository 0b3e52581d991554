"""The `brownout` command line."""

from __future__ import annotations

import typer

from .demo import demo_command
from .storage import storage_app

app = typer.Typer(
    name="brownout",
    help="A laboratory for Kafka availability and durability.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(storage_app, name="storage")
app.command("demo")(demo_command)


def main() -> None:
    app()
