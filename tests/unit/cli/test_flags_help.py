"""Every command's --help shows its flags bare: `--keep-cluster`, never
`--keep-cluster <bool>`, which reads as if the flag took a value; and a repeatable
option names what one value is (`--set PARAMETER=VALUE`), not `<list[str]>`."""

from __future__ import annotations

from typing import Any

from _cli import command, invoke


def command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name, sub in getattr(command, "commands", {}).items():
        paths += command_paths(sub, (*path, name))
    return paths


def test_no_help_shows_a_value_for_a_flag() -> None:
    # one command tree for every --help (tests/_cli.py): typer's runner would build the
    # ~60 commands again for each of them, 15-19 s of a busy machine's worker
    paths = command_paths(command())
    assert ("run",) in paths and ("scenarios", "show") in paths and len(paths) > 40
    for path in paths:
        result = invoke([*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, (path, result.output)
        assert "<list[" not in result.output, (path, result.output)
    # flags are still listed, and options that take a value still say which
    shown = invoke(["run", "--help"], env={"COLUMNS": "200"}).output
    assert "--keep-cluster " in shown and "--seed" in shown and "<int>" in shown
