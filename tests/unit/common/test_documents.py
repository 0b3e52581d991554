"""schema_version of the JSON documents the lab writes: written first, absent read as 1,
a newer one refused rather than misread."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brownout.cli import app
from brownout.common.documents import (
    SCHEMA_VERSION,
    VERSIONS,
    DocumentVersionError,
    read_document,
    version_of,
    versioned,
)
from brownout.common.rundir import CHECK_FILE, RUN_FILE, SUMMARY_FILE, VERDICT_FILE
from brownout.scenarios.summary import RunEntry, build_summary, write_summary


def test_every_document_starts_at_version_1() -> None:
    assert set(VERSIONS) == {"verdict.json", "check.json", "summary.json", "sweep.json",
                             "compare.json", "status"}
    assert set(VERSIONS.values()) == {1}


def test_versioned_puts_the_version_first_and_keeps_the_rest() -> None:
    doc = versioned(VERDICT_FILE, {"verdict": "pass", SCHEMA_VERSION: 7, "seed": 3})
    assert list(doc) == [SCHEMA_VERSION, "verdict", "seed"]
    assert doc[SCHEMA_VERSION] == 1


def test_a_document_without_a_version_reads_as_version_1() -> None:
    assert version_of({"verdict": "pass"}, VERDICT_FILE) == 1
    assert version_of({SCHEMA_VERSION: 1}, CHECK_FILE) == 1


@pytest.mark.parametrize(("value", "words"), [
    (2, "verdict.json has schema_version 2; this Brownout reads up to 1"),
    ("1", "must be a whole number from 1, got '1'"),
    (True, "must be a whole number from 1, got True"),
    (0, "must be a whole number from 1, got 0"),
])
def test_a_version_it_cannot_read_is_refused(value: object, words: str) -> None:
    with pytest.raises(DocumentVersionError) as e:
        version_of({SCHEMA_VERSION: value}, VERDICT_FILE, "run/verdict.json")
    assert str(e.value).startswith("run/verdict.json: ") and words in str(e.value)


def test_read_document(tmp_path: Path) -> None:
    path = tmp_path / VERDICT_FILE
    assert read_document(path, VERDICT_FILE) is None  # a run that stopped before it
    path.write_text('{"verdict": "fail"}')
    assert read_document(path, VERDICT_FILE) == {"verdict": "fail"}
    path.write_text("[1]")
    assert read_document(path, VERDICT_FILE) is None
    path.write_text('{"schema_version": 9}')
    with pytest.raises(DocumentVersionError, match="schema_version 9"):
        read_document(path, VERDICT_FILE)


def _old_run(directory: Path, word: str) -> Path:
    """A run directory as Brownout wrote it before schema versions."""
    directory.mkdir(parents=True)
    (directory / VERDICT_FILE).write_text(json.dumps({
        "verdict": word, "error": None, "expectations": [
            {"name": "acked_writes_lost[acks-all]", "observed": 0, "passed": word == "pass"}]}))
    (directory / CHECK_FILE).write_text(json.dumps({"results": {
        "writes": {"numbers": {"lost": 0, "acknowledged": 10, "by_acks": {}}}}}))
    return directory


def test_a_summary_of_older_runs_is_written_with_its_version(tmp_path: Path) -> None:
    entries = [RunEntry.load("run-001", _old_run(tmp_path / "run-001", "pass"), 1),
               RunEntry.load("run-002", _old_run(tmp_path / "run-002", "fail"), 2)]
    summary = build_summary("s", entries, seed=0, jobs=1)
    assert summary["verdicts"] == {"pass": 1, "fail": 1, "unknown": 0}
    written = json.loads(write_summary(tmp_path, summary).read_text())
    assert (tmp_path / SUMMARY_FILE).exists()
    assert next(iter(written)) == SCHEMA_VERSION and written[SCHEMA_VERSION] == 1
    assert {k: v for k, v in written.items() if k != SCHEMA_VERSION} == summary


def test_report_refuses_a_newer_verdict(tmp_path: Path) -> None:
    run_dir = _old_run(tmp_path / "run", "pass")
    (run_dir / RUN_FILE).write_text("{}")
    (run_dir / VERDICT_FILE).write_text('{"schema_version": 2, "verdict": "pass"}')
    result = CliRunner().invoke(app, ["report", str(run_dir)])
    assert result.exit_code == 2
    assert "verdict.json has schema_version 2; this Brownout reads up to 1" in result.output
