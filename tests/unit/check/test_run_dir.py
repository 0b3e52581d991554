"""What a run directory's producers allow (check/run_dir.py), from hand-made run.json."""

from __future__ import annotations

import json
from pathlib import Path

from brownout.check.result import DUPLICATE, G1A, Expectations
from brownout.check.run_dir import expectations_for


def _run(tmp_path: Path, commands: list[dict]) -> Path:
    (tmp_path / "run.json").write_text(json.dumps({"commands": commands}))
    return tmp_path


def test_idempotent_producers_allow_no_duplicates(tmp_path: Path) -> None:
    run = _run(tmp_path, [{"command": "produce", "params": {"acks": "all",
                                                            "idempotent": True}}])
    assert expectations_for(run) == Expectations()
    assert DUPLICATE not in expectations_for(run).allowed
    assert not expectations_for(run).allows(G1A)


def test_a_non_idempotent_producer_group_of_a_scenario_allows_duplicates(
        tmp_path: Path) -> None:
    run = _run(tmp_path, [{"command": "scenario", "params": {},
                           "producers": [{"acks": "all", "idempotent": True},
                                         {"acks": "1", "idempotent": False}]}])
    assert DUPLICATE in expectations_for(run).allowed
    # a resent send reported failed may have landed through an earlier attempt
    assert expectations_for(run).allows(G1A)


def test_without_run_json_the_default_expectations_hold(tmp_path: Path) -> None:
    assert expectations_for(tmp_path) == Expectations()
