"""handle_errors: the lab's errors (imported only once a command raised one) still become
one line and exit status 1; an unexpected RuntimeError stays a traceback."""

from __future__ import annotations

import pytest
import typer

from brownout.cli._common import handle_errors
from brownout.cluster.lab import LabError
from brownout.cluster.state import StateError
from brownout.cluster.topology import TopologyError


def raising(error: BaseException):
    @handle_errors
    def command() -> None:
        raise error

    return command


@pytest.mark.parametrize(("error", "code"), [
    (LabError("the cluster in d is not running"), 1),
    (StateError("no cluster in d"), 1),
    (TopologyError("--brokers must be at least 1"), 2),
    (FileNotFoundError(2, "No such file or directory", "x.yaml"), 1),
])
def test_expected_failures_are_one_line(capsys, error, code):
    with pytest.raises(typer.Exit) as exited:
        raising(error)()
    assert exited.value.exit_code == code
    assert capsys.readouterr().err.startswith("Error: ")


def test_an_unexpected_runtime_error_is_not_hidden():
    with pytest.raises(RuntimeError, match="a bug"):
        raising(RuntimeError("a bug"))()
