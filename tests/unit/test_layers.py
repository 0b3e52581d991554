"""Imports point down (docs/architecture.md).

The layers are the contracts in pyproject.toml's [tool.importlinter]: each package
imports only the packages below it (so no two packages form a cycle), and the lab
imports none of the node's servers or state machines. import-linter checks them over
every import it can see, including those inside functions and under TYPE_CHECKING.

It cannot see a package loaded by name at run time, nor tell an import guarded by
`except ImportError` ("not installed yet") from any other: between the packages of one
distribution neither has a reason to exist, so the scan below refuses both.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "brownout"
MODULES = sorted(SRC.rglob("*.py"))
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}
LOADERS = {"import_module", "__import__"}


def test_every_package_imports_only_the_layers_below_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    # lint_imports sets up its logging with dictConfig, which disables every logger that
    # exists already: a later test in this process would see nothing from the node's
    # loggers (caplog records no "kafka.image.loader.MetadataLoader" error). Undo that.
    enabled = [logger for logger in logging.root.manager.loggerDict.values()
               if isinstance(logger, logging.Logger) and not logger.disabled]
    try:
        code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                            no_logo=True)
    finally:
        for logger in enabled:
            logger.disabled = False
    assert code == 0, capsys.readouterr().out


def _is_ours(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "brownout"
    return any(alias.name.split(".")[0] == "brownout" for alias in node.names)


def _caught(handler: ast.ExceptHandler) -> set[str]:
    kinds = handler.type
    if kinds is None:
        return set()
    elts = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return {e.id for e in elts if isinstance(e, ast.Name)}


def hidden_imports(source: str) -> list[str]:
    """What in `source` loads one of Brownout's modules past a static import: a module
    named by a string (`importlib.import_module("brownout.x")`, `__import__(...)`), or
    an import of ours inside a `try` that catches ImportError."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0] if node.args else None
            if (name in LOADERS and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)
                    and first.value.startswith(("brownout", ".."))):
                found.append(f"line {node.lineno}: {name}({first.value!r})")
        elif isinstance(node, ast.Try) and any(
                _caught(h) & IMPORT_ERRORS for h in node.handlers):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, ast.Import | ast.ImportFrom) and _is_ours(sub):
                        found.append(f"line {sub.lineno}: an import of ours guarded by "
                                     "except ImportError")
    return found


def test_no_module_loads_another_of_ours_behind_the_contracts() -> None:
    found = {str(p.relative_to(SRC)): hidden_imports(p.read_text()) for p in MODULES}
    assert {path: what for path, what in found.items() if what} == {}


def test_the_scan_finds_a_package_loaded_by_name() -> None:
    source = 'import importlib\nmodule = importlib.import_module("brownout.check")\n'
    assert hidden_imports(source) == ["line 2: import_module('brownout.check')"]
    assert hidden_imports('m = __import__("brownout.report")\n') == \
        ["line 1: __import__('brownout.report')"]


def test_the_scan_finds_an_import_guarded_as_not_installed() -> None:
    source = ("try:\n    import brownout.report as r\nexcept ImportError:\n    r = None\n"
              "try:\n    from ..check import check_all\n"
              "except (OSError, ModuleNotFoundError):\n    pass\n")
    assert len(hidden_imports(source)) == 2


def test_the_scan_leaves_other_packages_and_lazy_names_alone() -> None:
    source = ("try:\n    from confluent_kafka.admin import AdminClient\n"
              "except ImportError:\n    raise\n"
              "import importlib\n"
              "def __getattr__(name):\n"
              "    return importlib.import_module(f'.{name}', __name__)\n"
              "try:\n    from .history import read_history\nexcept OSError:\n    pass\n")
    assert hidden_imports(source) == []
