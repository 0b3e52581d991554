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
from _cli import command, invoke

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

# One interpreter for the whole module, which forks a fresh child per probe: the child
# runs the command (or the import) and reports sys.modules, as JSON, through a pipe.
# The parent loads only what every probe shares and nothing here is about: the standard
# library's json and os, and typer's test runner (typer, rich). Whatever it loads is in
# every child's sys.modules before the command runs, so it could not be caught loading;
# test_nothing_under_test_is_preloaded checks that none of it is heavy, nor brownout's.
PROBE = """
import json, os, sys
from typer.testing import CliRunner

def probe(args):
    if args is None:
        import brownout.cli
    else:
        from brownout.cli import app
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
    return sorted(sys.modules)

if sys.argv[1] == "preloaded":
    print(json.dumps(sorted(sys.modules)), flush=True)
for line in sys.stdin:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            answer = {"modules": probe(json.loads(line))}
        except BaseException as e:
            answer = {"error": f"{type(e).__name__}: {e}"}
        with os.fdopen(write, "w") as out:
            json.dump(answer, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    print(text, flush=True)
"""


class Prober:
    """The forking interpreter: `modules(args)` is every module loaded once a fresh
    `brownout ARGS` (None: `import brownout.cli`) ran, `preloaded` those loaded before."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", PROBE, "preloaded"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        self.preloaded: list[str] = json.loads(self.line())
        # Each probe starts from the same fork, so one command's answer never changes.
        self.answers: dict[str, list[str]] = {}

    def line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the probe exited with {self.process.wait(timeout=120)}"
        return line

    def modules(self, args: list[str] | None) -> list[str]:
        request = json.dumps(args)
        if request not in self.answers:
            assert self.process.stdin is not None
            self.process.stdin.write(request + "\n")
            self.process.stdin.flush()
            answer = json.loads(self.line())
            assert "error" not in answer, answer["error"]
            self.answers[request] = answer["modules"]
        return self.answers[request]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


@pytest.fixture(scope="module")
def prober():
    p = Prober()
    try:
        yield p
    finally:
        p.close()


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_nothing_under_test_is_preloaded(prober):
    """The probes' shared parent must not hold a module a command could wrongly load."""
    assert heavy(prober.preloaded) == []
    assert [m for m in prober.preloaded if m.split(".")[0] == "brownout"] == []


def test_heavy_names_are_real_modules(prober):
    """A misspelt name in HEAVY would make the tests below pass whatever is loaded."""
    full = prober.modules(["scenarios", "--verbose"]) + prober.modules(["report", "--help"])
    import importlib.util

    for name in HEAVY:
        assert name in full or importlib.util.find_spec(name) is not None, name


@pytest.mark.parametrize("args", [None, ["--help"], ["scenarios"]],
                         ids=["import", "help", "scenarios"])
def test_start_up_loads_no_heavy_module(prober, args):
    modules = prober.modules(args)
    assert "brownout.cli" in modules
    assert heavy(modules) == []


def test_the_probe_sees_heavy_modules_when_a_command_loads_them(prober):
    """`scenarios --verbose` validates every built-in: the validator must show up."""
    assert "brownout.scenarios.schema" in heavy(prober.modules(["scenarios", "--verbose"]))


def command_paths() -> list[list[str]]:
    paths: list[list[str]] = []

    def walk(command, path: list[str]) -> None:
        paths.append(path)
        if hasattr(command, "list_commands"):
            ctx = command.make_context(command.name, [], resilient_parsing=True)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*path, name])

    walk(command(), [])
    return paths


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "brownout")
def test_every_help_renders(path):
    result = invoke([*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
