"""Every command's --help shows its flags bare: `--keep-cluster`, never
`--keep-cluster <bool>`, which reads as if the flag took a value; and a repeatable
option names what one value is (`--set PARAMETER=VALUE`), not `<list[str]>`."""

from __future__ import annotations

from typing import Any

import typer.main
from typer.testing import CliRunner

from brownout.cli import app


def command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name, sub in getattr(command, "commands", {}).items():
        paths += command_paths(sub, (*path, name))
    return paths


def test_no_help_shows_a_value_for_a_flag() -> None:
    paths = command_paths(typer.main.get_command(app))
    assert ("run",) in paths and ("scenarios", "show") in paths and len(paths) > 40
    for path in paths:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, (path, result.output)
        assert "<list[" not in result.output, (path, result.output)
    # flags are still listed, and options that take a value still say which
    shown = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    assert "--keep-cluster " in shown and "--seed" in shown and "<int>" in shown
