"""The command line starts light: `import brownout.cli`, `brownout --help` and `brownout
scenarios` load none of the lab's heavy layers (the cluster lab, the scenario validator,
the log layer, the protocol library, Arrow, plotly, the Kafka and ZooKeeper clients,
Spark), which the commands import when they run. Module names, not timings: a module
that comes back into start-up fails here on any machine.

And every command's --help still renders: typer resolves the options' annotations by name
when it builds the commands, so an annotation whose name moved into a function body
would fail only there."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from brownout.cli import app

# Each name: the module or package, and everything under it.
HEAVY = (
    "brownout.cluster.lab",
    "brownout.scenarios.schema",
    "brownout.scenarios.runner",
    "brownout.storage",
    "brownout.faults.nemesis",
    "brownout.protocol",
    "brownout.report",
    "brownout.check",
    "brownout.workload.run",
    "kio",
    "pyarrow",
    "plotly",
    "confluent_kafka",
    "kazoo",
    "pyspark",
)

# Runs in a fresh interpreter: the modules a command's start-up loads, as JSON.
PROBE = """
import json, sys
args = json.loads(sys.argv[1])
if args is None:
    import brownout.cli
else:
    from typer.testing import CliRunner
    from brownout.cli import app
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
print(json.dumps(sorted(sys.modules)))
"""


def loaded_modules(args: list[str] | None) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_heavy_names_are_real_modules():
    """A misspelt name in HEAVY would make the tests below pass whatever is loaded."""
    full = loaded_modules(["scenarios", "--verbose"]) + loaded_modules(["report", "--help"])
    import importlib.util

    for name in HEAVY:
        assert name in full or importlib.util.find_spec(name) is not None, name


@pytest.mark.parametrize("args", [None, ["--help"], ["scenarios"]],
                         ids=["import", "help", "scenarios"])
def test_start_up_loads_no_heavy_module(args):
    modules = loaded_modules(args)
    assert "brownout.cli" in modules
    assert heavy(modules) == []


def test_the_probe_sees_heavy_modules_when_a_command_loads_them():
    """`scenarios --verbose` validates every built-in: the validator must show up."""
    assert "brownout.scenarios.schema" in heavy(loaded_modules(["scenarios", "--verbose"]))


def command_paths() -> list[list[str]]:
    paths: list[list[str]] = []

    def walk(command, path: list[str]) -> None:
        paths.append(path)
        if hasattr(command, "list_commands"):
            ctx = command.make_context(command.name, [], resilient_parsing=True)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*path, name])

    walk(get_command(app), [])
    return paths


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "brownout")
def test_every_help_renders(path):
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
