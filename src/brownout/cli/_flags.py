"""--help that shows flags bare and repeated arguments by their items' type. Typer
prints every parameter's type beside it: for a flag that reads `--pipeline <bool>`, as
if it took a value (click, and Kafka's own tools, show a flag without one), and for an
argument given several times `directories... <list[Path]>`, a Python type."""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

_LIST_TYPE = re.compile(r"<list\[(\w+)\]>")


def _plain(params: list[Any], ctx: Any) -> list[Any]:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
        elif isinstance(param, TyperArgument):
            shown = _LIST_TYPE.fullmatch(param.display_type_rich(ctx) or "")
            if shown is not None:  # its name already ends in "...": the items' type
                item = f"<{shown.group(1).lower()}>"
                param.display_type_rich = lambda ctx, item=item: item  # type: ignore[method-assign,misc]
    return params


class Command(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _plain(super().get_params(ctx), ctx)


class Group(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _plain(super().get_params(ctx), ctx)


def show_flags_bare(app: typer.Typer) -> None:
    """Every command of `app` and of its sub-apps (registered so far) shows its flags
    bare, and its repeated arguments by their items' type, in --help."""
    app.info.cls = Group
    for command in app.registered_commands:
        command.cls = Command
    for group in app.registered_groups:
        group.cls = Group
        if group.typer_instance is not None:
            show_flags_bare(group.typer_instance)
