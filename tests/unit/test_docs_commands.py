"""Every `brownout` command the README and docs/ show parses as written.

The commands are taken from the code blocks (fenced, and indented four spaces) of
README.md and docs/*.md: each line that starts with `brownout ` or `.venv/bin/brownout `,
with its `\\` continuation lines. For each one, cheaply and without starting anything:
its subcommand path exists and `brownout <path> --help` exits 0; every option it uses
is one that command declares and its help shows; and `brownout run NAME ...` with a
built-in NAME validates (`brownout run NAME --validate` exits 0). A renamed option or
command that the docs still show fails here.

Lines like `brownout report: 1,000,000 events ...` are a command's output, not a
command, and are skipped; so are `$ brownout ...` transcript lines.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from _cli import command, invoke

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PREFIXES = ("brownout ", ".venv/bin/brownout ")
# Shell syntax that ends the brownout command on a line.
ENDS = {"|", "||", "&&", "&", ";", ">", ">>", "<", "2>", "2>&1"}
FENCE = re.compile(r"^\s*(```|~~~)")
OUTPUT = re.compile(r"^[a-z-]+:")  # `brownout report: ...`: output, not a command


@dataclass(frozen=True)
class DocCommand:
    where: str  # file:line
    text: str
    args: tuple[str, ...]  # after `brownout`


def code_lines(text: str) -> list[tuple[int, str]]:
    """The lines of fenced code blocks, and of blocks indented four spaces after a
    blank line (Markdown's indented code), with their line numbers."""
    out: list[tuple[int, str]] = []
    fenced = indented = False
    previous_blank = True
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            indented = False
        elif fenced:
            out.append((number, line))
        elif line.startswith("    ") and (indented or previous_blank):
            indented = True
            out.append((number, line))
        elif line.strip():
            indented = False
        previous_blank = not line.strip()
    return out


def join_continuations(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in lines:
        if pending is not None:
            line = pending[1].rstrip() + " " + line.strip()
            number = pending[0]
            pending = None
        if line.rstrip().endswith("\\") and not _comment_start(line.rstrip()[:-1]) >= 0:
            pending = (number, line.rstrip()[:-1])
            continue
        joined.append((number, line))
    if pending is not None:
        joined.append(pending)
    return joined


def _comment_start(line: str) -> int:
    """Where a shell comment starts on the line (-1: none): a `#` after a space, outside
    quotes."""
    quote = ""
    for i, c in enumerate(line):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return i
    return -1


def parse(where: str, line: str) -> DocCommand | None:
    text = line.strip()
    prefix = next((p for p in PREFIXES if text.startswith(p)), None)
    if prefix is None:
        return None
    rest = text[len(prefix):]
    if OUTPUT.match(rest):
        return None
    cut = _comment_start(text)
    if cut >= 0:
        text = text[:cut].rstrip()
    tokens = shlex.split(text)[1:]
    for i, token in enumerate(tokens):
        if token in ENDS or token.startswith((">", "2>")):
            tokens = tokens[:i]
            break
    return DocCommand(where, text, tuple(tokens))


def substituted(where: str, line: str) -> list[DocCommand]:
    """The `$(brownout ...)` command substitutions on a line, as commands of their own."""
    return [c for inner in re.findall(r"\$\((brownout [^)]*)\)", line)
            if (c := parse(where, inner)) is not None]


def doc_commands() -> list[DocCommand]:
    found: list[DocCommand] = []
    for path in DOCS:
        lines = join_continuations(code_lines(path.read_text(encoding="utf-8")))
        for number, line in lines:
            where = f"{path.relative_to(ROOT)}:{number}"
            command = parse(where, line)
            if command is not None:
                found.append(command)
                found.extend(substituted(where, line))
    return found


COMMANDS = doc_commands()
ROOT_COMMAND = command()


# Commands as typer builds them (its own click): a group has `commands`, an option
# parameter's `param_type_name` is "option".
Command = Any


def subcommands(command: Command) -> dict[str, Command] | None:
    return getattr(command, "commands", None)


def resolve(args: tuple[str, ...]) -> tuple[tuple[str, ...], Command, list[str]]:
    """The subcommand path of `brownout ARGS`, its command, and the rest."""
    command = ROOT_COMMAND
    path: list[str] = []
    rest = list(args)
    while (children := subcommands(command)) is not None and rest and rest[0] in children:
        path.append(rest[0])
        command = children[rest.pop(0)]
    return tuple(path), command, rest


def declared_options(command: Command) -> set[str]:
    return {opt for p in command.params
            if p.param_type_name == "option" and not getattr(p, "hidden", False)
            for opt in (*p.opts, *p.secondary_opts)}


def used_options(command: Command, rest: list[str]) -> list[str]:
    """The options a command line uses. For a command that passes unknown options on
    (`brownout kafka tool NAME ARGS`), only those before its first argument are its own."""
    passes_on = bool(command.context_settings.get("ignore_unknown_options"))
    used: list[str] = []
    for token in rest:
        if token == "--":
            break
        if re.fullmatch(r"--[A-Za-z][\w-]*(=.*)?|-[A-Za-z]", token):
            used.append(token.split("=", 1)[0])
        elif passes_on and not token.startswith("-"):
            break
    return used


# Commands whose first argument is a scenario: a built-in name or a YAML file.
SCENARIO_COMMANDS = {("run",), ("sweep",), ("compare",), ("scenarios", "show")}


def first_argument(command: Command, rest: list[str]) -> str | None:
    """The first positional argument of a command line (an option's value skipped)."""
    flags = {opt for p in command.params if p.param_type_name == "option"
             and (p.is_flag or p.count) for opt in (*p.opts, *p.secondary_opts)}
    skip = False
    for token in rest:
        if skip:
            skip = False
        elif token.startswith("-"):
            skip = "=" not in token and token not in flags
        else:
            return token
    return None


@cache
def help_text(path: tuple[str, ...]) -> str:
    result = invoke([*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, f"brownout {' '.join(path)} --help: {result.output}"
    return result.output


@cache
def builtin_names() -> frozenset[str]:
    from brownout.scenarios import builtin_names as names

    return frozenset(names())


@cache
def validates(name: str) -> tuple[int, str]:
    result = invoke(["run", name, "--validate"])
    return result.exit_code, result.output


def test_the_docs_show_commands() -> None:
    # The extraction itself: the README's quick start and tour are found.
    texts = [c.text for c in COMMANDS if c.where.startswith("README.md")]
    assert any(t.startswith(".venv/bin/brownout run minority-outage") for t in texts), texts
    assert any(t.startswith("brownout topics describe") for t in texts), texts
    assert len(COMMANDS) > 50


def test_extraction_of_a_line() -> None:
    command = parse("x:1", "brownout scenarios show minority-outage > mine.yaml   # a file")
    assert command is not None and command.args == ("scenarios", "show", "minority-outage")
    assert parse("x:1", "brownout report: 1,000 events, 2.0 s") is None
    lines = join_continuations([(1, "brownout sweep a --set x=1 \\"), (2, "  --dry-run")])
    assert lines == [(1, "brownout sweep a --set x=1 --dry-run")]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: f"{c.where} {c.args[:2]}")
def test_a_docs_command_parses(command: DocCommand) -> None:
    path, click_command, rest = resolve(command.args)
    if subcommands(click_command) is not None:
        assert not rest or rest[0].startswith("-"), (
            f"{command.where}: `{command.text}`: no command {rest[0]!r} under "
            f"`brownout {' '.join(path)}`")
    shown = help_text(path)
    declared = declared_options(click_command)
    for option in used_options(click_command, rest):
        assert option in declared and option in shown, (
            f"{command.where}: `{command.text}`: `brownout {' '.join(path)}` has no "
            f"option {option}")
    scenario = first_argument(click_command, rest)
    if path in SCENARIO_COMMANDS and scenario is not None:
        assert scenario in builtin_names() or scenario.endswith((".yaml", ".yml")), (
            f"{command.where}: `{command.text}`: {scenario!r} is no built-in scenario "
            "and no YAML file")
        if path == ("run",) and scenario in builtin_names():
            code, output = validates(scenario)
            assert code == 0, f"{command.where}: brownout run {scenario} --validate: {output}"
