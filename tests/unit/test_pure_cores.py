"""The sans-I/O cores must not reach for sockets, clocks, files or global randomness
(STYLE.md): they are driven by inputs and time passed in, which is what lets tests and
the simulator drive them deterministically."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "brownout"
PURE = [
    *sorted((SRC / "controller").glob("*.py")),
    *sorted((SRC / "raft").glob("*.py")),
    *sorted((SRC / "group").glob("*.py")),
    *sorted((SRC / "zk").glob("*.py")),
    SRC / "broker" / "replication.py",
    SRC / "broker" / "fetch_session.py",
    SRC / "broker" / "fetch_session_handler.py",
    SRC / "security" / "jaas.py",
    SRC / "security" / "mechanisms.py",
    SRC / "security" / "sasl.py",
    SRC / "scenarios" / "compare.py",
    SRC / "report" / "compare_text.py",
    SRC / "common" / "topic.py",
    SRC / "cluster" / "console_reader.py",
    SRC / "cluster" / "console_formatter.py",
    SRC / "cluster" / "console_options.py",
    SRC / "cluster" / "perf_options.py",
    SRC / "cluster" / "perf_stats.py",
    SRC / "cluster" / "throttler.py",
]
FORBIDDEN_MODULES = {"asyncio", "socket", "selectors", "time", "threading", "subprocess", "os"}
FORBIDDEN_CALLS = {"open"}


def imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", PURE, ids=lambda p: str(p.relative_to(SRC)))
def test_pure_core_does_no_io(path):
    tree = ast.parse(path.read_text())
    assert not imported_modules(tree) & FORBIDDEN_MODULES
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, f"{path.name} calls {node.func.id}()"
        # random.Random(...) is fine (injected, seeded); module-level random.x() is not.
        is_attr = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        if is_attr and node.value.id == "random":
            assert node.attr == "Random", f"{path.name} uses global random.{node.attr}"
