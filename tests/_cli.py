"""`brownout ARGS` run in-process on one click command built from the Typer app.

typer's CliRunner builds the whole command tree from the app on every invoke: for
brownout's ~60 commands that is ~0.17 s of a ~0.24 s `--help` (typer reads every
command's signature and type hints again). A module that runs dozens of commands builds
it once here. Building the tree is also what resolves every option's annotation, so a
broken one still fails: at the first invoke instead of at each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import typer.testing
from typer.main import get_command
from typer.testing import CliRunner, Result


@cache
def command() -> Any:
    from brownout.cli import app

    return get_command(app)


def invoke(args: Sequence[str], env: Mapping[str, str | None] | None = None,
           **kwargs: Any) -> Result:
    """CliRunner().invoke(app, args, ...) on the command built once. The runner takes a
    Typer app and builds its command through typer.testing's own `_get_command`, which
    is swapped for the built one during the call (a typer that renamed it fails here,
    loudly, rather than building the tree again unnoticed)."""
    from brownout.cli import app

    built = typer.testing._get_command
    typer.testing._get_command = lambda _: command()
    try:
        return CliRunner().invoke(app, list(args), env=env, **kwargs)
    finally:
        typer.testing._get_command = built
