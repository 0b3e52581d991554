"""--help that shows flags bare. Typer prints every option's type beside it, and for a
flag that reads `--pipeline <bool>`, as if it took a value; click, and Kafka's own
tools, show a flag without one."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption


def _bare(params: list[Any]) -> list[Any]:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    return params


class Command(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _bare(super().get_params(ctx))


class Group(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _bare(super().get_params(ctx))


def show_flags_bare(app: typer.Typer) -> None:
    """Every command of `app` and of its sub-apps (registered so far) shows its flags
    bare in --help."""
    app.info.cls = Group
    for command in app.registered_commands:
        command.cls = Command
    for group in app.registered_groups:
        group.cls = Group
        if group.typer_instance is not None:
            show_flags_bare(group.typer_instance)
