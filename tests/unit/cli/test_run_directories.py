"""The commands that write a run, a sweep, a comparison or a pipeline's output refuse a
directory that cannot be made before anything runs: one line naming the option, exit
status 2, and nothing written. The commands that read a run say so of a path that is
not one, a file included."""

from __future__ import annotations

from pathlib import Path

import pytest
from _cli import invoke

from brownout.cli._common import check_output_directory

COMMANDS = {
    "run": ["run", "minority-outage"],
    "run --repeat": ["run", "minority-outage", "--repeat", "2"],
    "sweep": ["sweep", "rolling-restart-sweep"],
    "demo": ["demo", "--no-kafka"],
    "pipeline run": ["pipeline", "run", "--topics", "clicks", "--bootstrap", "127.0.0.1:9"],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("below", [False, True], ids=["the file", "below the file"])
def test_a_file_in_the_way_is_a_usage_error(tmp_path: Path, command: str,
                                            below: bool) -> None:
    file = tmp_path / "taken"
    file.write_text("kept\n")
    out = file / "run" if below else file
    result = invoke([*COMMANDS[command], "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert f"--out {out}: {file} is a file, not a directory" in result.output
    assert "Traceback" not in result.output
    assert file.read_text() == "kept\n"
    assert sorted(tmp_path.iterdir()) == [file]


def test_a_directory_that_exists_or_can_be_made_is_not_created_by_the_check(
        tmp_path: Path) -> None:
    assert check_output_directory(tmp_path) == tmp_path
    deep = tmp_path / "a" / "b"
    assert check_output_directory(deep, "--dir") == deep
    assert list(tmp_path.iterdir()) == []  # nor is the folder it tried left behind


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_that_refuses_folders_is_named(command: str) -> None:
    # /proc takes no folder whatever its mode says, for root as for anyone
    out = Path("/proc/brownout-run")
    result = invoke([*COMMANDS[command], "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert f"--out {out}: /proc cannot be written (" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", ["check", "report"])
def test_a_file_is_not_a_run_directory(tmp_path: Path, command: str) -> None:
    file = tmp_path / "taken"
    file.write_text("kept\n")
    result = invoke([command, str(file)], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert f"{file} is not a run directory (no run.json)" in result.output
