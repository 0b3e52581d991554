"""A file a command reads as text (a scenario, a nodes file, a properties file, a JSON or
CSV plan, payloads) that is not UTF-8 text is refused in one line that names the file
and the first byte that is not, as an unreadable one is: never a traceback."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from _cli import invoke

from brownout.common.text_file import read_text

BOOTSTRAP = ["--bootstrap-server", "127.0.0.1:9"]  # never reached: the file is read first

# each command, with {file} where the file goes, and its exit status for a file it
# cannot read
COMMANDS = {
    "run FILE": (["run", "{file}", "--validate"], 2),
    "run --nodes": (["run", "minority-outage", "--nodes", "{file}", *BOOTSTRAP], 2),
    "producer-perf-test --command-config": (
        ["producer-perf-test", "--topic", "t", "--num-records", "1", "--record-size", "1",
         "--throughput", "-1", "--command-config", "{file}", *BOOTSTRAP], 1),
    "producer-perf-test --payload-file": (
        ["producer-perf-test", "--topic", "t", "--num-records", "1", "--throughput", "-1",
         "--payload-file", "{file}", *BOOTSTRAP], 1),
    "consumer-perf-test --command-config": (
        ["consumer-perf-test", "--topic", "t", "--num-records", "1", "--command-config",
         "{file}", *BOOTSTRAP], 1),
    "reassign-partitions": (
        ["reassign-partitions", "--execute", "--reassignment-json-file", "{file}",
         *BOOTSTRAP], 1),
    "consumer-groups --from-file": (
        ["consumer-groups", "--reset-offsets", "--group", "g", "--from-file", "{file}",
         "--execute", *BOOTSTRAP], 2),
    "storage format": (["storage", "format", "--config", "{file}", "--cluster-id", "x"], 1),
}


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    path = tmp_path / "binary"
    path.write_bytes(b"a=1\n\xff\xfe\n")
    return path


@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_that_is_not_text_is_refused_in_one_line(binary: Path, command: str) -> None:
    args, code = COMMANDS[command]
    result = invoke([a.format(file=binary) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == code, result.output
    assert "not UTF-8 text (byte 4: invalid start byte)" in result.output, result.output
    assert str(binary) in result.output
    assert "Traceback" not in result.output


def test_read_text_fails_as_an_unreadable_file_does(binary: Path, tmp_path: Path) -> None:
    (tmp_path / "text").write_text("ä=1\n", encoding="utf-8")
    assert read_text(tmp_path / "text") == "ä=1\n"
    with pytest.raises(OSError) as failed:
        read_text(binary)
    assert failed.value.errno == errno.EILSEQ
    assert failed.value.filename == str(binary)
    assert failed.value.strerror == "not UTF-8 text (byte 4: invalid start byte)"
